//! The harness service's store ([`ServiceStore`]): accounts, agents and events, JSON read back
//! exactly, and the rows every rule of it starts from (the rules of async results and their
//! groups are in [`async_results`](super::async_results)). Rows that are not about expiry
//! expire at [`FAR`], after any time the purge rule purges at before its last step.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::Message;

use crate::store::now_millis;
use crate::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, AsyncStatus, Batch, DispatchGroup,
    EventEnd, EventRecord, EventStatus, Holder, NewThread, ServiceStore, StoreError, ThreadStatus,
    ThreadWrite,
};

/// An expiry far in the future (the year 2096).
pub(super) const FAR: u64 = 4_000_000_000_000;

/// Account `name`, with a hash of every kind of byte (0 and 255 among them).
pub(super) fn account(name: &str, tag: u8) -> Account {
    let mut secret_hash = [0u8; 32];
    for (i, byte) in secret_hash.iter_mut().enumerate() {
        *byte = (i as u8).wrapping_mul(37).wrapping_add(tag);
    }
    (secret_hash[0], secret_hash[31]) = (0, 255);
    Account {
        name: name.into(),
        secret_hash,
        created_at: 1_700_000_000_000 + u64::from(tag),
    }
}

pub(super) fn agent(account: &str, id: &str, config: &[u8], active: bool) -> AgentRecord {
    AgentRecord {
        account: account.into(),
        id: id.into(),
        config: config.to_vec(),
        active,
        updated_at: 1_700_000_000_500,
    }
}

pub(super) fn event(account: &str, agent_id: &str, event_id: &str) -> EventRecord {
    EventRecord {
        account: account.into(),
        agent_id: agent_id.into(),
        event_id: event_id.into(),
        conversation_key: "conv-1".into(),
        thread_id: format!("thread-{event_id}"),
        status: EventStatus::Processing,
        detail: json!({}),
        created_at: 1_000,
        updated_at: 1_000,
        expires_at: FAR,
    }
}

/// A `processing` call of `parent`, created at 1 000.
pub(super) fn call(result_id: &str, parent: &str) -> AsyncResult {
    AsyncResult {
        result_id: result_id.into(),
        account: "acct-calls".into(),
        agent_id: "agent-1".into(),
        parent_event_id: parent.into(),
        conversation_key: "conv-1".into(),
        tool_name: "fetch".into(),
        tool_call_id: format!("call-{result_id}"),
        input: json!({"url": "https://example.test/a?b=c"}),
        status: AsyncStatus::Processing,
        response: None,
        error: None,
        external: false,
        created_at: 1_000,
        updated_at: 1_000,
        expires_at: FAR,
    }
}

/// JSON of every kind: unicode, escapes, nesting, the extremes of integers, fractions.
pub(super) fn rich_json() -> Value {
    json!({
        "text": "ünïcode ✓ — 日本語 🦀",
        "escapes": "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7}",
        "nested": {
            "list": [1, -2, 3.5, null, true, false, "", [], {}],
            "deep": {"deeper": {"deepest": [{"k": "v"}, [[["x"]]]]}}
        },
        "numbers": {"big": u64::MAX, "small": i64::MIN, "zero": 0, "half": 0.5, "neg": -0.25},
        "empty": {},
        "null": null
    })
}

pub(super) async fn group_of<S: ServiceStore>(store: &S, parent: &str) -> Option<DispatchGroup> {
    store.group(parent).await.unwrap()
}

pub(super) fn ids(rows: &[AsyncResult]) -> Vec<&str> {
    rows.iter().map(|r| r.result_id.as_str()).collect()
}

pub(super) async fn accounts<S: ServiceStore>(store: &S) {
    assert_eq!(store.accounts().await.unwrap(), [], "no accounts at first");
    assert_eq!(
        store.account("acct-a").await.unwrap(),
        None,
        "a missing account is None"
    );
    let (a, b, ten) = (
        account("acct-a", 1),
        account("acct-b", 2),
        account("acct-10", 3),
    );
    for made in [&b, &a, &ten] {
        store.create_account(made).await.unwrap();
    }
    assert_eq!(
        store.account("acct-a").await.unwrap().as_ref(),
        Some(&a),
        "an account reads back exactly, its hash byte for byte"
    );
    let taken = Account {
        secret_hash: [7; 32],
        created_at: 5,
        ..a.clone()
    };
    assert!(
        matches!(
            store.create_account(&taken).await,
            Err(StoreError::Exists(name)) if name == "acct-a"
        ),
        "creating a taken name is Exists naming it"
    );
    assert_eq!(
        store.account("acct-a").await.unwrap(),
        Some(a.clone()),
        "a refused account leaves the first as it was"
    );
    assert_eq!(
        store.accounts().await.unwrap(),
        [ten, a, b],
        "every account, by name (in byte order)"
    );
}

pub(super) async fn agents<S: ServiceStore>(store: &S) {
    let stray = agent("acct-none", "agent-a", b"{}", true);
    assert!(
        matches!(
            store.put_agent(&stray).await,
            Err(StoreError::NotFound(name)) if name == "acct-none"
        ),
        "an agent of a missing account is NotFound naming the account"
    );
    assert_eq!(store.agent("acct-none", "agent-a").await.unwrap(), None);

    for name in ["acct-agents", "acct-other"] {
        store.create_account(&account(name, 9)).await.unwrap();
    }
    let config = [0u8, 1, 255, b'{', 0x80];
    let (b, upper, a) = (
        agent("acct-agents", "agent-b", &config, true),
        agent("acct-agents", "Agent-C", b"c", false),
        agent("acct-agents", "agent-a", b"a", true),
    );
    for put in [&b, &upper, &a] {
        store.put_agent(put).await.unwrap();
    }
    assert_eq!(
        store
            .agent("acct-agents", "agent-b")
            .await
            .unwrap()
            .as_ref(),
        Some(&b),
        "an agent reads back exactly, its config byte for byte"
    );
    assert_eq!(
        store.agents("acct-agents").await.unwrap(),
        [upper.clone(), a.clone(), b.clone()],
        "an account's agents, by id (in byte order: upper case first)"
    );

    let replaced = AgentRecord {
        config: b"v2".to_vec(),
        active: false,
        updated_at: 1_700_000_009_000,
        ..a.clone()
    };
    store.put_agent(&replaced).await.unwrap();
    assert_eq!(
        store
            .agent("acct-agents", "agent-a")
            .await
            .unwrap()
            .as_ref(),
        Some(&replaced),
        "a second put replaces the agent"
    );
    assert_eq!(store.agents("acct-agents").await.unwrap().len(), 3);

    // Scoped by account: another account's name finds nothing, and its ids are its own.
    assert_eq!(
        store.agent("acct-other", "agent-a").await.unwrap(),
        None,
        "another account's agent is not found"
    );
    assert_eq!(store.agents("acct-other").await.unwrap(), []);
    assert!(
        !store.delete_agent("acct-other", "agent-a").await.unwrap(),
        "another account cannot delete an agent"
    );
    let theirs = agent("acct-other", "agent-a", b"theirs", true);
    store.put_agent(&theirs).await.unwrap();
    assert_eq!(
        store.agent("acct-agents", "agent-a").await.unwrap(),
        Some(replaced),
        "an agent of another account with the same id is another agent"
    );
    assert_eq!(store.agents("acct-other").await.unwrap(), [theirs]);

    assert!(store.delete_agent("acct-agents", "agent-b").await.unwrap());
    assert!(
        !store.delete_agent("acct-agents", "agent-b").await.unwrap(),
        "deleting a missing agent is false"
    );
    assert_eq!(store.agent("acct-agents", "agent-b").await.unwrap(), None);
    assert_eq!(store.agents("acct-agents").await.unwrap().len(), 2);
}

pub(super) async fn events<S: ServiceStore>(store: &S) {
    let first = EventRecord {
        detail: json!({"text": "first"}),
        ..event("acct-ev", "agent-1", "ev-1")
    };
    assert!(store.insert_event(&first).await.unwrap(), "a new event");
    let again = EventRecord {
        thread_id: "thread-other".into(),
        status: EventStatus::Completed,
        detail: json!({"text": "second"}),
        ..first.clone()
    };
    assert!(
        !store.insert_event(&again).await.unwrap(),
        "a duplicate event id is refused"
    );
    let read = |account, agent, id| async move { store.event(account, agent, id).await.unwrap() };
    assert_eq!(
        read("acct-ev", "agent-1", "ev-1").await.as_ref(),
        Some(&first),
        "the first event is kept exactly"
    );

    // The id is the agent's: the same id of another agent or account is another event.
    let other_agent = EventRecord {
        detail: json!(2),
        ..event("acct-ev", "agent-2", "ev-1")
    };
    let other_account = EventRecord {
        detail: json!(3),
        ..event("acct-ev-2", "agent-1", "ev-1")
    };
    assert!(store.insert_event(&other_agent).await.unwrap());
    assert!(store.insert_event(&other_account).await.unwrap());
    assert_eq!(
        read("acct-ev-2", "agent-1", "ev-1").await,
        Some(other_account)
    );
    assert_eq!(
        read("acct-nobody", "agent-1", "ev-1").await,
        None,
        "another account's event is not found"
    );
    assert_eq!(read("acct-ev", "agent-9", "ev-1").await, None);
    assert_eq!(read("acct-ev", "agent-1", "ev-9").await, None);

    let pending = json!({"pending": [{"approvalId": "apr_1", "toolName": "deploy"}]});
    let before = now_millis();
    store
        .update_event(
            "acct-ev",
            "agent-1",
            "ev-1",
            EventStatus::AwaitingApproval,
            &pending,
        )
        .await
        .unwrap();
    let updated = read("acct-ev", "agent-1", "ev-1").await.unwrap();
    assert!(
        updated.updated_at >= before,
        "an update sets updated_at to now ({} < {before})",
        updated.updated_at
    );
    assert_eq!(
        updated,
        EventRecord {
            status: EventStatus::AwaitingApproval,
            detail: pending.clone(),
            updated_at: updated.updated_at,
            ..first.clone()
        },
        "an update sets the status and detail, and keeps the rest"
    );
    assert_eq!(
        read("acct-ev", "agent-2", "ev-1").await,
        Some(other_agent),
        "an update changes its event only"
    );
    for (account, agent, id) in [
        ("acct-ev", "agent-1", "ev-missing"),
        ("acct-nobody", "agent-1", "ev-1"),
    ] {
        assert!(
            matches!(
                store
                    .update_event(account, agent, id, EventStatus::Failed, &json!(null))
                    .await,
                Err(StoreError::NotFound(missing)) if missing == id
            ),
            "an update of a missing event (or another account's) is NotFound naming the event"
        );
    }
    assert_eq!(
        read("acct-ev", "agent-1", "ev-1").await.unwrap().detail,
        pending,
        "a refused update changes nothing"
    );

    let statuses = [
        EventStatus::Processing,
        EventStatus::AwaitingApproval,
        EventStatus::Completed,
        EventStatus::Failed,
    ];
    for status in statuses {
        let id = format!("ev-{}", status.as_str());
        let record = EventRecord {
            status,
            ..event("acct-ev", "agent-3", &id)
        };
        store.insert_event(&record).await.unwrap();
        assert_eq!(
            store.event("acct-ev", "agent-3", &id).await.unwrap(),
            Some(record),
            "every event status reads back"
        );
    }
}

/// A thread's events still `processing`: its own only (of any account and agent), oldest
/// first, those created at the same time by event id in byte order; an event that settles
/// drops out, one that goes back to `processing` comes back.
pub(super) async fn processing_events<S: ServiceStore>(store: &S) {
    use EventStatus::{AwaitingApproval, Completed, Failed, Processing};
    let (thread, other) = ("thread-takeover", "thread-takeover-other");
    let on = |thread: &str, agent: &str, id: &str, created_at, status| EventRecord {
        thread_id: thread.into(),
        status,
        detail: json!({"event": id}),
        created_at,
        updated_at: created_at,
        ..event("acct-takeover", agent, id)
    };
    // Inserted out of order; 999 is before 10 000 as numbers, after it as text; at 2 000, in
    // byte order "ev-B" < "ev-a" < "ev-b" (a locale's order puts "ev-B" between the others).
    let rows = [
        on(thread, "agent-1", "ev-late", 10_000, Processing),
        on(thread, "agent-1", "ev-b", 2_000, Processing),
        on(thread, "agent-2", "ev-B", 2_000, Processing),
        on(thread, "agent-1", "ev-waiting", 500, AwaitingApproval),
        on(thread, "agent-1", "ev-a", 2_000, Processing),
        on(thread, "agent-1", "ev-done", 500, Completed),
        on(thread, "agent-2", "ev-first", 999, Processing),
        on(thread, "agent-1", "ev-failed", 500, Failed),
        on(other, "agent-1", "ev-other", 1, Processing),
        on(other, "agent-3", "ev-a", 1_500, Processing),
        on(other, "agent-3", "ev-other-done", 1_500, Completed),
    ];
    for row in &rows {
        assert!(store.insert_event(row).await.unwrap());
    }
    let row = |thread: &str, id: &str| {
        rows.iter()
            .find(|r| r.thread_id == thread && r.event_id == id)
            .unwrap()
            .clone()
    };
    let listed = |thread| async move { store.processing_events(thread).await.unwrap() };
    assert_eq!(
        listed(thread).await,
        ["ev-first", "ev-B", "ev-a", "ev-b", "ev-late"].map(|id| row(thread, id)),
        "a thread's processing events, oldest first, then by event id in byte order, each \
         read back exactly"
    );
    assert_eq!(
        listed(other).await,
        ["ev-other", "ev-a"].map(|id| row(other, id)),
        "another thread's processing events are its own"
    );
    assert_eq!(
        listed("thread-takeover-unknown").await,
        [],
        "an unknown thread has none"
    );

    let done = json!({"text": "done"});
    store
        .update_event("acct-takeover", "agent-1", "ev-a", Completed, &done)
        .await
        .unwrap();
    let resumed = json!({"resumed": true});
    store
        .update_event(
            "acct-takeover",
            "agent-1",
            "ev-waiting",
            Processing,
            &resumed,
        )
        .await
        .unwrap();
    let listed_now = listed(thread).await;
    let ids: Vec<&str> = listed_now.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(
        ids,
        ["ev-waiting", "ev-first", "ev-B", "ev-b", "ev-late"],
        "an event updated to completed drops out; one back to processing comes back"
    );
    assert_eq!(
        (listed_now[0].status, &listed_now[0].detail),
        (Processing, &resumed),
        "an event comes back as updated"
    );
    assert_eq!(
        listed(other).await,
        ["ev-other", "ev-a"].map(|id| row(other, id)),
        "an update in one thread leaves another's events (of the same event id) as they were"
    );
}

/// JSON reads back exactly wherever it is stored; `None` and `Some(Value::Null)` as a response
/// stay apart.
pub(super) async fn json_round_trip<S: ServiceStore>(store: &S) {
    let details = [
        rich_json(),
        json!(null),
        json!("just text"),
        json!([1, [2, [3]]]),
        json!(-42),
    ];
    for (i, detail) in details.into_iter().enumerate() {
        let record = EventRecord {
            detail,
            ..event("acct-json", "agent-1", &format!("ev-json-{i}"))
        };
        store.insert_event(&record).await.unwrap();
        let read = store.event("acct-json", "agent-1", &record.event_id).await;
        assert_eq!(
            read.unwrap(),
            Some(record),
            "an event's detail reads back exactly"
        );
    }
    store
        .update_event(
            "acct-json",
            "agent-1",
            "ev-json-1",
            EventStatus::Completed,
            &rich_json(),
        )
        .await
        .unwrap();
    let read = store.event("acct-json", "agent-1", "ev-json-1").await;
    assert_eq!(read.unwrap().unwrap().detail, rich_json());

    let responses = [None, Some(Value::Null), Some(rich_json()), Some(json!(""))];
    for (i, response) in responses.into_iter().enumerate() {
        let row = AsyncResult {
            input: rich_json(),
            status: AsyncStatus::Completed,
            response,
            ..call(&format!("async_tool_json_{i}"), "parent-json")
        };
        store.insert_async_result(&row, false).await.unwrap();
        assert_eq!(
            store.async_result(&row.result_id).await.unwrap(),
            Some(row),
            "a call's input and response read back exactly (None and Some(null) apart)"
        );
    }

    let settlements = [
        (AsyncSettlement::Completed(None), None),
        (
            AsyncSettlement::Completed(Some(json!(null))),
            Some(json!(null)),
        ),
        (
            AsyncSettlement::Completed(Some(rich_json())),
            Some(rich_json()),
        ),
    ];
    for (i, (settlement, response)) in settlements.into_iter().enumerate() {
        let row = call(&format!("async_tool_json_settled_{i}"), "parent-json");
        store.insert_async_result(&row, false).await.unwrap();
        assert!(
            store
                .settle_async_result(&row.result_id, &settlement)
                .await
                .unwrap()
        );
        let read = store.async_result(&row.result_id).await.unwrap().unwrap();
        assert_eq!(
            read.response, response,
            "a settlement's response reads back exactly (None and Some(null) apart)"
        );
    }
}

/// An event and its run's new thread, together or not at all.
pub(super) async fn start_event<S: ServiceStore>(store: &S) {
    let holder = Holder::current();
    let prompt = [Message::user("Hi")];
    let first = event("acct-start", "agent-1", "ev-start-1");
    let new = || NewThread::new(&first.thread_id).with_tag("conversation");
    let started = store.start_event(&first, new(), &prompt, "run-1", &holder);
    assert_eq!(
        started.await.unwrap(),
        Some(2),
        "both written: the thread's version"
    );
    assert!(
        store
            .event("acct-start", "agent-1", "ev-start-1")
            .await
            .unwrap()
            .is_some()
    );
    let thread = store.thread(&first.thread_id).await.unwrap().unwrap();
    assert_eq!(
        (thread.version, thread.status, thread.run_id.as_deref()),
        (2, ThreadStatus::Running, Some("run-1"))
    );
    assert_eq!(thread.holder.as_ref(), Some(&holder));
    assert_eq!(thread.tags, ["conversation"]);
    assert_eq!(store.messages(&first.thread_id).await.unwrap(), prompt);
    // The same event again, on a thread that does not exist: nothing is written.
    let again = EventRecord {
        thread_id: "thread-start-other".into(),
        ..first.clone()
    };
    let duplicate = store.start_event(
        &again,
        NewThread::new("thread-start-other"),
        &prompt,
        "run-2",
        &holder,
    );
    assert_eq!(duplicate.await.unwrap(), None, "a duplicate event");
    assert!(
        store.thread("thread-start-other").await.unwrap().is_none(),
        "a duplicate event starts no thread"
    );
    // A new event on the thread that exists: neither is written.
    let second = EventRecord {
        thread_id: first.thread_id.clone(),
        ..event("acct-start", "agent-1", "ev-start-2")
    };
    let taken = store
        .start_event(&second, new(), &prompt, "run-3", &holder)
        .await;
    assert!(matches!(taken, Err(StoreError::Exists(_))), "{taken:?}");
    assert!(
        store
            .event("acct-start", "agent-1", "ev-start-2")
            .await
            .unwrap()
            .is_none(),
        "an event whose thread could not start is not kept"
    );
    let thread = store.thread(&first.thread_id).await.unwrap().unwrap();
    assert_eq!(
        (thread.version, thread.run_id.as_deref()),
        (2, Some("run-1"))
    );
}

/// An event settled in a batch with its run's last save: both written, or (the event missing)
/// neither.
pub(super) async fn settle_event_in_batch<S: ServiceStore>(store: &S) {
    let holder = Holder::current();
    let started = event("acct-end", "agent-1", "ev-end-1");
    let prompt = [Message::user("Hi")];
    let thread = NewThread::new(&started.thread_id);
    let version = store
        .start_event(&started, thread, &prompt, "run-1", &holder)
        .await
        .unwrap()
        .unwrap();
    let answer = [Message::assistant("Hello.")];
    let save = ThreadWrite::new(&started.thread_id, version, 1, &answer, ThreadStatus::Idle);
    let mut end = EventEnd {
        account: "acct-end".into(),
        agent_id: "agent-1".into(),
        event_id: "ev-end-missing".into(),
        status: EventStatus::Completed,
        detail: json!({"text": "Hello."}),
    };
    // No such event: nothing of the batch is written.
    let refused = store
        .commit(Batch::new().write(save).settle_event(&end))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::NotFound(id)) if id == "ev-end-missing"),
        "{refused:?}"
    );
    let stored = store.thread(&started.thread_id).await.unwrap().unwrap();
    assert_eq!(
        (stored.version, stored.status),
        (version, ThreadStatus::Running)
    );
    assert_eq!(store.messages(&started.thread_id).await.unwrap(), prompt);
    // The event there: the thread's save and the event's end, together.
    end.event_id = "ev-end-1".into();
    let committed = store
        .commit(Batch::new().write(save).settle_event(&end))
        .await
        .unwrap();
    assert_eq!(committed.version, Some(version + 1));
    let settled = store
        .event("acct-end", "agent-1", "ev-end-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (settled.status, settled.detail),
        (EventStatus::Completed, json!({"text": "Hello."}))
    );
    assert!(settled.updated_at >= now_millis() - 60_000);
    assert_eq!(
        store.messages(&started.thread_id).await.unwrap(),
        [prompt[0].clone(), answer[0].clone()]
    );
}

/// Of racing inserts of one event exactly one is new, and its detail is the one kept.
pub(super) async fn concurrent_event_inserts<S: ServiceStore>(store: Arc<S>) {
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let record = EventRecord {
                detail: json!({"racer": i}),
                ..event("acct-race", "agent-1", "ev-race")
            };
            tokio::spawn(async move { (i, store.insert_event(&record).await) })
        })
        .collect();
    let mut winners = Vec::new();
    for racer in racers {
        let (i, inserted) = racer.await.unwrap();
        if inserted.unwrap() {
            winners.push(i);
        }
    }
    assert_eq!(winners.len(), 1, "of racing inserts of one event one wins");
    let kept = store.event("acct-race", "agent-1", "ev-race").await;
    assert_eq!(
        kept.unwrap().unwrap().detail,
        json!({"racer": winners[0]}),
        "the winner's event is the one kept"
    );
}

/// Wake-ups: a subscriber hears [`ServiceStore::wake_replicas`] within seconds (on PostgreSQL
/// once its listening connection is up, which the first wake-up tells), every subscriber
/// does, and one subscribed later hears only what comes after.
pub(super) async fn wakes<S: ServiceStore>(store: &S) {
    let heard = |mut rx: tokio::sync::broadcast::Receiver<()>| async move {
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv()).await;
        assert!(got.is_ok(), "a wake-up is heard within 10 s");
        rx
    };
    let drained = |mut rx: tokio::sync::broadcast::Receiver<()>| {
        while rx.try_recv().is_ok() {}
        rx
    };
    let first = store.wakes();
    store.wake_replicas().await.unwrap();
    let first = drained(heard(first).await);
    let second = store.wakes();
    store.wake_replicas().await.unwrap();
    let (first, second) = (heard(first).await, heard(second).await);
    drop((first, second));
    let mut late = store.wakes();
    assert!(
        late.try_recv().is_err(),
        "nothing from before it subscribed"
    );
}
