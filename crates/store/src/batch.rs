//! [`Batch`]: the writes [`Store::commit`](crate::Store::commit) makes as one transaction.

use crate::{Claim, EventEnd, JournalEntry, Settlement, ThreadWrite};

/// Writes to commit together, in order, as one transaction: all of them or none.
///
/// What a run writes at its save points is a batch: a step's assistant message with its first
/// call's intent (`[Write, Intend]`), a call's outcome with the save of its result
/// (`[Settle, Write]`), an intent alone (`[Intend]`), the save of a result with its call, one
/// without side effects, recorded as it ended (`[Write, Intend]`).
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::Message;
/// use toolsmith_store::{
///     Batch, Claim, EffectStatus, JournalEntry, MemoryStore, NewThread, Store, ThreadStatus,
///     ThreadWrite,
/// };
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// store.create_thread(NewThread::new("t1")).await.unwrap();
/// let step = [Message::user("Pay Bob."), Message::assistant("Paying.")];
/// let call = JournalEntry {
///     thread_id: "t1".into(),
///     run_id: "r1".into(),
///     tool_call_id: "c1".into(),
///     tool_name: "pay".into(),
///     seq: 0,
///     attempt: 1,
///     input: json!({"to": "bob"}),
///     side_effect: true,
///     idempotent: false,
///     idempotency_key: Some("r1:c1".into()),
///     accepts_idempotency_key: true,
///     has_revert: false,
///     status: EffectStatus::Intended,
///     output: None,
/// };
/// // The step's save with its call's intent, and the claim of the call's key: one commit.
/// let save = ThreadWrite::new("t1", 0, 0, &step, ThreadStatus::Running);
/// let committed = store.commit(Batch::new().write(save).intend(&call)).await.unwrap();
/// assert_eq!(committed.version, Some(1));
/// assert_eq!(committed.claims, [Claim::New]);
/// assert_eq!(store.journal("t1").await.unwrap(), [call]);
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct Batch<'a> {
    ops: Vec<Op<'a>>,
}

/// One write of a [`Batch`].
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    /// Settles the journal entry's attempt (found by its thread, run, tool call id and
    /// attempt; its other fields are not read) with its outcome and, when the call is unsafe
    /// to repeat ([`JournalEntry::key_to_claim`]), its idempotency key with the same outcome.
    /// A key may be settled again (a journal entry catching up with its key's outcome settles
    /// the key with what it holds). Fails with [`StoreError::NotFound`](crate::StoreError)
    /// when the entry, or the key it settles, was not recorded.
    Settle(Settlement<'a>),
    /// Writes the thread's tail: keeps its first `keep` messages, drops the rest, appends
    /// `messages` (`keep` = the count appends; one less rewrites the last message), sets its
    /// status and pending items and bumps its version. Fails with
    /// [`StoreError::Conflict`](crate::StoreError) when the thread's version is not
    /// `expected`, [`StoreError::NotFound`](crate::StoreError) when there is no such thread and
    /// [`StoreError::Corrupt`](crate::StoreError) when `keep` is past the end.
    Write(ThreadWrite<'a>),
    /// Records a call as the entry stands — `intended`, before it executes, or settled with
    /// its output, for a call without side effects recorded once it ended (recording the same
    /// attempt twice keeps the first record) — and, when it is unsafe to repeat, claims its
    /// idempotency key: one [`Claim`] ([`Claim::New`] for a call with no key to claim).
    Intend(&'a JournalEntry),
    /// Claims an idempotency key alone (the key of an attempt a crash interrupted, whose
    /// intent is recorded): one [`Claim`].
    ClaimKey {
        /// The key.
        key: &'a str,
        /// The thread its call belongs to.
        thread: &'a str,
    },
    /// Releases a thread: clears its holder ([`Thread::holder`](crate::Thread)), leaving its
    /// status and version as they are. A running thread without a holder was handed back by
    /// its run, which stopped at a safe point: any process may resume it at once
    /// ([`Thread::held_within`](crate::Thread::held_within)). Fails with
    /// [`StoreError::NotFound`](crate::StoreError) when there is no such thread.
    Release(&'a str),
    /// Sets an event's status and detail (and `updated_at` to now), as
    /// [`ServiceStore::update_event`](crate::ServiceStore::update_event) does: the event of a
    /// run whose last save this batch is. Fails with [`StoreError::NotFound`](crate::StoreError)
    /// naming the event id when there is no such event.
    SettleEvent(&'a EventEnd),
}

impl<'a> Batch<'a> {
    /// An empty batch (committing it writes nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an [`Op::Settle`].
    pub fn settle(mut self, settled: Settlement<'a>) -> Self {
        self.ops.push(Op::Settle(settled));
        self
    }

    /// Adds an [`Op::Write`].
    pub fn write(mut self, write: ThreadWrite<'a>) -> Self {
        self.ops.push(Op::Write(write));
        self
    }

    /// Adds an [`Op::Intend`].
    pub fn intend(mut self, entry: &'a JournalEntry) -> Self {
        self.ops.push(Op::Intend(entry));
        self
    }

    /// Adds an [`Op::Release`].
    pub fn release(mut self, thread: &'a str) -> Self {
        self.ops.push(Op::Release(thread));
        self
    }

    /// Adds an [`Op::ClaimKey`].
    pub fn claim_key(mut self, key: &'a str, thread: &'a str) -> Self {
        self.ops.push(Op::ClaimKey { key, thread });
        self
    }

    /// Adds an [`Op::SettleEvent`].
    pub fn settle_event(mut self, end: &'a EventEnd) -> Self {
        self.ops.push(Op::SettleEvent(end));
        self
    }

    /// Its writes, in order.
    pub fn ops(&self) -> &[Op<'a>] {
        &self.ops
    }

    /// Whether it writes nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

impl<'a> Extend<Op<'a>> for Batch<'a> {
    fn extend<I: IntoIterator<Item = Op<'a>>>(&mut self, ops: I) {
        self.ops.extend(ops);
    }
}

/// What a committed [`Batch`] came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Committed {
    /// The thread's version after the batch's last [`Op::Write`], if it had one.
    pub version: Option<u64>,
    /// One claim per [`Op::Intend`] and [`Op::ClaimKey`], in the batch's order.
    pub claims: Vec<Claim>,
}
