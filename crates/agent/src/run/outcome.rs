//! What becomes of a call's outcome: its result part in the thread, its pause recorded, the
//! part that reports it.

use serde_json::Value;
use toolsmith_core::{
    ErrorInfo, ModelOutput, NestedRun, Part, Pause, PauseKind, Role, RunPart, ToolApprovalRequest,
    ToolError, ToolResultPart,
};

use super::Run;
use crate::CallOutcome;
use crate::approval::{ApprovalKey, now_millis};
use crate::emit::Emitter;
use crate::prepare::PreparedCall;

impl Run {
    /// Notes a call's pause: an approval request or a sub-agent's paused run is recorded in
    /// the thread (after the call, in the assistant message); the items the caller must answer
    /// join the run's pending list (a sub-agent's own, with the call's id prefixed to their
    /// path).
    pub(super) fn note_pause(&mut self, pause: Pause) {
        match pause.kind {
            PauseKind::Approval => {
                self.record(Part::ToolApprovalRequest(ToolApprovalRequest {
                    approval_id: approval_id_of(&pause),
                    tool_call_id: pause.tool_call_id.clone(),
                    tool_name: pause.tool_name.clone(),
                    input: pause.input.clone(),
                    requested_at: Some(now_millis()),
                }));
                self.pending.push(pause);
            }
            PauseKind::Nested => match serde_json::from_value::<NestedRun>(pause.data.clone()) {
                Ok(run) => {
                    for mut inner in run.pending.iter().cloned() {
                        inner.path.insert(0, pause.tool_call_id.clone());
                        self.pending.push(inner);
                    }
                    self.record(Part::NestedRun(run));
                }
                // Not a sub-agent run (only ours make nested pauses): kept as it is.
                Err(_) => self.pending.push(pause),
            },
            _ => self.pending.push(pause),
        }
    }

    /// Records `part` in the last assistant message, replacing the record of the same call
    /// that an earlier pause left (a resumed sub-agent that paused again).
    pub(super) fn record(&mut self, part: Part) {
        let call_id = |p: &Part| match p {
            Part::ToolApprovalRequest(r) => Some(r.tool_call_id.clone()),
            Part::NestedRun(r) => Some(r.tool_call_id.clone()),
            _ => None,
        };
        let Some(assistant) = self
            .request
            .messages
            .iter_mut()
            .rev()
            .find(|m| m.role == Role::Assistant)
        else {
            return;
        };
        let id = call_id(&part);
        match assistant.content.iter_mut().find(|p| {
            std::mem::discriminant(*p) == std::mem::discriminant(&part) && call_id(p) == id
        }) {
            Some(old) => *old = part,
            None => assistant.content.push(part),
        }
    }
}

/// The pause of a call that needs approval, its approval id the HMAC of the call under `key`.
pub(super) fn approval_pause(call: &PreparedCall, key: &ApprovalKey) -> Pause {
    Pause::new(
        PauseKind::Approval,
        &call.id,
        &call.name,
        call.input.clone(),
    )
    .with_data(serde_json::json!({
        "approvalId": key.approval_id(&call.id, &call.name, &call.input)
    }))
}

/// The approval id an approval pause carries.
pub(super) fn approval_id_of(pause: &Pause) -> String {
    pause.approval_id().unwrap_or_default().to_string()
}

/// What the model sees of an outcome; `None` for a pause (the call has no result yet).
pub(super) fn model_output(outcome: &CallOutcome) -> Option<ModelOutput> {
    match outcome {
        CallOutcome::Output(out) => Some(out.model.clone()),
        CallOutcome::Error(e) => Some(ModelOutput::error_text(e.message())),
        CallOutcome::Paused(_) => None,
    }
}

/// A call's result, as the tool message records it.
pub(super) fn result_part(tool_call_id: &str, tool_name: &str, output: ModelOutput) -> Part {
    Part::ToolResult(ToolResultPart {
        tool_call_id: tool_call_id.to_string(),
        tool_name: tool_name.to_string(),
        output,
        provider_executed: false,
        provider_metadata: Default::default(),
    })
}

pub(super) fn fatal_error(outcome: &CallOutcome) -> Option<ToolError> {
    match outcome {
        CallOutcome::Error(e) if e.is_fatal() => Some(e.clone()),
        _ => None,
    }
}

/// Emits the part that reports an outcome: `tool-result`, `tool-error`,
/// `tool-approval-request`, or nothing for a client tool (its `tool-call` part already told the
/// caller).
pub(super) fn emit_outcome(
    emit: &Emitter,
    tool_call_id: &str,
    tool_name: &str,
    input: &Value,
    outcome: &CallOutcome,
) {
    match outcome {
        CallOutcome::Output(out) => emit.emit(|| RunPart::ToolResult {
            tool_call_id: tool_call_id.to_string(),
            tool_name: tool_name.to_string(),
            input: input.clone(),
            output: out.value.clone(),
            is_error: false,
            provider_executed: false,
        }),
        CallOutcome::Error(e) => emit.emit(|| RunPart::ToolError {
            tool_call_id: tool_call_id.to_string(),
            tool_name: tool_name.to_string(),
            input: input.clone(),
            error: ErrorInfo::from(e),
        }),
        CallOutcome::Paused(pause) if pause.kind == PauseKind::Approval => {
            emit.emit(|| RunPart::ToolApprovalRequest {
                approval_id: approval_id_of(pause),
                tool_call_id: pause.tool_call_id.clone(),
                tool_name: pause.tool_name.clone(),
                input: pause.input.clone(),
            })
        }
        CallOutcome::Paused(_) => {}
    }
}
