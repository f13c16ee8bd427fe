//! [`RunLog`]: the backend a run records itself in, one batch per commit.

use async_trait::async_trait;
use serde_json::Value;
use toolsmith_core::{Message, Pause, ToolError, ToolOutput};

use crate::CallOutcome;

/// A run's durable record: its thread, and a journal of its tool calls. One required method:
/// write a [`LogBatch`] as one transaction.
///
/// The run never calls it directly: its [`Journal`](super) composes the batches (see the
/// [module docs](super) for what goes into which commit). A log that keeps the thread alone
/// writes [`LogBatch::save`], ignores the rest and lets every call execute
/// ([`Committed::default`]).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolsmith_agent::{Committed, LogBatch, RunLog, RunLogError};
/// use toolsmith_core::{async_trait, Message};
///
/// /// Keeps the latest thread in memory.
/// #[derive(Default)]
/// struct Latest(Mutex<Vec<Message>>);
///
/// #[async_trait]
/// impl RunLog for Latest {
///     async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError> {
///         if let Some(save) = batch.save {
///             let mut thread = self.0.lock().unwrap();
///             thread.truncate(save.unchanged);
///             thread.extend_from_slice(save.tail);
///         }
///         Ok(Committed::default())
///     }
/// }
/// ```
#[async_trait]
pub trait RunLog: Send + Sync + 'static {
    /// Writes `batch` durably, all or nothing: first the outcomes of the calls that ended
    /// ([`LogBatch::settled`]), then the thread ([`LogBatch::save`]), then the intent of the call
    /// about to execute ([`LogBatch::intend`]), whose fate it decides ([`Committed::intent`]).
    /// An empty batch writes nothing.
    ///
    /// A call without side effects ([`LoggedCall::side_effect`] false) comes in a batch of its
    /// own, and its intent need not be written: running it again after a crash is harmless, so
    /// the log may record it once, with its outcome, in the commit that settles it.
    async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError>;
}

/// What one commit writes, in this order (see [`RunLog::commit`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LogBatch<'a> {
    /// Calls that ended, with what became of them.
    pub settled: &'a [SettledCall],
    /// The thread.
    pub save: Option<ThreadSave<'a>>,
    /// A call about to execute.
    pub intend: Option<&'a LoggedCall>,
}

impl LogBatch<'_> {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.settled.is_empty() && self.save.is_none() && self.intend.is_none()
    }
}

/// The thread as the run saves it: its first `unchanged` messages as given to the previous
/// save (for the first save: as in the run's input), then `tail`. The agent's instructions are
/// not part of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadSave<'a> {
    /// How many leading messages are as the log holds them already.
    pub unchanged: usize,
    /// The messages after them.
    pub tail: &'a [Message],
    /// Where the run stands.
    pub state: RunState<'a>,
}

/// What a commit decided.
#[derive(Debug, Clone, Default)]
pub struct Committed {
    /// The fate of [`LogBatch::intend`]'s call; `None` (a batch without one, or a log that keeps
    /// no journal) lets it execute.
    pub intent: Option<Intent>,
}

/// Where a run stands when the thread is saved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunState<'a> {
    /// Going on: a crash now leaves a thread to resume.
    Running,
    /// Waiting for answers (approvals, client results).
    Paused(&'a [Pause]),
    /// Done: the thread may take another message.
    Finished,
    /// Stopped by an error (the model's, a fatal tool error, cancellation).
    Failed,
    /// Handed back ([`RunInput::handback`](crate::RunInput::handback)): still running, but
    /// held by no process any more, so that any process may resume it at once.
    HandedBack,
}

/// A tool call as the log records it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCall {
    /// The run.
    pub run_id: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The validated input.
    pub input: Value,
    /// Whether the tool changes the world.
    pub side_effect: bool,
    /// Whether running it twice with the same input is safe.
    pub idempotent: bool,
    /// The key the tool sees ([`ToolContext::idempotency_key`]: the run's Smithers key when it
    /// carries Smithers context, else `<run id>:<tool call id>`), stable across attempts of
    /// this call — as Smithers records it: only when the tool declares it reads it
    /// ([`accepts_idempotency_key`](Self::accepts_idempotency_key)), `None` otherwise.
    ///
    /// A Smithers key is shared by every call of one task iteration, so it never identifies a
    /// call: a log tells calls apart by [`run_id`](Self::run_id) and
    /// [`tool_call_id`](Self::tool_call_id) (the store's idempotency ledger keys on those).
    ///
    /// [`ToolContext::idempotency_key`]: toolsmith_core::ToolContext::idempotency_key
    pub idempotency_key: Option<String>,
    /// Whether the tool declares that it uses the key (Smithers' `acceptsIdempotencyKey`).
    pub accepts_idempotency_key: bool,
    /// Whether the tool has a revert hook (Smithers' `hasRevert`).
    pub has_revert: bool,
}

impl LoggedCall {
    /// Whether an interrupted execution may not simply be repeated: `side_effect` and not
    /// `idempotent`.
    pub fn unsafe_to_repeat(&self) -> bool {
        self.side_effect && !self.idempotent
    }
}

/// What a commit decides for a call about to execute.
#[derive(Debug, Clone)]
pub enum Intent {
    /// The intent is recorded: execute it.
    Execute,
    /// An earlier attempt finished and recorded this outcome: use it, do not execute again.
    Recorded(Box<CallOutcome>),
    /// An earlier attempt of a call that is [unsafe to repeat](LoggedCall::unsafe_to_repeat)
    /// started and was never settled: its effect may have happened. The tool's
    /// [`Reconcile`](toolsmith_core::Reconcile) or [`Revert`](toolsmith_core::Revert) hook
    /// resolves it if it has one; otherwise the model is told and decides.
    Unsettled {
        /// The attempt that started (from 1).
        attempt: u32,
        /// Its place in the thread's journal.
        seq: u64,
    },
}

/// A call that ended, and what became of it.
#[derive(Debug, Clone)]
pub struct SettledCall {
    /// The call, as its intent recorded it.
    pub call: LoggedCall,
    /// What became of it.
    pub settled: Settled,
}

/// What became of a call.
#[derive(Debug, Clone)]
pub enum Settled {
    /// It returned this output (also: a reconcile hook found it had).
    Succeeded(ToolOutput),
    /// It failed and its effect is known not to stand: its revert hook undid it
    /// (`EFFECT_REVERTED`).
    Failed(ToolError),
    /// It failed and whether it had its effect is not known: it returned this error (Smithers
    /// records every thrown error so), it was stopped before it returned (timed out,
    /// cancelled), or it was interrupted and nothing could tell (`EFFECT_UNKNOWN`).
    Unknown(ToolError),
}

/// A log that could not record: the run stops (`STORE_FAILED`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RunLogError(pub String);

impl RunLogError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        RunLogError(message.into())
    }
}

/// Called after each successful call of a side-effecting tool (Smithers'
/// `durabilitySnapshot(toolName, toolUseId)`): a place to checkpoint what the effect changed,
/// such as committing a workspace. Its errors are logged and swallowed; it never fails the call.
#[async_trait]
pub trait DurabilitySnapshot: Send + Sync + 'static {
    /// Takes the snapshot after `tool_name`'s call `tool_call_id`.
    async fn snapshot(&self, tool_name: &str, tool_call_id: &str) -> Result<(), String>;
}
