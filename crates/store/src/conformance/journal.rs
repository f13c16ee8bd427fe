//! The journal's and the ledger's rules, alone and written with the thread.

use serde_json::json;
use toolsmith_core::Message;

use crate::{
    Claim, EffectStatus, JournalEntry, NewThread, Settlement, Store, StoreError, ThreadStatus,
    ThreadWrite,
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
    store.journal_intend(&entry("b", 1, false)).await.unwrap();
    store.journal_intend(&entry("a", 0, true)).await.unwrap();
    let mut again = entry("a", 0, true);
    again.input = json!("changed");
    store.journal_intend(&again).await.unwrap();
    store
        .journal_settle(&again, EffectStatus::Succeeded, &json!({"charged": 5}))
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
        "seed 001's tool metadata is kept"
    );
    assert!(!entries[1].accepts_idempotency_key && !entries[1].has_revert);
    assert!(
        matches!(
            store
                .journal_settle(&entry("zzz", 2, true), EffectStatus::Failed, &json!(null))
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
            store
                .journal_settle(&elsewhere, EffectStatus::Failed, &json!(null))
                .await,
            Err(StoreError::NotFound(_))
        ),
        "settling in another thread is NotFound"
    );
    store.journal_intend(&elsewhere).await.unwrap();
    store
        .journal_settle(&elsewhere, EffectStatus::Failed, &json!("no"))
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
    assert_eq!(store.ledger_claim("k1", "t").await.unwrap(), Claim::New);
    assert_eq!(
        store.ledger_claim("k1", "t").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Intended,
            output: None
        },
        "a second claim sees the first, unsettled"
    );
    store
        .ledger_settle("k1", EffectStatus::Succeeded, &json!("sent"))
        .await
        .unwrap();
    assert_eq!(
        store.ledger_claim("k1", "t").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Succeeded,
            output: Some(json!("sent"))
        }
    );
    assert!(matches!(
        store
            .ledger_settle("never", EffectStatus::Failed, &json!(null))
            .await,
        Err(StoreError::NotFound(_))
    ));
}

pub(super) async fn combined_journal_and_ledger<S: Store>(store: &S) {
    let entry = |call: &str, attempt: u32, side_effect: bool, idempotent: bool| JournalEntry {
        thread_id: "t-both".into(),
        run_id: "r-both".into(),
        tool_call_id: call.into(),
        tool_name: "pay".into(),
        seq: 0,
        attempt,
        input: json!({}),
        side_effect,
        idempotent,
        idempotency_key: Some(format!("r-both:{call}")),
        accepts_idempotency_key: false,
        has_revert: false,
        status: EffectStatus::Intended,
        output: None,
    };
    let unsafe_call = entry("c1", 1, true, false);
    assert_eq!(unsafe_call.key_to_claim(), Some("r-both:c1"));
    assert_eq!(store.intend_call(&unsafe_call).await.unwrap(), Claim::New);
    assert_eq!(
        store
            .intend_call(&entry("c1", 2, true, false))
            .await
            .unwrap(),
        Claim::Existing {
            status: EffectStatus::Intended,
            output: None
        },
        "a second attempt finds the key claimed and unsettled"
    );
    store
        .settle_call(&unsafe_call, EffectStatus::Succeeded, &json!("paid"))
        .await
        .unwrap();
    let journal = store.journal("t-both").await.unwrap();
    assert_eq!(journal[0].status, EffectStatus::Succeeded);
    assert_eq!(journal[0].output, Some(json!("paid")));
    assert_eq!(
        store.ledger_claim("r-both:c1", "t-both").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Succeeded,
            output: Some(json!("paid"))
        },
        "settling the call settles its key"
    );
    // Settling is all or nothing: a key claimed but a call never intended changes neither.
    let orphan = entry("c3", 1, true, false);
    store.ledger_claim("r-both:c3", "t-both").await.unwrap();
    assert!(
        matches!(
            store
                .settle_call(&orphan, EffectStatus::Succeeded, &json!("x"))
                .await,
            Err(StoreError::NotFound(_))
        ),
        "settling a call never intended is NotFound"
    );
    assert_eq!(
        store.ledger_claim("r-both:c3", "t-both").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Intended,
            output: None
        },
        "a failed settlement leaves the key as it was"
    );
    // And a call intended without its key claimed (as by `journal_intend`) settles nothing.
    let unclaimed = entry("c4", 1, true, false);
    store.journal_intend(&unclaimed).await.unwrap();
    assert!(
        store
            .settle_call(&unclaimed, EffectStatus::Succeeded, &json!("y"))
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
    assert_eq!(store.intend_call(&safe).await.unwrap(), Claim::New);
    store
        .settle_call(&safe, EffectStatus::Failed, &json!({"code": "X"}))
        .await
        .unwrap();
    assert_eq!(
        store.ledger_claim("r-both:c2", "t-both").await.unwrap(),
        Claim::New,
        "no key was claimed for it"
    );
}

pub(super) async fn settle_and_write<S: Store>(store: &S) {
    store.create_thread(NewThread::new("t-sw")).await.unwrap();
    let v1 = store
        .write(
            "t-sw",
            0,
            0,
            &[Message::user("Pay.")],
            ThreadStatus::Running,
            &[],
        )
        .await
        .unwrap();
    let entry = |call: &str| JournalEntry {
        thread_id: "t-sw".into(),
        run_id: "r-sw".into(),
        tool_call_id: call.into(),
        tool_name: "pay".into(),
        seq: 0,
        attempt: 1,
        input: json!({}),
        side_effect: true,
        idempotent: false,
        idempotency_key: Some(format!("r-sw:{call}")),
        accepts_idempotency_key: false,
        has_revert: false,
        status: EffectStatus::Intended,
        output: None,
    };
    let (paid, refund) = (entry("c1"), entry("c2"));
    store.intend_call(&paid).await.unwrap();
    store.intend_call(&refund).await.unwrap();
    let output = json!("paid");
    let result = [Message::assistant("Paid.")];
    let v2 = store
        .settle_and_write(
            &[Settlement {
                entry: &paid,
                status: EffectStatus::Succeeded,
                output: &output,
            }],
            ThreadWrite {
                thread: "t-sw",
                expected: v1,
                keep: 1,
                messages: &result,
                status: ThreadStatus::Running,
                pending: &[],
            },
        )
        .await
        .unwrap();
    assert_eq!(v2, v1 + 1, "settle_and_write returns the new version");
    assert_eq!(store.messages("t-sw").await.unwrap().len(), 2);
    assert_eq!(
        store.ledger_claim("r-sw:c1", "t-sw").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Succeeded,
            output: Some(json!("paid"))
        },
        "settle_and_write settles the call's key"
    );
    // A stale version: nothing of it is written, the settlement neither.
    let stale = store
        .settle_and_write(
            &[Settlement {
                entry: &refund,
                status: EffectStatus::Succeeded,
                output: &output,
            }],
            ThreadWrite {
                thread: "t-sw",
                expected: v1,
                keep: 2,
                messages: &result,
                status: ThreadStatus::Running,
                pending: &[],
            },
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "a stale settle_and_write is a Conflict: {stale:?}"
    );
    let journal = store.journal("t-sw").await.unwrap();
    let statuses: Vec<_> = journal.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses,
        [EffectStatus::Succeeded, EffectStatus::Intended],
        "a failed settle_and_write settles nothing"
    );
    assert_eq!(
        store.ledger_claim("r-sw:c2", "t-sw").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Intended,
            output: None
        }
    );
    assert_eq!(store.messages("t-sw").await.unwrap().len(), 2);
    // The right version but nothing to settle: NotFound, and the thread stays as it was.
    let never = entry("c9");
    let missing = store
        .settle_and_write(
            &[Settlement {
                entry: &never,
                status: EffectStatus::Failed,
                output: &output,
            }],
            ThreadWrite {
                thread: "t-sw",
                expected: v2,
                keep: 2,
                messages: &result,
                status: ThreadStatus::Running,
                pending: &[],
            },
        )
        .await;
    assert!(
        matches!(missing, Err(StoreError::NotFound(_))),
        "settling a call never intended is NotFound: {missing:?}"
    );
    let thread = store.thread("t-sw").await.unwrap().unwrap();
    assert_eq!(
        (thread.version, thread.message_count),
        (v2, 2),
        "a failed settle_and_write writes no message"
    );
}

pub(super) async fn write_and_intend<S: Store>(store: &S) {
    store.create_thread(NewThread::new("t-wi")).await.unwrap();
    let entry = |call: &str| JournalEntry {
        thread_id: "t-wi".into(),
        run_id: "r-wi".into(),
        tool_call_id: call.into(),
        tool_name: "pay".into(),
        seq: 0,
        attempt: 1,
        input: json!({"to": "bob"}),
        side_effect: true,
        idempotent: false,
        idempotency_key: Some(format!("r-wi:{call}")),
        accepts_idempotency_key: false,
        has_revert: false,
        status: EffectStatus::Intended,
        output: None,
    };
    let step = [Message::user("Pay."), Message::assistant("Paying.")];
    let write = |expected| ThreadWrite {
        thread: "t-wi",
        expected,
        keep: 0,
        messages: &step,
        status: ThreadStatus::Running,
        pending: &[],
    };
    let (version, claim) = store
        .write_and_intend(write(0), &entry("c1"))
        .await
        .unwrap();
    assert_eq!((version, claim), (1, Claim::New));
    assert_eq!(store.messages("t-wi").await.unwrap(), step);
    assert_eq!(store.journal("t-wi").await.unwrap().len(), 1);
    assert_eq!(
        store.ledger_claim("r-wi:c1", "t-wi").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Intended,
            output: None
        },
        "write_and_intend claims the call's key"
    );
    // A stale version: neither the messages nor the intent nor the claim.
    let stale = store.write_and_intend(write(0), &entry("c2")).await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "a stale write_and_intend is a Conflict: {stale:?}"
    );
    assert_eq!(
        store.journal("t-wi").await.unwrap().len(),
        1,
        "a failed write_and_intend records no intent"
    );
    assert_eq!(
        store.ledger_claim("r-wi:c2", "t-wi").await.unwrap(),
        Claim::New,
        "a failed write_and_intend claims no key"
    );
    // A key claimed before (by the claim just above): the claim says so.
    let (version, claim) = store
        .write_and_intend(write(1), &entry("c2"))
        .await
        .unwrap();
    assert_eq!(version, 2);
    assert_eq!(
        claim,
        Claim::Existing {
            status: EffectStatus::Intended,
            output: None
        },
        "write_and_intend reports an earlier claim of the key"
    );
}
