//! [`RunLog`]: where a run records itself as it goes, so that a crash loses no result and runs
//! no side effect twice (docs/store.md).
//!
//! The loop calls it in a fixed order. It saves the thread once the run has claimed it, then
//! after each step's assistant message, before any of its calls runs
//! ([`RunLog::save_before_calls`] when they run one by one). For each call it records
//! the intent before executing ([`RunLog::intend`], which may also say not to execute) and the
//! outcome after ([`RunLog::settle`], or [`RunLog::settle_before_save`] when a save follows at
//! once). It saves the tool message with the result before the
//! next call starts (sequential execution) or before the next step (parallel execution).
//! When the run ends it saves the final state: finished, paused with what it waits for, or
//! failed.
//!
//! A run with a log stops at the first failure to record (`STORE_FAILED`): it never goes on
//! unrecorded, and never executes a call whose intent was not recorded first. The
//! `toolsmith` crate implements this trait over its stores (`toolsmith::durable`).

use async_trait::async_trait;
use serde_json::Value;
use toolsmith_core::{Message, Pause, ToolError, ToolOutput};

use crate::CallOutcome;

/// A run's durable record: its thread, and a journal of its tool calls.
///
/// Only [`save`](Self::save) is required: a log that keeps the thread alone gets every message
/// saved at the points above, and every call executed.
#[async_trait]
pub trait RunLog: Send + Sync + 'static {
    /// Saves the thread. `messages` is all of it (the agent's instructions excluded); the
    /// first `unchanged` are as given to the previous save (for the first save: as in the
    /// run's input), so only the rest need writing. `state` is where the run stands.
    async fn save(
        &self,
        messages: &[Message],
        unchanged: usize,
        state: RunState<'_>,
    ) -> Result<(), RunLogError>;

    /// Saves the thread as [`save`](Self::save) does, right before the step's calls run one
    /// by one (sequential execution). It need only be on record once the first call's intent
    /// is ([`intend`](Self::intend)), or, when no call runs, once the next save returns
    /// (which covers the same messages): a log may write it with the first intent, one commit
    /// instead of two. The default saves at once.
    async fn save_before_calls(
        &self,
        messages: &[Message],
        unchanged: usize,
        state: RunState<'_>,
    ) -> Result<(), RunLogError> {
        self.save(messages, unchanged, state).await
    }

    /// Records that `call` is about to execute, and says whether it may. The default records
    /// nothing and lets it.
    async fn intend(&self, call: &LoggedCall<'_>) -> Result<Intent, RunLogError> {
        let _ = call;
        Ok(Intent::Execute)
    }

    /// Records what became of a call [`intend`](Self::intend) let execute, or resolved.
    async fn settle(&self, call: &LoggedCall<'_>, settled: Settled<'_>) -> Result<(), RunLogError> {
        let _ = (call, settled);
        Ok(())
    }

    /// Records what became of a call, as [`settle`](Self::settle) does, when the loop saves
    /// the thread right after it (sequential execution saves each result before the next call
    /// starts). The outcome need only be on record once that [`save`](Self::save) returns, so
    /// a log may write both at once: one commit per call instead of two. Nothing happens
    /// between the two that a crash could separate from the call itself. The default settles
    /// at once.
    async fn settle_before_save(
        &self,
        call: &LoggedCall<'_>,
        settled: Settled<'_>,
    ) -> Result<(), RunLogError> {
        self.settle(call, settled).await
    }
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
}

/// A tool call as the log records it.
#[derive(Debug, Clone, Copy)]
pub struct LoggedCall<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The call's id.
    pub tool_call_id: &'a str,
    /// The tool.
    pub tool_name: &'a str,
    /// The validated input.
    pub input: &'a Value,
    /// Whether the tool changes the world.
    pub side_effect: bool,
    /// Whether running it twice with the same input is safe.
    pub idempotent: bool,
    /// The key the tool sees (`<run id>:<tool call id>`): stable across attempts of this call.
    pub idempotency_key: &'a str,
    /// Whether the tool declares that it uses the key (seed 001's `acceptsIdempotencyKey`).
    pub accepts_idempotency_key: bool,
    /// Whether the tool has a revert hook (seed 001's `hasRevert`).
    pub has_revert: bool,
}

impl LoggedCall<'_> {
    /// Whether an interrupted execution may not simply be repeated: `side_effect` and not
    /// `idempotent`.
    pub fn unsafe_to_repeat(&self) -> bool {
        self.side_effect && !self.idempotent
    }
}

/// What [`RunLog::intend`] decides for a call.
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

/// What became of a call, for [`RunLog::settle`].
#[derive(Debug, Clone, Copy)]
pub enum Settled<'a> {
    /// It returned this output (also: a reconcile hook found it had).
    Succeeded(&'a ToolOutput),
    /// It failed and its effect is known not to stand: its revert hook undid it
    /// (`EFFECT_REVERTED`).
    Failed(&'a ToolError),
    /// It failed and whether it had its effect is not known: it returned this error (seed 001
    /// records every thrown error so), or it was interrupted and nothing could tell
    /// (`EFFECT_UNKNOWN`).
    Unknown(&'a ToolError),
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

/// Called after each successful call of a side-effecting tool (seed 001's
/// `durabilitySnapshot(toolName, toolUseId)`): a place to checkpoint what the effect changed,
/// such as committing a workspace. Its errors are logged and swallowed; it never fails the call.
#[async_trait]
pub trait DurabilitySnapshot: Send + Sync + 'static {
    /// Takes the snapshot after `tool_name`'s call `tool_call_id`.
    async fn snapshot(&self, tool_name: &str, tool_call_id: &str) -> Result<(), String>;
}
