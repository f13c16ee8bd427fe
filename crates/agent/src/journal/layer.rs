//! [`JournalLayer`]: one call under the run's journal — its intent recorded before it executes,
//! its outcome after, an interrupted earlier attempt resolved instead of repeated blindly.

use std::sync::Arc;

use serde_json::json;
use toolsmith_core::layer::{Call, CallSecrets, Layer, Next};
use toolsmith_core::{Disposition, ToolError, ToolOutput, async_trait};

use super::{Intent, Journal, LoggedCall, RunLogError, Settled, SettledCall};
use crate::CallOutcome;

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
const STOPPED_MESSAGE: &str = "This call was stopped before it returned (it timed out, or the \
     run was cancelled): it may or may not have taken effect.";

/// The innermost layer of a run with a log, over the catch-panic layer (see the
/// [module docs](super)).
pub(crate) struct JournalLayer(pub(crate) Arc<Journal>);

#[async_trait]
impl Layer for JournalLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let logged = logged(&call);
        let journal = &self.0;
        let intent = match journal.intend(&logged).await {
            Ok(intent) => intent,
            Err(e) => return Err(store_failed("record the call before it runs", &e)),
        };
        if let Intent::Recorded(outcome) = intent {
            journal.note_replayed(call.cx.tool_call_id());
            return recorded(*outcome);
        }
        // The record holds no secret: the journal sits inside the secrets layer, so what it is
        // handed is raw, and it is stored (and shown: `threads show`, the console).
        let secrets = CallSecrets::starting(call.cx);
        // From here until an outcome is in hand, a call dropped from above (a timeout, a
        // cancelled run) is settled `unknown` with the next commit.
        let stopped = Stopped(Some((journal.clone(), logged)));
        let result = match intent {
            Intent::Unsettled { attempt, seq } => resolve(call, next, attempt, seq).await,
            _ => next.run(call).await,
        };
        let logged = stopped.disarm();
        let settled = match &secrets.mask(result.clone()) {
            Ok(output) => Settled::Succeeded(output.clone()),
            // A call that paused (a sub-agent's nested approval) runs again when resumed.
            Err(e) if matches!(e.disposition(), Disposition::Pause(_)) => return result,
            // Undone by the tool's revert hook: the effect is known not to stand.
            Err(e) if e.code() == EFFECT_REVERTED => Settled::Failed(e.clone()),
            // Smithers records every error a tool throws as `unknown`: an error does not say
            // whether the effect happened before it.
            Err(e) => Settled::Unknown(e.clone()),
        };
        let done = SettledCall {
            call: logged,
            settled,
        };
        if let Err(e) = journal.settle(done).await {
            return Err(store_failed("record the call's outcome", &e));
        }
        result
    }
}

/// The call as the log records it.
fn logged(call: &Call<'_>) -> LoggedCall {
    let (meta, cx) = (call.tool.meta(), call.cx);
    LoggedCall {
        run_id: cx.run_id().to_string(),
        tool_call_id: cx.tool_call_id().to_string(),
        tool_name: cx.tool_name().to_string(),
        input: call.input.clone(),
        side_effect: meta.side_effect,
        idempotent: meta.is_idempotent(),
        // Smithers records the key only for a tool that reads it.
        idempotency_key: meta
            .accepts_idempotency_key
            .then(|| cx.idempotency_key().to_string()),
        accepts_idempotency_key: meta.accepts_idempotency_key,
        has_revert: meta.revert.is_some(),
    }
}

/// Settles a call `unknown` when dropped armed: it was stopped between its intent and its
/// outcome.
struct Stopped(Option<(Arc<Journal>, LoggedCall)>);

impl Stopped {
    /// The call, once its outcome is in hand.
    fn disarm(mut self) -> LoggedCall {
        let (_, call) = self.0.take().expect("armed until disarmed");
        call
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some((journal, call)) = self.0.take() {
            let error = ToolError::new(EFFECT_UNKNOWN, STOPPED_MESSAGE);
            journal.settle_later(SettledCall {
                call,
                settled: Settled::Unknown(error),
            });
        }
    }
}

/// A recorded outcome as the call's result.
fn recorded(outcome: CallOutcome) -> Result<ToolOutput, ToolError> {
    match outcome {
        CallOutcome::Output(output) => Ok(output),
        CallOutcome::Error(error) => Err(error),
        // Never recorded: a paused call is not settled.
        CallOutcome::Paused(pause) => Err(ToolError::pause(pause)),
    }
}

/// Resolves an earlier attempt that started and was never settled: the tool's reconcile hook
/// says what became of it (or that it never happened: then it executes), or its revert hook
/// undoes it; without either, or when the hook fails, the outcome is unknown and the model is
/// told.
async fn resolve(
    call: Call<'_>,
    next: Next<'_>,
    attempt: u32,
    seq: u64,
) -> Result<ToolOutput, ToolError> {
    let (meta, cx) = (call.tool.meta(), call.cx);
    let failure = if let Some(reconcile) = &meta.reconcile {
        match reconcile.reconcile(&call.input, cx).await {
            Ok(Some(output)) => return Ok(output),
            Ok(None) => return next.run(call).await,
            Err(e) => e,
        }
    } else if let Some(revert) = &meta.revert {
        match revert.revert(&call.input, cx).await {
            Ok(()) => {
                return Err(ToolError::new(EFFECT_REVERTED, REVERTED_MESSAGE)
                    .with_details(json!({"attempt": attempt, "seq": seq})));
            }
            Err(e) => e,
        }
    } else {
        return Err(unknown(attempt, seq, None));
    };
    tracing::warn!(
        tool = cx.tool_name(),
        tool_call_id = cx.tool_call_id(),
        error = %failure.message(),
        "resolving an interrupted call failed; its outcome is unknown"
    );
    Err(unknown(attempt, seq, Some(&failure)))
}

/// The error of a call whose effect is unknown; the details carry what the resume warning
/// lists.
fn unknown(attempt: u32, seq: u64, hook_error: Option<&ToolError>) -> ToolError {
    let mut details = json!({"attempt": attempt, "seq": seq});
    if let Some(e) = hook_error {
        details["hookError"] = json!({"code": e.code(), "message": e.message()});
    }
    ToolError::new(EFFECT_UNKNOWN, UNKNOWN_MESSAGE).with_details(details)
}

/// The fatal error of a run whose log could not record: the run stops.
fn store_failed(what: &str, e: &RunLogError) -> ToolError {
    tracing::error!(error = %e, "the run log could not {what}");
    ToolError::new(
        STORE_FAILED,
        format!("The run stopped: its store could not {what}."),
    )
    .with_operator_detail(e.to_string())
    .fatal()
}
