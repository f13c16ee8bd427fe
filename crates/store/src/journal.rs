//! The tool-call journal (Smithers' `recordToolCall`) and the idempotency ledger.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call as the journal records it: written `intended` before the call executes,
/// settled with its outcome after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    /// The thread.
    pub thread_id: String,
    /// The run.
    pub run_id: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The order of calls within the thread, from 0.
    pub seq: u64,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The validated input.
    pub input: Value,
    /// Whether the tool changes the world.
    pub side_effect: bool,
    /// Whether running it twice is safe.
    pub idempotent: bool,
    /// The call's idempotency key (`<run id>:<tool call id>`, or the Smithers form): handed to
    /// the tool, and the key the ledger claims for a call unsafe to repeat. Smithers records
    /// the key only for a tool that accepts it (null otherwise); here the runtime's ledger
    /// uses it whether or not the tool reads it, so it is always recorded, and
    /// [`accepts_idempotency_key`](Self::accepts_idempotency_key) says whether the tool did.
    pub idempotency_key: Option<String>,
    /// Whether the tool declares that it uses the key (Smithers' `acceptsIdempotencyKey`).
    #[serde(default)]
    pub accepts_idempotency_key: bool,
    /// Whether the tool has a revert hook (Smithers' `hasRevert`).
    #[serde(default)]
    pub has_revert: bool,
    /// Where the call stands.
    pub status: EffectStatus,
    /// The result, once settled: the app value, or the error (`{code, message}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// A call's outcome to record ([`Op::Settle`](crate::Op::Settle)).
#[derive(Debug, Clone, Copy)]
pub struct Settlement<'a> {
    /// The call's entry, as intended.
    pub entry: &'a JournalEntry,
    /// What became of it.
    pub status: EffectStatus,
    /// Its output: the app value, or the error (`{code, message}`).
    pub output: &'a Value,
}

impl JournalEntry {
    /// The idempotency key the ledger claims for this call: its key, when the call is unsafe to
    /// repeat (`side_effect && !idempotent`).
    pub fn key_to_claim(&self) -> Option<&str> {
        self.idempotency_key
            .as_deref()
            .filter(|_| self.side_effect && !self.idempotent)
    }

    /// Whether `other` records the same attempt of the same call: the journal's key (thread,
    /// run, tool call id, attempt).
    pub(crate) fn same_attempt(&self, other: &JournalEntry) -> bool {
        self.thread_id == other.thread_id
            && self.run_id == other.run_id
            && self.tool_call_id == other.tool_call_id
            && self.attempt == other.attempt
    }

    /// How errors name its record: `journal entry <run>/<call>/<attempt>`.
    pub(crate) fn record_name(&self) -> String {
        format!(
            "journal entry {}/{}/{}",
            self.run_id, self.tool_call_id, self.attempt
        )
    }
}

/// Smithers' effect statuses. The phase follows: `started` while `intended`, `finished`
/// once `succeeded`, `failed` once `failed` or `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EffectStatus {
    /// About to execute; if it stays so, the process died during the call.
    Intended,
    /// Executed and returned a result.
    Succeeded,
    /// Failed, its effect known not to stand (a revert hook undid it).
    Failed,
    /// Failed, and whether it had its effect is not known: the tool returned an error
    /// (Smithers records every thrown error so), or a crash interrupted it and nothing could tell.
    Unknown,
}

impl EffectStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectStatus::Intended => "intended",
            EffectStatus::Succeeded => "succeeded",
            EffectStatus::Failed => "failed",
            EffectStatus::Unknown => "unknown",
        }
    }

    /// Smithers' phase: `started` or `finished` / `failed`.
    pub fn phase(self) -> &'static str {
        match self {
            EffectStatus::Intended => "started",
            EffectStatus::Succeeded => "finished",
            EffectStatus::Failed | EffectStatus::Unknown => "failed",
        }
    }

    /// The status a stored name names.
    pub fn parse(name: &str) -> Option<EffectStatus> {
        [
            EffectStatus::Intended,
            EffectStatus::Succeeded,
            EffectStatus::Failed,
            EffectStatus::Unknown,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// What the idempotency ledger knows of a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The key was not there: it is recorded `intended` now, and the call may execute.
    New,
    /// The key was claimed before: the effect may have happened. Do not execute blindly.
    Existing {
        /// Its status.
        status: EffectStatus,
        /// Its result, when settled.
        output: Option<Value>,
    },
}
