//! Batches of any shape: their operations in order, seeing each other's writes, and all or
//! nothing.

use serde_json::json;
use toolsmith_core::Message;

use super::journal::{claim_key, intend, payment};
use super::started;
use crate::{
    Batch, Claim, Committed, EffectStatus, JournalEntry, NewThread, Settlement, Store, StoreError,
    Thread, ThreadStatus, ThreadWrite,
};

pub(super) async fn mixed_batches<S: Store>(store: &S) {
    store.create_thread(NewThread::new("t-mix")).await.unwrap();
    assert_eq!(
        store.commit(Batch::new()).await.unwrap(),
        Committed::default(),
        "an empty batch commits nothing"
    );
    assert_eq!(store.thread("t-mix").await.unwrap().unwrap().version, 0);

    // Every kind of operation in one batch: a claim per intent and key's claim, in order, and
    // the version after the last write.
    // Distinct sequence numbers: the journal reads back in their order.
    let call = |id: &str, seq| JournalEntry {
        seq,
        ..payment("t-mix", "r-mix", id)
    };
    let (settled, next) = (call("c1", 0), call("c2", 1));
    intend(store, &settled).await.unwrap();
    let safe = JournalEntry {
        idempotent: true,
        ..call("c3", 2)
    };
    let (one, two) = ([Message::user("one")], [Message::assistant("two")]);
    let output = json!("paid");
    let batch = Batch::new()
        .settle(Settlement {
            entry: &settled,
            status: EffectStatus::Succeeded,
            output: &output,
        })
        .write(ThreadWrite::new("t-mix", 0, 0, &one, ThreadStatus::Running))
        .intend(&next)
        .claim_key("r-mix:c1", "t-mix")
        .intend(&safe)
        .write(ThreadWrite::new("t-mix", 1, 1, &two, ThreadStatus::Idle));
    assert_eq!(batch.ops().len(), 6);
    let committed = store.commit(batch).await.unwrap();
    assert_eq!(
        committed,
        Committed {
            version: Some(2),
            claims: vec![
                Claim::New,
                Claim::Existing {
                    status: EffectStatus::Succeeded,
                    output: Some(output.clone())
                },
                Claim::New,
            ]
        },
        "a claim per intent and key's claim, in order; the version after the last write"
    );
    assert_eq!(
        store.messages("t-mix").await.unwrap(),
        [Message::user("one"), Message::assistant("two")],
        "the second write follows the first"
    );
    let journal = store.journal("t-mix").await.unwrap();
    let statuses: Vec<_> = journal.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses,
        [
            EffectStatus::Succeeded,
            EffectStatus::Intended,
            EffectStatus::Intended
        ]
    );

    // An operation sees the batch's earlier ones: a call intended and settled in one batch.
    let quick = call("c4", 3);
    let settle_quick = Settlement {
        entry: &quick,
        status: EffectStatus::Failed,
        output: &output,
    };
    let committed = store
        .commit(Batch::new().intend(&quick).settle(settle_quick))
        .await
        .unwrap();
    assert_eq!(committed.claims, [Claim::New]);
    assert_eq!(committed.version, None, "no write, no version");
    assert_eq!(
        claim_key(store, "r-mix:c4", "t-mix").await.unwrap(),
        Claim::Existing {
            status: EffectStatus::Failed,
            output: Some(output)
        },
        "the intent's claim is settled by the batch's settlement"
    );
}

pub(super) async fn all_or_nothing<S: Store>(store: &S) {
    let first = [Message::user("first")];
    let v1 = started(store, "t-all", &first).await;
    let earlier = payment("t-all", "r-all", "c1");
    intend(store, &earlier).await.unwrap();
    let before = snapshot(store).await;

    let (new, output) = (payment("t-all", "r-all", "c2"), json!("done"));
    let settled = Settlement {
        entry: &earlier,
        status: EffectStatus::Succeeded,
        output: &output,
    };
    let (more, late) = ([Message::assistant("more")], [Message::user("late")]);
    // Everything before the last operation would succeed; the last one conflicts.
    let batch = Batch::new()
        .settle(settled)
        .intend(&new)
        .claim_key("r-all:alone", "t-all")
        .write(ThreadWrite::new(
            "t-all",
            v1,
            1,
            &more,
            ThreadStatus::Running,
        ))
        .write(ThreadWrite::new("t-all", v1, 2, &late, ThreadStatus::Idle));
    let conflict = store.commit(batch).await;
    assert!(
        matches!(
            conflict,
            Err(StoreError::Conflict {
                expected,
                found,
                ..
            }) if expected == v1 && found == v1 + 1
        ),
        "the batch fails with its last operation's error: {conflict:?}"
    );
    assert_eq!(
        snapshot(store).await,
        before,
        "a batch whose last operation conflicts writes nothing"
    );
    assert_eq!(
        claim_key(store, "r-all:c2", "t-all").await.unwrap(),
        Claim::New,
        "nor claims its intent's key"
    );
    assert_eq!(
        claim_key(store, "r-all:alone", "t-all").await.unwrap(),
        Claim::New,
        "nor the key it claimed alone"
    );

    // A write, then a settlement of a call never intended: NotFound, the write undone.
    let missing = payment("t-all", "r-all", "c9");
    let batch = Batch::new()
        .write(ThreadWrite::new("t-all", v1, 1, &more, ThreadStatus::Idle))
        .settle(Settlement {
            entry: &missing,
            status: EffectStatus::Failed,
            output: &output,
        });
    let not_found = store.commit(batch).await;
    assert!(
        matches!(not_found, Err(StoreError::NotFound(_))),
        "{not_found:?}"
    );
    let (thread, messages) = (snapshot(store).await.0, store.messages("t-all").await);
    assert_eq!(
        (thread.version, thread.status, messages.unwrap()),
        (v1, ThreadStatus::Running, first.to_vec()),
        "a batch whose settlement fails writes no message"
    );

    // A write keeping more messages than the thread has, after an intent: Corrupt, no intent.
    let batch = Batch::new().intend(&new).write(ThreadWrite::new(
        "t-all",
        v1,
        5,
        &more,
        ThreadStatus::Idle,
    ));
    assert!(matches!(
        store.commit(batch).await,
        Err(StoreError::Corrupt(_))
    ));
    assert_eq!(
        store.journal("t-all").await.unwrap().len(),
        1,
        "a batch whose write fails records no intent"
    );
}

/// The thread `t-all` and its journal, as stored.
async fn snapshot<S: Store>(store: &S) -> (Thread, Vec<JournalEntry>) {
    let thread = store.thread("t-all").await.unwrap().unwrap();
    (thread, store.journal("t-all").await.unwrap())
}
