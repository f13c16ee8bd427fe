//! The run's journal: a run with a [`RunLog`] records itself as it goes, so that a crash loses
//! no result and runs no side effect twice.
//!
//! Two parts, and one type between them and the log:
//! - the loop saves the thread at its save points: once the run has claimed it, after each
//!   step's assistant message (before any of its calls runs), after each call's result
//!   (sequential execution) or after the step's results (parallel), and at the end (finished,
//!   paused with what it waits for, or failed);
//! - the [`JournalLayer`], the innermost layer of every call (over the catch-panic layer),
//!   records the call's intent before it executes — and executes it only if the log says so
//!   ([`Intent`]): a recorded outcome is reused, an interrupted attempt of a call unsafe to
//!   repeat is reconciled, reverted or reported — then its outcome after.
//!
//! [`Journal`] composes the log's commits, and is the only place that does: two per call with
//! side effects, one per call without.
//! - A save made right before a step's calls run one by one is written with the first
//!   side-effecting call's intent (or with the next save, whichever comes first).
//! - A call's outcome waits for the save of its result when the loop saves each result as its
//!   call ends (sequential execution: [`Journal::outcomes_wait_for_save`]) and no snapshot hook
//!   runs in between; otherwise (parallel execution, where other calls still run before the
//!   save) it is written at once. Nothing happens between a waiting outcome and its save that a
//!   crash could separate from the call itself.
//! - A call without side effects ([`LoggedCall::side_effect`] false) is one commit, not two:
//!   the log decides its fate without writing (a recorded outcome is still reused), what waits
//!   goes on waiting, and the call is recorded once, with its outcome, in the next save. A crash
//!   before that save runs it again, which such a call may (measured on the service's two-call
//!   run: one SQLite commit of six gone).
//! - A call stopped before it returned (timed out, or the run cancelled) is settled `unknown`
//!   with the next commit.
//!
//! A run with a log stops at the first failure to record (`STORE_FAILED`): it never goes on
//! unrecorded, and never executes a side-effecting call whose intent was not recorded first. The store crate
//! implements [`RunLog`] over its stores.

mod catch_panic;
mod layer;
mod log;
mod snapshot;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use toolsmith_core::{Message, Pause};

pub(crate) use catch_panic::{CatchPanicLayer, catch_panic, panic_message};
pub(crate) use layer::JournalLayer;
pub use layer::{EFFECT_REVERTED, EFFECT_UNKNOWN, STORE_FAILED};
pub use log::{
    Committed, DurabilitySnapshot, Intent, LogBatch, LoggedCall, RunLog, RunLogError, RunState,
    Settled, SettledCall, ThreadSave,
};
pub(crate) use snapshot::SnapshotLayer;

/// The commits of one run's log (see the [module docs](self)); shared by the loop and the
/// [`JournalLayer`].
pub(crate) struct Journal {
    log: Arc<dyn RunLog>,
    staged: Mutex<Staged>,
    /// Whether outcomes wait for the save of their result (set per step by the loop).
    outcomes_wait: AtomicBool,
    /// A snapshot hook runs between a call and its save: outcomes never wait then.
    snapshot: bool,
    /// The calls whose outcome an earlier attempt recorded, reused without running them.
    replayed: Mutex<HashSet<String>>,
}

/// What waits for the next commit.
#[derive(Default)]
struct Staged {
    save: Option<OwnedSave>,
    settled: Vec<SettledCall>,
}

/// A save kept for the next commit.
struct OwnedSave {
    unchanged: usize,
    tail: Vec<Message>,
    state: OwnedState,
}

/// [`RunState`], owned.
enum OwnedState {
    Running,
    Paused(Vec<Pause>),
    Finished,
    Failed,
    HandedBack,
}

impl Journal {
    /// The journal of a run recorded in `log`; `snapshot` when a snapshot hook runs after calls.
    pub(crate) fn new(log: Arc<dyn RunLog>, snapshot: bool) -> Journal {
        Journal {
            log,
            staged: Mutex::default(),
            outcomes_wait: AtomicBool::new(false),
            snapshot,
            replayed: Mutex::default(),
        }
    }

    /// Notes that call `tool_call_id` got the outcome an earlier attempt recorded.
    pub(crate) fn note_replayed(&self, tool_call_id: &str) {
        let mut replayed = self.replayed.lock().unwrap_or_else(|p| p.into_inner());
        replayed.insert(tool_call_id.to_owned());
    }

    /// Whether call `tool_call_id` got the outcome an earlier attempt recorded (it did not run
    /// in this run: it has no time of its own).
    pub(crate) fn was_replayed(&self, tool_call_id: &str) -> bool {
        let replayed = self.replayed.lock().unwrap_or_else(|p| p.into_inner());
        replayed.contains(tool_call_id)
    }

    /// Says whether the loop saves each call's result as soon as the call ends (the step's
    /// calls run one by one), so that outcomes may wait for that save.
    pub(crate) fn outcomes_wait_for_save(&self, wait: bool) {
        self.outcomes_wait.store(wait, Ordering::Relaxed);
    }

    /// Saves the thread now, with the outcomes waiting for it. A save still waiting for an
    /// intent is written as part of this one.
    pub(crate) async fn save(&self, save: ThreadSave<'_>) -> Result<(), RunLogError> {
        self.commit_staged(Some(save), None, None).await.map(drop)
    }

    /// Keeps the thread as it stands right before a step's calls run one by one, to write with
    /// the first call's intent (or the next save).
    pub(crate) fn save_with_next_intent(&self, save: ThreadSave<'_>) {
        let owned = OwnedSave {
            unchanged: save.unchanged,
            tail: save.tail.to_vec(),
            state: OwnedState::of(save.state),
        };
        let mut staged = self.lock();
        staged.save = Some(match staged.save.take() {
            Some(earlier) => earlier.merge(owned.borrow()),
            None => owned,
        });
    }

    /// Records that `call` is about to execute (with whatever waits), and returns its fate. A
    /// call without side effects is only asked about: what waits goes on waiting, and the log
    /// may leave its intent for the commit that settles it.
    pub(crate) async fn intend(&self, call: &LoggedCall) -> Result<Intent, RunLogError> {
        let committed = match call.side_effect {
            true => self.commit_staged(None, Some(call), None).await?,
            false => {
                let batch = LogBatch {
                    intend: Some(call),
                    ..LogBatch::default()
                };
                self.log.commit(batch).await?
            }
        };
        Ok(committed.intent.unwrap_or(Intent::Execute))
    }

    /// Records what became of a call: kept for the save of its result when outcomes wait for
    /// it or the call has no side effects, written at once (with whatever waits) otherwise.
    pub(crate) async fn settle(&self, done: SettledCall) -> Result<(), RunLogError> {
        let wait = self.outcomes_wait.load(Ordering::Relaxed) && !self.snapshot;
        if wait || !done.call.side_effect {
            self.lock().settled.push(done);
            return Ok(());
        }
        self.commit_staged(None, None, Some(done)).await.map(drop)
    }

    /// Keeps an outcome for the next commit, whatever it is (a call stopped before it
    /// returned: there is no waiting from where it is recorded).
    pub(crate) fn settle_later(&self, done: SettledCall) {
        self.lock().settled.push(done);
    }

    /// Commits what is staged with `save` (merged after the staged save), `intend` and `done`
    /// (after the staged outcomes), in one batch.
    async fn commit_staged(
        &self,
        save: Option<ThreadSave<'_>>,
        intend: Option<&LoggedCall>,
        done: Option<SettledCall>,
    ) -> Result<Committed, RunLogError> {
        let Staged {
            save: staged,
            mut settled,
        } = std::mem::take(&mut *self.lock());
        settled.extend(done);
        let merged = staged.map(|staged| match save {
            Some(save) => staged.merge(save),
            None => staged,
        });
        let save = merged.as_ref().map(OwnedSave::borrow).or(save);
        let batch = LogBatch {
            settled: &settled,
            save,
            intend,
        };
        self.log.commit(batch).await
    }

    fn lock(&self) -> MutexGuard<'_, Staged> {
        // A panic while holding the lock leaves the data itself intact.
        self.staged.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl OwnedSave {
    fn borrow(&self) -> ThreadSave<'_> {
        ThreadSave {
            unchanged: self.unchanged,
            tail: &self.tail,
            state: match &self.state {
                OwnedState::Running => RunState::Running,
                OwnedState::Paused(pending) => RunState::Paused(pending),
                OwnedState::Finished => RunState::Finished,
                OwnedState::Failed => RunState::Failed,
                OwnedState::HandedBack => RunState::HandedBack,
            },
        }
    }

    /// This save followed by `later`, as one: `later`'s unchanged messages that this one had
    /// not written yet come from this one's tail.
    fn merge(self, later: ThreadSave<'_>) -> OwnedSave {
        let unchanged = self.unchanged.min(later.unchanged);
        let carried = later.unchanged.saturating_sub(self.unchanged);
        let mut tail = self.tail;
        tail.truncate(carried);
        tail.extend_from_slice(later.tail);
        OwnedSave {
            unchanged,
            tail,
            state: OwnedState::of(later.state),
        }
    }
}

impl OwnedState {
    fn of(state: RunState<'_>) -> OwnedState {
        match state {
            RunState::Running => OwnedState::Running,
            RunState::Paused(pending) => OwnedState::Paused(pending.to_vec()),
            RunState::Finished => OwnedState::Finished,
            RunState::Failed => OwnedState::Failed,
            RunState::HandedBack => OwnedState::HandedBack,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(save: &ThreadSave<'_>) -> Vec<String> {
        save.tail.iter().map(Message::text).collect()
    }

    #[test]
    fn a_save_merged_into_a_later_one_supplies_what_the_later_took_as_unchanged() {
        // Written: 2 messages. Staged: 2 unchanged + [a, b]. Later: 3 unchanged + [c'].
        let staged = OwnedSave {
            unchanged: 2,
            tail: vec![Message::user("a"), Message::user("b")],
            state: OwnedState::Running,
        };
        let later = [Message::user("c'")];
        let merged = staged.merge(ThreadSave {
            unchanged: 3,
            tail: &later,
            state: RunState::Finished,
        });
        let save = merged.borrow();
        assert_eq!(save.unchanged, 2);
        assert_eq!(texts(&save), ["a", "c'"]);
        assert_eq!(save.state, RunState::Finished);
    }

    #[test]
    fn a_later_save_that_rewrites_more_keeps_its_own_start() {
        let staged = OwnedSave {
            unchanged: 4,
            tail: vec![Message::user("e")],
            state: OwnedState::Running,
        };
        let later = [Message::user("d'"), Message::user("e'")];
        let merged = staged.merge(ThreadSave {
            unchanged: 3,
            tail: &later,
            state: RunState::Running,
        });
        let save = merged.borrow();
        assert_eq!(save.unchanged, 3);
        assert_eq!(texts(&save), ["d'", "e'"]);
    }
}
