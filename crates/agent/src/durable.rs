//! One call under the run's log: the intent recorded before it executes, its outcome after, an
//! interrupted earlier attempt resolved instead of repeated blindly, and the durability
//! snapshot after a side effect.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::layer::LayerStack;
use toolsmith_core::{SharedTool, ToolContext, ToolError};

use crate::CallOutcome;
use crate::execute::{Job, execute};
use crate::run_log::{DurabilitySnapshot, Intent, LoggedCall, RunLog, RunLogError, Settled};

/// The code of a call whose interrupted attempt may or may not have had its effect.
pub const EFFECT_UNKNOWN: &str = "EFFECT_UNKNOWN";
/// The code of a call whose interrupted attempt was reverted by the tool's revert hook.
pub const EFFECT_REVERTED: &str = "EFFECT_REVERTED";
/// The code of the fatal error that stops a run whose log cannot record.
pub const STORE_FAILED: &str = "STORE_FAILED";

const UNKNOWN_MESSAGE: &str = "This call was interrupted (the process stopped while it ran, \
     before its outcome was recorded): it may or may not have taken effect. Verify the external \
     state before calling the tool again.";
const REVERTED_MESSAGE: &str = "This call was interrupted before its outcome was recorded, and \
     its effect, if it had one, has been reverted. Call the tool again if it is still needed.";

/// The run's log and snapshot hook, shared by its call runners.
#[derive(Clone, Default)]
pub(crate) struct Durable {
    pub(crate) log: Option<Arc<dyn RunLog>>,
    pub(crate) snapshot: Option<Arc<dyn DurabilitySnapshot>>,
    /// The loop saves the thread as soon as a call ends (sequential execution): outcomes go
    /// through [`RunLog::settle_before_save`].
    pub(crate) save_follows: bool,
}

impl Durable {
    /// Runs `job` through `stack`, recorded in the log if there is one.
    pub(crate) async fn run(&self, stack: &LayerStack, job: Job) -> CallOutcome {
        let Job {
            tool, input, cx, ..
        } = job;
        let Some(log) = &self.log else {
            let outcome = execute(stack, &tool, input, &cx).await;
            self.snapshot_after(&tool, &cx, &outcome).await;
            return outcome;
        };
        let meta = tool.meta();
        let call = LoggedCall {
            run_id: cx.run_id(),
            tool_call_id: cx.tool_call_id(),
            tool_name: cx.tool_name(),
            input: &input,
            side_effect: meta.side_effect,
            idempotent: meta.is_idempotent(),
            idempotency_key: cx.idempotency_key(),
            accepts_idempotency_key: meta.accepts_idempotency_key,
            has_revert: meta.revert.is_some(),
        };
        let outcome = match log.intend(&call).await {
            Err(e) => return store_failed("record the call before it runs", &e),
            Ok(Intent::Recorded(outcome)) => return *outcome,
            Ok(Intent::Execute) => execute(stack, &tool, input.clone(), &cx).await,
            Ok(Intent::Unsettled { attempt, seq }) => {
                resolve(stack, &tool, &input, &cx, attempt, seq).await
            }
        };
        let settled = match &outcome {
            CallOutcome::Output(output) => Some(Settled::Succeeded(output)),
            // Undone by the tool's revert hook: the effect is known not to stand.
            CallOutcome::Error(e) if e.code() == EFFECT_REVERTED => Some(Settled::Failed(e)),
            // Seed 001 records every error a tool throws as `unknown`: an error does not say
            // whether the effect happened before it.
            CallOutcome::Error(e) => Some(Settled::Unknown(e)),
            // A call that paused (a sub-agent's nested approval) runs again when resumed.
            CallOutcome::Paused(_) => None,
        };
        let recorded = match settled {
            None => Ok(()),
            // A snapshot hook runs between the call and the save: settled at once, so that a
            // crash during the snapshot keeps the outcome.
            Some(settled) if self.save_follows && self.snapshot.is_none() => {
                log.settle_before_save(&call, settled).await
            }
            Some(settled) => log.settle(&call, settled).await,
        };
        if let Err(e) = recorded {
            return store_failed("record the call's outcome", &e);
        }
        self.snapshot_after(&tool, &cx, &outcome).await;
        outcome
    }

    /// Seed 001's durability snapshot: after a successful call of a side-effecting tool; its
    /// failure is logged and swallowed.
    async fn snapshot_after(&self, tool: &SharedTool, cx: &ToolContext, outcome: &CallOutcome) {
        let Some(hook) = &self.snapshot else { return };
        if !tool.meta().side_effect || !matches!(outcome, CallOutcome::Output(_)) {
            return;
        }
        if let Err(e) = hook.snapshot(cx.tool_name(), cx.tool_call_id()).await {
            tracing::warn!(
                tool = cx.tool_name(),
                tool_call_id = cx.tool_call_id(),
                error = %e,
                "the durability snapshot failed (ignored)"
            );
        }
    }
}

/// Resolves an earlier attempt that started and was never settled: the tool's reconcile hook
/// says what became of it, or its revert hook undoes it; without either, or when the hook
/// fails, the outcome is unknown and the model is told.
async fn resolve(
    stack: &LayerStack,
    tool: &SharedTool,
    input: &Value,
    cx: &ToolContext,
    attempt: u32,
    seq: u64,
) -> CallOutcome {
    let meta = tool.meta();
    let failure = if let Some(reconcile) = &meta.reconcile {
        match reconcile.reconcile(input, cx).await {
            Ok(Some(output)) => return CallOutcome::Output(output),
            Ok(None) => return execute(stack, tool, input.clone(), cx).await,
            Err(e) => e,
        }
    } else if let Some(revert) = &meta.revert {
        match revert.revert(input, cx).await {
            Ok(()) => {
                return CallOutcome::Error(
                    ToolError::new(EFFECT_REVERTED, REVERTED_MESSAGE)
                        .with_details(json!({"attempt": attempt, "seq": seq})),
                );
            }
            Err(e) => e,
        }
    } else {
        return unknown(attempt, seq, None);
    };
    tracing::warn!(
        tool = cx.tool_name(),
        tool_call_id = cx.tool_call_id(),
        error = %failure.message(),
        "resolving an interrupted call failed; its outcome is unknown"
    );
    unknown(attempt, seq, Some(&failure))
}

/// The outcome of a call whose effect is unknown; the details carry what the resume warning
/// lists.
fn unknown(attempt: u32, seq: u64, hook_error: Option<&ToolError>) -> CallOutcome {
    let mut details = json!({"attempt": attempt, "seq": seq});
    if let Some(e) = hook_error {
        details["hookError"] = json!({"code": e.code(), "message": e.message()});
    }
    CallOutcome::Error(ToolError::new(EFFECT_UNKNOWN, UNKNOWN_MESSAGE).with_details(details))
}

/// The fatal error of a call the log could not record: the run stops.
fn store_failed(what: &str, e: &RunLogError) -> CallOutcome {
    tracing::error!(error = %e, "the run log could not {what}");
    CallOutcome::Error(
        ToolError::new(
            STORE_FAILED,
            format!("The run stopped: its store could not {what}."),
        )
        .with_operator_detail(e.to_string())
        .fatal(),
    )
}
