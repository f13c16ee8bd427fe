//! The conformance suite every backend passes: `conformance::check(store).await` panics,
//! naming the rule, on the first thing the backend gets wrong; `conformance::check_service`
//! does the same for the [`ServiceStore`] a backend also is.
//!
//! ```
//! use std::sync::Arc;
//! use toolsmith_store::{MemoryStore, conformance};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let store = Arc::new(MemoryStore::new());
//! conformance::check(store.clone()).await;
//! conformance::check_service(store).await;
//! # });
//! ```

mod async_results;
mod batch;
mod cache;
mod holder;
mod journal;
mod service;

use std::sync::Arc;

use serde_json::json;
use toolsmith_core::{
    InputTokens, Message, MessageMeta, ModelOutput, NestedRun, OutputTokens, Part, Pause,
    PauseKind, Role, ToolApprovalRequest, ToolCallPart, ToolResultPart, UnifiedFinishReason, Usage,
};

use crate::{
    Batch, Claim, Holder, NewThread, ServiceStore, Store, StoreError, StoredValue, ThreadQuery,
    ThreadStatus, ThreadWrite,
};

/// Runs every rule against `store`, which must be empty: threads, messages, claims and holders,
/// the journal and the ledger, batches, variables, credentials and the result cache
/// ([`CacheStore`](crate::CacheStore)).
pub async fn check<S: Store>(store: Arc<S>) {
    threads(&*store).await;
    messages_round_trip(&*store).await;
    conditional_writes(&*store).await;
    run_claims(store.clone()).await;
    holder::holders(&*store).await;
    holder::releases(&*store).await;
    holder::starts(&*store).await;
    queries(&*store).await;
    journal::journal(&*store).await;
    journal::ledger(&*store).await;
    journal::combined_journal_and_ledger(&*store).await;
    journal::settle_and_write(&*store).await;
    journal::write_and_intend(&*store).await;
    journal::record_ended(&*store).await;
    batch::mixed_batches(&*store).await;
    batch::all_or_nothing(&*store).await;
    variables(&*store).await;
    credentials(&*store).await;
    concurrent_writers(store.clone()).await;
    concurrent_claims(store.clone()).await;
    cache::backend(&*store).await;
    cache::adapter(store.clone()).await;
    cache::concurrent_puts(store.clone()).await;
    // Last: it sweeps every entry the rules before it left.
    cache::sweeps(store).await;
}

/// Runs every rule of [`ServiceStore`] against `store`, which must hold no accounts, agents,
/// events, async results or groups (its threads do not matter: it may be a store [`check`]
/// ran on). The purge rule runs last, and leaves only rows that never expire.
pub async fn check_service<S: ServiceStore>(store: Arc<S>) {
    service::accounts(&*store).await;
    service::agents(&*store).await;
    service::events(&*store).await;
    service::start_event(&*store).await;
    service::settle_event_in_batch(&*store).await;
    service::processing_events(&*store).await;
    service::json_round_trip(&*store).await;
    async_results::async_results(&*store).await;
    async_results::settlements(&*store).await;
    async_results::async_results_in_order(&*store).await;
    async_results::groups(&*store).await;
    service::concurrent_event_inserts(store.clone()).await;
    async_results::concurrent_settlements(store.clone()).await;
    async_results::concurrent_group_inserts(store.clone()).await;
    service::wakes(&*store).await;
    async_results::purge(&*store).await;
}

/// Commits `write` alone: the thread's new version.
async fn write<S: Store>(store: &S, write: ThreadWrite<'_>) -> Result<u64, StoreError> {
    let committed = store.commit(Batch::new().write(write)).await?;
    Ok(committed.version.expect("a committed write has a version"))
}

/// Creates thread `id` and writes `messages` to it, running: the thread's version.
async fn started<S: Store>(store: &S, id: &str, messages: &[Message]) -> u64 {
    store.create_thread(NewThread::new(id)).await.unwrap();
    let write = ThreadWrite::new(id, 0, 0, messages, ThreadStatus::Running);
    let version = store
        .commit(Batch::new().write(write))
        .await
        .unwrap()
        .version;
    version.expect("a committed write has a version")
}

/// A thread with every kind of part a run stores.
fn rich_thread() -> Vec<Message> {
    let call = ToolCallPart {
        tool_call_id: "c1".into(),
        tool_name: "transfer".into(),
        input: json!({"amount": 5, "to": "ünïcode ✓"}),
        provider_executed: false,
        provider_metadata: Default::default(),
    };
    let pause = Pause::new(PauseKind::Approval, "c9", "deploy", json!({}))
        .with_data(json!({"approvalId": "apr_1"}));
    vec![
        Message::system("Be brief."),
        Message::user("Pay 5."),
        Message::new(
            Role::Assistant,
            vec![
                Part::text("Paying."),
                Part::ToolCall(call),
                Part::ToolApprovalRequest(ToolApprovalRequest {
                    approval_id: "apr_0".into(),
                    tool_call_id: "c1".into(),
                    tool_name: "transfer".into(),
                    input: json!({"amount": 5}),
                    requested_at: Some(7),
                }),
                Part::NestedRun(NestedRun {
                    tool_call_id: "c2".into(),
                    tool_name: "helper".into(),
                    run_id: "r/c2".into(),
                    tags: vec!["name:x".into()],
                    messages: vec![Message::user("child")],
                    pending: vec![pause],
                }),
            ],
        )
        // The step's record: provider-invisible, kept with the message.
        .with_meta(
            MessageMeta::new()
                .model("gpt-ünï")
                .provider("openai")
                .response_id("resp_1")
                .finish_reason(UnifiedFinishReason::ToolCalls)
                .usage(Usage {
                    input: InputTokens {
                        total: Some(120),
                        cache_read: Some(100),
                        ..Default::default()
                    },
                    output: OutputTokens {
                        total: Some(14),
                        reasoning: Some(5),
                        ..Default::default()
                    },
                    server_tool_uses: 1,
                })
                .timed(1_700_000_000_000, 812),
        ),
        Message::tool_results(vec![ToolResultPart {
            tool_call_id: "c1".into(),
            tool_name: "transfer".into(),
            output: ModelOutput::error_text("denied"),
            provider_executed: false,
            provider_metadata: Default::default(),
        }])
        .with_meta(
            MessageMeta::new()
                .timed(1_700_000_000_900, 40)
                .call("c1", 38),
        ),
    ]
}

async fn threads<S: Store>(store: &S) {
    let created = store
        .create_thread(NewThread::new("t-basic").with_tag("a").with_tag("b"))
        .await
        .expect("create a thread");
    assert_eq!(created.version, 0, "a new thread is at version 0");
    assert_eq!(created.status, ThreadStatus::Idle, "a new thread is idle");
    assert_eq!(created.message_count, 0);
    assert_eq!(created.tags, ["a", "b"], "tags are kept in order");
    assert!(
        matches!(
            store.create_thread(NewThread::new("t-basic")).await,
            Err(StoreError::Exists(id)) if id == "t-basic"
        ),
        "creating a thread twice is Exists"
    );
    assert_eq!(store.thread("t-basic").await.unwrap(), Some(created));
    assert_eq!(store.thread("nope").await.unwrap(), None);
    assert!(
        matches!(store.messages("nope").await, Err(StoreError::NotFound(_))),
        "the messages of a missing thread are NotFound"
    );
    assert!(
        matches!(
            write(
                store,
                ThreadWrite::new("nope", 0, 0, &[], ThreadStatus::Idle)
            )
            .await,
            Err(StoreError::NotFound(_))
        ),
        "a write to a missing thread is NotFound"
    );
}

async fn messages_round_trip<S: Store>(store: &S) {
    store.create_thread(NewThread::new("t-rich")).await.unwrap();
    let thread = rich_thread();
    let pending = vec![Pause::new(
        PauseKind::ClientTool,
        "c3",
        "ask",
        json!({"q": 1}),
    )];
    let rich = ThreadWrite::new("t-rich", 0, 0, &thread, ThreadStatus::Paused);
    let version = write(store, rich.with_pending(&pending)).await.unwrap();
    assert_eq!(version, 1, "a write bumps the version by one");
    assert_eq!(
        store.messages("t-rich").await.unwrap(),
        thread,
        "messages read back exactly as written, every part kind and the steps' records"
    );
    let stored = store.thread("t-rich").await.unwrap().unwrap();
    assert_eq!(stored.message_count, 4);
    assert_eq!(stored.status, ThreadStatus::Paused);
    assert_eq!(stored.pending, pending, "pending items read back");
    assert!(stored.updated_at >= stored.created_at);
}

async fn conditional_writes<S: Store>(store: &S) {
    let one = [Message::user("one"), Message::assistant("two")];
    let late = [Message::user("late")];
    let v1 = started(store, "t-cond", &one).await;
    assert!(
        matches!(
            write(
                store,
                ThreadWrite::new("t-cond", 0, 2, &late, ThreadStatus::Idle)
            )
            .await,
            Err(StoreError::Conflict {
                expected: 0,
                found: 1,
                ..
            })
        ),
        "a write expecting a stale version is a Conflict naming both versions"
    );
    // Rewriting the tail: keep one, replace the second.
    let two = [Message::assistant("TWO")];
    let v2 = write(
        store,
        ThreadWrite::new("t-cond", v1, 1, &two, ThreadStatus::Idle),
    )
    .await
    .unwrap();
    assert_eq!(
        store.messages("t-cond").await.unwrap(),
        [Message::user("one"), Message::assistant("TWO")],
        "keep drops the messages after it"
    );
    assert!(
        matches!(
            write(
                store,
                ThreadWrite::new("t-cond", v2, 3, &[], ThreadStatus::Idle)
            )
            .await,
            Err(StoreError::Corrupt(_))
        ),
        "keeping more messages than stored is refused"
    );
    assert_eq!(
        store.thread("t-cond").await.unwrap().unwrap().version,
        v2,
        "a refused write changes nothing"
    );
}

async fn run_claims<S: Store>(store: Arc<S>) {
    store
        .create_thread(NewThread::new("t-claim"))
        .await
        .unwrap();
    let me = Holder::current();
    let v1 = store.claim("t-claim", 0, "run-a", &me).await.unwrap();
    assert_eq!(v1, 1, "a claim bumps the version");
    let thread = store.thread("t-claim").await.unwrap().unwrap();
    assert_eq!(
        thread.status,
        ThreadStatus::Running,
        "a claimed thread is running"
    );
    assert_eq!(
        thread.run_id.as_deref(),
        Some("run-a"),
        "a claim records its run"
    );
    assert!(
        matches!(
            store.claim("t-claim", 0, "run-b", &me).await,
            Err(StoreError::Conflict {
                expected: 0,
                found: 1,
                ..
            })
        ),
        "a claim of a stale version is a Conflict"
    );
    assert!(matches!(
        store.claim("t-missing", 0, "run-a", &me).await,
        Err(StoreError::NotFound(_))
    ));
    let hi = [Message::user("hi")];
    let v2 = write(
        &*store,
        ThreadWrite::new("t-claim", v1, 0, &hi, ThreadStatus::Idle),
    )
    .await
    .unwrap();
    let thread = store.thread("t-claim").await.unwrap().unwrap();
    assert_eq!(
        thread.run_id.as_deref(),
        Some("run-a"),
        "writes keep the run that claimed the thread"
    );
    // A touch is a sign of life: the time moves, the version does not.
    let before = store.thread("t-claim").await.unwrap().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store.touch("t-claim", v2).await.unwrap();
    let after = store.thread("t-claim").await.unwrap().unwrap();
    assert_eq!(after.version, v2, "a touch keeps the version");
    assert!(
        after.updated_at > before.updated_at,
        "a touch moves updated_at"
    );
    assert_eq!(
        after.run_id.as_deref(),
        Some("run-a"),
        "a touch keeps the run"
    );
    assert!(matches!(
        store.touch("t-claim", v1).await,
        Err(StoreError::Conflict { .. })
    ));
    // Racing resumptions of one version: exactly one claims it.
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let me = me.clone();
            tokio::spawn(async move { store.claim("t-claim", v2, &format!("run-{i}"), &me).await })
        })
        .collect();
    let mut won = 0;
    for racer in racers {
        match racer.await.unwrap() {
            Ok(v) => {
                assert_eq!(v, v2 + 1);
                won += 1;
            }
            Err(StoreError::Conflict { .. }) => {}
            Err(e) => panic!("a losing claim gets Conflict, not {e}"),
        }
    }
    assert_eq!(won, 1, "of claims of one version exactly one wins");
}

async fn queries<S: Store>(store: &S) {
    store
        .create_thread(NewThread::new("q-parent").with_tag("team:a"))
        .await
        .unwrap();
    for (id, tag) in [("q-child-1", "name:scout"), ("q-child-2", "name:ops")] {
        store
            .create_thread(NewThread::new(id).with_parent("q-parent").with_tag(tag))
            .await
            .unwrap();
    }
    // The second child is written last: it comes first.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let x = [Message::user("x")];
    write(
        store,
        ThreadWrite::new("q-child-2", 0, 0, &x, ThreadStatus::Running),
    )
    .await
    .unwrap();
    let children = store
        .threads(&ThreadQuery {
            parent_id: Some("q-parent".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let ids: Vec<&str> = children.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        ["q-child-2", "q-child-1"],
        "children, last written first"
    );
    let tagged = store
        .threads(&ThreadQuery {
            tag: Some("name:scout".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(tagged.len(), 1, "a tag selects its threads");
    assert_eq!(tagged[0].id, "q-child-1");
    let running = store
        .threads(&ThreadQuery {
            status: Some(ThreadStatus::Running),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(running.iter().any(|t| t.id == "q-child-2"));
    assert!(running.iter().all(|t| t.status == ThreadStatus::Running));
    let running_children = store
        .threads(&ThreadQuery {
            parent_id: Some("q-parent".into()),
            status: Some(ThreadStatus::Running),
            ..Default::default()
        })
        .await
        .unwrap();
    let ids: Vec<&str> = running_children.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["q-child-2"], "filters combine");
    let one = store
        .threads(&ThreadQuery {
            limit: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(one.len(), 1, "limit caps the list");
}

async fn credentials<S: Store>(store: &S) {
    let (key, other) = (vec![1, 2, 255, 0], vec![9; 40]);
    assert_eq!(store.credentials("acct-a").await.unwrap(), []);
    store
        .put_credential("acct-a", "OPENAI_API_KEY", &key)
        .await
        .unwrap();
    store
        .put_credential("acct-a", "B_TOKEN", &other)
        .await
        .unwrap();
    store
        .put_credential("acct-b", "OPENAI_API_KEY", &other)
        .await
        .unwrap();
    assert_eq!(
        store.credentials("acct-a").await.unwrap(),
        [
            ("B_TOKEN".to_string(), other.clone()),
            ("OPENAI_API_KEY".to_string(), key)
        ],
        "an account's credentials, by name, as stored"
    );
    store
        .put_credential("acct-a", "OPENAI_API_KEY", &other)
        .await
        .unwrap();
    assert_eq!(
        store.credentials("acct-a").await.unwrap()[1].1,
        other,
        "a credential stored again replaces the first"
    );
    assert!(store.delete_credential("acct-a", "B_TOKEN").await.unwrap());
    assert!(!store.delete_credential("acct-a", "B_TOKEN").await.unwrap());
    assert_eq!(store.credentials("acct-a").await.unwrap().len(), 1);
    assert_eq!(
        store.credentials("acct-b").await.unwrap().len(),
        1,
        "another account's are its own"
    );
}

async fn variables<S: Store>(store: &S) {
    store.create_thread(NewThread::new("t-vars")).await.unwrap();
    let sealed = StoredValue {
        secret: true,
        bytes: vec![0, 159, 146, 150, 255],
    };
    let text = StoredValue {
        secret: false,
        bytes: b"eu".to_vec(),
    };
    store
        .put_variable("t-vars", "TOKEN", &sealed)
        .await
        .unwrap();
    store.put_variable("t-vars", "REGION", &text).await.unwrap();
    let updated = StoredValue {
        secret: false,
        bytes: b"us".to_vec(),
    };
    store
        .put_variable("t-vars", "REGION", &updated)
        .await
        .unwrap();
    assert_eq!(
        store.variables("t-vars").await.unwrap(),
        [
            ("REGION".to_string(), updated),
            ("TOKEN".to_string(), sealed)
        ],
        "variables by name, bytes exactly as given, a second put replacing the first"
    );
    assert!(
        matches!(
            store.put_variable("nope", "X", &text).await,
            Err(StoreError::NotFound(_))
        ),
        "a variable of a missing thread is NotFound"
    );
    assert!(store.variables("t-other").await.unwrap().is_empty());
}

async fn concurrent_writers<S: Store>(store: Arc<S>) {
    store.create_thread(NewThread::new("t-race")).await.unwrap();
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let mine = [Message::user(format!("writer {i}"))];
                write(
                    &*store,
                    ThreadWrite::new("t-race", 0, 0, &mine, ThreadStatus::Running),
                )
                .await
            })
        })
        .collect();
    let mut won = 0;
    for writer in writers {
        match writer.await.unwrap() {
            Ok(_) => won += 1,
            Err(StoreError::Conflict { .. }) => {}
            Err(e) => panic!("a losing writer gets Conflict, not {e}"),
        }
    }
    assert_eq!(won, 1, "of writers expecting one version exactly one wins");
    assert_eq!(store.messages("t-race").await.unwrap().len(), 1);
}

async fn concurrent_claims<S: Store>(store: Arc<S>) {
    let claims: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { journal::claim_key(&*store, "race-key", "t").await })
        })
        .collect();
    let mut new = 0;
    for claim in claims {
        if claim.await.unwrap().unwrap() == Claim::New {
            new += 1;
        }
    }
    assert_eq!(new, 1, "of concurrent claims of one key exactly one is New");
}
