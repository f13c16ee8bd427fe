//! The journal's and the ledger's rules, alone and written with the thread.

use serde_json::{Value, json};
use toolsmith_core::Message;

use super::started;
use crate::{
    Batch, Claim, Committed, EffectStatus, JournalEntry, NewThread, Settlement, Store, StoreError,
    ThreadStatus, ThreadWrite,
};

fn entry(call: &str, seq: u64, side_effect: bool) -> JournalEntry {
    JournalEntry {
        thread_id: "j-thread".into(),
        run_id: "run-1".into(),
        tool_call_id: call.into(),
        tool_name: if side_effect { "charge" } else { "read" }.into(),
        seq,
        attempt: 1,
        input: json!({"call": call}),
        side_effect,
        idempotent: !side_effect,
        idempotency_key: Some(format!("run-1:{call}")),
        accepts_idempotency_key: side_effect,
        has_revert: side_effect,
        status: EffectStatus::Intended,
        output: None,
    }
}

pub(super) async fn journal<S: Store>(store: &S) {
    // Intended in reverse order: read back in call order.
    intend(store, &entry("b", 1, false)).await.unwrap();
    intend(store, &entry("a", 0, true)).await.unwrap();
    let mut again = entry("a", 0, true);
    again.input = json!("changed");
    intend(store, &again).await.unwrap();
    settle(
        store,
        &again,
        EffectStatus::Succeeded,
        &json!({"charged": 5}),
    )
    .await
    .unwrap();
    let entries = store.journal("j-thread").await.unwrap();
    assert_eq!(entries.len(), 2, "intending a call twice keeps one record");
    assert_eq!(entries[0].tool_call_id, "a", "entries in call order");
    assert_eq!(
        entries[0].input,
        json!({"call": "a"}),
        "the first record is kept"
    );
    assert_eq!(entries[0].status, EffectStatus::Succeeded);
    assert_eq!(entries[0].output, Some(json!({"charged": 5})));
    assert_eq!(
        entries[1].status,
        EffectStatus::Intended,
        "an unsettled call stays intended"
    );
    assert_eq!(entries[1].output, None);
    assert!(entries[0].side_effect && !entries[0].idempotent);
    assert!(
        entries[0].accepts_idempotency_key && entries[0].has_revert,
        "Smithers' tool metadata is kept"
    );
    assert!(!entries[1].accepts_idempotency_key && !entries[1].has_revert);
    assert!(
        matches!(
            settle(
                store,
                &entry("zzz", 2, true),
                EffectStatus::Failed,
                &json!(null)
            )
            .await,
            Err(StoreError::NotFound(_))
        ),
        "settling a call never intended is NotFound"
    );
    // A record is named by its thread too: the same run and call id recorded for another
    // thread is not that record.
    let mut elsewhere = entry("b", 1, false);
    elsewhere.thread_id = "j-other".into();
    assert!(
        matches!(
            settle(store, &elsewhere, EffectStatus::Failed, &json!(null)).await,
            Err(StoreError::NotFound(_))
        ),
        "settling in another thread is NotFound"
    );
    intend(store, &elsewhere).await.unwrap();
    settle(store, &elsewhere, EffectStatus::Failed, &json!("no"))
        .await
        .unwrap();
    let other = store.journal("j-other").await.unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].status, EffectStatus::Failed);
    let entries = store.journal("j-thread").await.unwrap();
    assert_eq!(entries[1].tool_call_id, "b");
    assert_eq!(
        entries[1].status,
        EffectStatus::Intended,
        "the other thread's record is settled, not this one"
    );
}

pub(super) async fn ledger<S: Store>(store: &S) {
    assert_eq!(claim_key(store, "run-1:k1", "t").await.unwrap(), Claim::New);
    assert_eq!(
        claim_key(store, "run-1:k1", "t").await.unwrap(),
        unsettled(),
        "a second claim sees the first, unsettled"
    );
    // The call whose key it is: its intent finds the key claimed, its settlement settles it.
    // The ledger knows it by run and call id, not by the idempotency key it records (a
    // Smithers key, shared by every call of a task iteration).
    let mut sent = entry("k1", 3, true);
    sent.idempotency_key = Some("smithers:run-1:node:0".into());
    assert_eq!(
        intend(store, &sent).await.unwrap(),
        unsettled(),
        "an intent reports an earlier claim of its key"
    );
    settle(store, &sent, EffectStatus::Succeeded, &json!("sent"))
        .await
        .unwrap();
    let settled = Claim::Existing {
        status: EffectStatus::Succeeded,
        output: Some(json!("sent")),
    };
    assert_eq!(claim_key(store, "run-1:k1", "t").await.unwrap(), settled);
    // Settled again with the same outcome (a journal entry catching up with its key's).
    settle(store, &sent, EffectStatus::Succeeded, &json!("sent"))
        .await
        .expect("a key settled again with its outcome");
    assert_eq!(claim_key(store, "run-1:k1", "t").await.unwrap(), settled);
    // Another call with the same Smithers key claims a key of its own.
    let mut sibling = entry("k2", 4, true);
    sibling.idempotency_key = sent.idempotency_key.clone();
    assert_eq!(
        intend(store, &sibling).await.unwrap(),
        Claim::New,
        "a call sharing another's idempotency key is not that call"
    );
    // A recorded call whose key was never claimed: its settlement is NotFound.
    let mut never = entry("never", 5, false);
    intend(store, &never).await.unwrap();
    (never.side_effect, never.idempotent) = (true, false);
    assert!(matches!(
        settle(store, &never, EffectStatus::Failed, &json!(null)).await,
        Err(StoreError::NotFound(_))
    ));
}

pub(super) async fn combined_journal_and_ledger<S: Store>(store: &S) {
    let entry = |call: &str, attempt: u32, side_effect: bool, idempotent: bool| JournalEntry {
        attempt,
        side_effect,
        idempotent,
        ..payment("t-both", "r-both", call)
    };
    let unsafe_call = entry("c1", 1, true, false);
    assert_eq!(unsafe_call.key_to_claim().as_deref(), Some("r-both:c1"));
    assert_eq!(intend(store, &unsafe_call).await.unwrap(), Claim::New);
    assert_eq!(
        intend(store, &entry("c1", 2, true, false)).await.unwrap(),
        unsettled(),
        "a second attempt finds the key claimed and unsettled"
    );
    settle(store, &unsafe_call, EffectStatus::Succeeded, &json!("paid"))
        .await
        .unwrap();
    let journal = store.journal("t-both").await.unwrap();
    assert_eq!(journal[0].status, EffectStatus::Succeeded);
    assert_eq!(journal[0].output, Some(json!("paid")));
    assert_eq!(
        claim_key(store, "r-both:c1", "t-both").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Succeeded,
            output: Some(json!("paid"))
        },
        "settling the call settles its key"
    );
    // Settling is all or nothing: a key claimed but a call never intended changes neither.
    let orphan = entry("c3", 1, true, false);
    claim_key(store, "r-both:c3", "t-both").await.unwrap();
    assert!(
        matches!(
            settle(store, &orphan, EffectStatus::Succeeded, &json!("x")).await,
            Err(StoreError::NotFound(_))
        ),
        "settling a call never intended is NotFound"
    );
    assert_eq!(
        claim_key(store, "r-both:c3", "t-both").await.unwrap(),
        unsettled(),
        "a failed settlement leaves the key as it was"
    );
    // And a call recorded without its key claimed (its intent said it was safe to repeat)
    // settles nothing.
    let unclaimed = entry("c4", 1, true, false);
    intend(store, &entry("c4", 1, true, true)).await.unwrap();
    assert!(
        settle(store, &unclaimed, EffectStatus::Succeeded, &json!("y"))
            .await
            .is_err(),
        "settling a call whose key was never claimed is an error"
    );
    let journal = store.journal("t-both").await.unwrap();
    let c4 = journal.iter().find(|e| e.tool_call_id == "c4").unwrap();
    assert_eq!(
        c4.status,
        EffectStatus::Intended,
        "a failed settlement leaves the call as it was"
    );
    // A call safe to repeat claims no key.
    let safe = entry("c2", 1, true, true);
    assert_eq!(safe.key_to_claim(), None);
    assert_eq!(intend(store, &safe).await.unwrap(), Claim::New);
    settle(store, &safe, EffectStatus::Failed, &json!({"code": "X"}))
        .await
        .unwrap();
    assert_eq!(
        claim_key(store, "r-both:c2", "t-both").await.unwrap(),
        Claim::New,
        "no key was claimed for it"
    );
}

pub(super) async fn settle_and_write<S: Store>(store: &S) {
    let v1 = started(store, "t-sw", &[Message::user("Pay.")]).await;
    let entry = |call: &str| payment("t-sw", "r-sw", call);
    let (paid, refund) = (entry("c1"), entry("c2"));
    intend(store, &paid).await.unwrap();
    intend(store, &refund).await.unwrap();
    let output = json!("paid");
    let result = [Message::assistant("Paid.")];
    let settled = |entry| Settlement {
        entry,
        status: EffectStatus::Succeeded,
        output: &output,
    };
    let save =
        |expected, keep| ThreadWrite::new("t-sw", expected, keep, &result, ThreadStatus::Running);
    // A call's outcome with the save of its result: `[Settle, Write]`.
    let committed = store
        .commit(Batch::new().settle(settled(&paid)).write(save(v1, 1)))
        .await
        .unwrap();
    let v2 = v1 + 1;
    assert_eq!(
        committed,
        Committed {
            version: Some(v2),
            claims: Vec::new()
        },
        "[Settle, Write] returns the new version and no claim"
    );
    assert_eq!(store.messages("t-sw").await.unwrap().len(), 2);
    assert_eq!(
        claim_key(store, "r-sw:c1", "t-sw").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Succeeded,
            output: Some(json!("paid"))
        },
        "[Settle, Write] settles the call's key"
    );
    // A stale version: nothing of it is written, the settlement neither.
    let stale = store
        .commit(Batch::new().settle(settled(&refund)).write(save(v1, 2)))
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "a stale [Settle, Write] is a Conflict: {stale:?}"
    );
    let journal = store.journal("t-sw").await.unwrap();
    let statuses: Vec<_> = journal.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses,
        [EffectStatus::Succeeded, EffectStatus::Intended],
        "a failed [Settle, Write] settles nothing"
    );
    assert_eq!(
        claim_key(store, "r-sw:c2", "t-sw").await.unwrap(),
        unsettled()
    );
    assert_eq!(store.messages("t-sw").await.unwrap().len(), 2);
    // The right version but nothing to settle: NotFound, and the thread stays as it was.
    let never = entry("c9");
    let missing = store
        .commit(Batch::new().settle(settled(&never)).write(save(v2, 2)))
        .await;
    assert!(
        matches!(missing, Err(StoreError::NotFound(_))),
        "settling a call never intended is NotFound: {missing:?}"
    );
    let thread = store.thread("t-sw").await.unwrap().unwrap();
    assert_eq!(
        (thread.version, thread.message_count),
        (v2, 2),
        "a failed [Settle, Write] writes no message"
    );
    // Two outcomes with one save: `[Settle, Settle, Write]`.
    let (first, second) = (entry("c10"), entry("c11"));
    intend(store, &first).await.unwrap();
    intend(store, &second).await.unwrap();
    let batch = Batch::new()
        .settle(settled(&first))
        .settle(settled(&second));
    let committed = store.commit(batch.write(save(v2, 2))).await.unwrap();
    assert_eq!(committed.version, Some(v2 + 1));
    let journal = store.journal("t-sw").await.unwrap();
    assert!(
        journal
            .iter()
            .filter(|e| e.tool_call_id == "c10" || e.tool_call_id == "c11")
            .all(|e| e.status == EffectStatus::Succeeded),
        "both outcomes are settled"
    );
}

pub(super) async fn write_and_intend<S: Store>(store: &S) {
    store.create_thread(NewThread::new("t-wi")).await.unwrap();
    let entry = |call: &str| {
        let mut entry = payment("t-wi", "r-wi", call);
        entry.input = json!({"to": "bob"});
        entry
    };
    let step = [Message::user("Pay."), Message::assistant("Paying.")];
    let save = |expected| ThreadWrite::new("t-wi", expected, 0, &step, ThreadStatus::Running);
    let (c1, c2) = (entry("c1"), entry("c2"));
    // A step's save with its first call's intent: `[Write, Intend]`.
    let committed = store
        .commit(Batch::new().write(save(0)).intend(&c1))
        .await
        .unwrap();
    assert_eq!(
        committed,
        Committed {
            version: Some(1),
            claims: vec![Claim::New]
        }
    );
    assert_eq!(store.messages("t-wi").await.unwrap(), step);
    assert_eq!(store.journal("t-wi").await.unwrap().len(), 1);
    assert_eq!(
        claim_key(store, "r-wi:c1", "t-wi").await.unwrap(),
        unsettled(),
        "[Write, Intend] claims the call's key"
    );
    // A stale version: neither the messages nor the intent nor the claim.
    let stale = store.commit(Batch::new().write(save(0)).intend(&c2)).await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "a stale [Write, Intend] is a Conflict: {stale:?}"
    );
    assert_eq!(
        store.journal("t-wi").await.unwrap().len(),
        1,
        "a failed [Write, Intend] records no intent"
    );
    assert_eq!(
        claim_key(store, "r-wi:c2", "t-wi").await.unwrap(),
        Claim::New,
        "a failed [Write, Intend] claims no key"
    );
    // A key claimed before (by the claim just above): the claim says so.
    let committed = store
        .commit(Batch::new().write(save(1)).intend(&c2))
        .await
        .unwrap();
    assert_eq!(committed.version, Some(2));
    assert_eq!(
        committed.claims,
        [unsettled()],
        "[Write, Intend] reports an earlier claim of the key"
    );
}

/// A call without side effects recorded once it ended: `Intend` keeps the entry as it stands,
/// status and output, alone and in `[Write, Intend]` (one statement where a backend has it).
pub(super) async fn record_ended<S: Store>(store: &S) {
    store.create_thread(NewThread::new("t-re")).await.unwrap();
    let ended = |call: &str, seq: u64, output: Value| {
        let mut entry = entry(call, seq, false);
        entry.thread_id = "t-re".into();
        entry.status = EffectStatus::Succeeded;
        entry.output = Some(output);
        entry
    };
    let (first, second) = (
        ended("c1", 0, json!({"sum": 2})),
        ended("c2", 1, json!("text")),
    );
    assert_eq!(intend(store, &first).await.unwrap(), Claim::New);
    let step = [Message::user("Add."), Message::assistant("4")];
    let save = ThreadWrite::new("t-re", 0, 0, &step, ThreadStatus::Running);
    let committed = store
        .commit(Batch::new().write(save).intend(&second))
        .await
        .unwrap();
    assert_eq!(committed.version, Some(1));
    assert_eq!(committed.claims, [Claim::New]);
    assert_eq!(
        store.journal("t-re").await.unwrap(),
        [first, second],
        "recorded with their status and output"
    );
}

/// Commits `entry`'s intent alone: its claim.
pub(super) async fn intend<S: Store>(store: &S, entry: &JournalEntry) -> Result<Claim, StoreError> {
    let mut committed = store.commit(Batch::new().intend(entry)).await?;
    assert_eq!(committed.claims.len(), 1, "an intent makes one claim");
    Ok(committed.claims.remove(0))
}

/// Commits `entry`'s settlement alone.
pub(super) async fn settle<S: Store>(
    store: &S,
    entry: &JournalEntry,
    status: EffectStatus,
    output: &serde_json::Value,
) -> Result<(), StoreError> {
    let settled = Settlement {
        entry,
        status,
        output,
    };
    let committed = store.commit(Batch::new().settle(settled)).await?;
    assert_eq!(
        committed,
        Committed::default(),
        "a settlement makes no claim"
    );
    Ok(())
}

/// Commits a claim of `key` alone: the claim.
pub(super) async fn claim_key<S: Store>(
    store: &S,
    key: &str,
    thread: &str,
) -> Result<Claim, StoreError> {
    let mut committed = store.commit(Batch::new().claim_key(key, thread)).await?;
    assert_eq!(committed.claims.len(), 1, "a key's claim makes one claim");
    Ok(committed.claims.remove(0))
}

/// What a claim of a key claimed and not settled finds.
pub(super) fn unsettled() -> Claim {
    Claim::Existing {
        status: EffectStatus::Intended,
        output: None,
    }
}

/// Call `call` of run `run` in `thread`: `pay`, side-effecting and not idempotent (its key
/// `<run>:<call>` is claimed with its intent), intended.
pub(super) fn payment(thread: &str, run: &str, call: &str) -> JournalEntry {
    JournalEntry {
        thread_id: thread.into(),
        run_id: run.into(),
        tool_call_id: call.into(),
        tool_name: "pay".into(),
        seq: 0,
        attempt: 1,
        input: json!({}),
        side_effect: true,
        idempotent: false,
        idempotency_key: Some(format!("{run}:{call}")),
        accepts_idempotency_key: false,
        has_revert: false,
        status: EffectStatus::Intended,
        output: None,
    }
}
