//! What becomes of a call's outcome: its result part in the thread, its pause or its
//! approval handler's answer recorded, the part that reports it.

use serde_json::Value;
use toolsmith_core::{
    CancellationToken, ErrorInfo, ModelOutput, NestedRun, Part, Pause, PauseKind, Role, RunPart,
    ToolApprovalRequest, ToolApprovalResponse, ToolError, ToolResultPart,
};

use super::Run;
use crate::CallOutcome;
use crate::approval::{APPROVAL_DENIED, ApprovalKey, ApprovalRequest, Verdict, now_millis};
use crate::emit::Emitter;
use crate::execute::Job;
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

    /// Callback mode: the request an approval handler is asked, recorded in the thread after
    /// the call (as a pause's would be) and streamed as a `tool-approval-request` part.
    pub(super) fn approval_request(&mut self, call: &PreparedCall) -> ApprovalRequest {
        let approval_id = self
            .agent
            .approval
            .key
            .approval_id(&call.id, &call.name, &call.input);
        self.record(Part::ToolApprovalRequest(ToolApprovalRequest {
            approval_id: approval_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.input.clone(),
            requested_at: Some(now_millis()),
        }));
        self.emit.emit(|| RunPart::ToolApprovalRequest {
            approval_id: approval_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.input.clone(),
        });
        ApprovalRequest {
            approval_id,
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.input.clone(),
            run_id: self.scope.run_id.to_string(),
            agent_name: self.agent.name.clone(),
        }
    }

    /// Records an approval handler's answer in the step's tool message, before the call's
    /// result (where a resumed run records the caller's answer).
    pub(super) fn note_answer(&mut self, answer: Option<ToolApprovalResponse>) {
        if let Some(answer) = answer {
            let message = self
                .request
                .messages
                .last_mut()
                .expect("the tool message was pushed");
            message.content.push(Part::ToolApprovalResponse(answer));
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

/// What a handler's verdict makes of an asked call: the job to run, or (`None`) the call's
/// outcome put in `outcome` (left empty when the wait was cut short: the call never ran) and
/// its answer in `answer`.
pub(super) fn apply_verdict(
    job: Job,
    verdict: Option<Verdict>,
    outcome: &mut Option<CallOutcome>,
    answer: &mut Option<ToolApprovalResponse>,
) -> Option<Job> {
    let verdict = verdict?;
    *outcome = verdict_outcome(&verdict);
    match verdict {
        Verdict::Run(approved) => {
            *answer = Some(approved);
            Some(job)
        }
        Verdict::Deny(denied) => {
            *answer = Some(denied);
            None
        }
        Verdict::Fail(_) => None,
    }
}

/// The outcome a verdict gives its call without running it: the denial (the model sees
/// `[DENIED] <reason>`), or the failure; `None` when the call runs.
pub(super) fn verdict_outcome(verdict: &Verdict) -> Option<CallOutcome> {
    match verdict {
        Verdict::Run(_) => None,
        Verdict::Deny(denied) => {
            let reason = denied.reason.clone().unwrap_or_default();
            Some(CallOutcome::Error(ToolError::new(APPROVAL_DENIED, reason)))
        }
        Verdict::Fail(error) => Some(CallOutcome::Error(error.clone())),
    }
}

/// The parallel policy's report of a finished call: emitted at once, noted in `outcomes` and
/// `emitted`; a fatal error fires `stop` (no approval is waited for any more) and says
/// `false` (no further call starts).
pub(super) fn reporter<'a>(
    emit: &'a Emitter,
    calls: &'a [PreparedCall],
    outcomes: &'a mut [Option<CallOutcome>],
    emitted: &'a mut [bool],
    stop: &'a CancellationToken,
) -> impl FnMut(usize, CallOutcome) -> bool + Send + 'a {
    move |index, outcome| {
        let call = &calls[index];
        emit_outcome(emit, &call.id, &call.name, &call.input, &outcome);
        emitted[index] = true;
        let go_on = fatal_error(&outcome).is_none();
        if !go_on {
            stop.cancel();
        }
        outcomes[index] = Some(outcome);
        go_on
    }
}

/// The approval id an approval pause carries.
pub(super) fn approval_id_of(pause: &Pause) -> String {
    pause.approval_id().unwrap_or_default().to_string()
}

/// What the model sees of an outcome; `None` for a pause (the call has no result yet). A
/// denial ([`APPROVAL_DENIED`]) is the `execution-denied` output a denial answered on resume
/// gets: `[DENIED] <reason>` to the model.
pub(super) fn model_output(outcome: &CallOutcome) -> Option<ModelOutput> {
    match outcome {
        CallOutcome::Output(out) => Some(out.model.clone()),
        CallOutcome::Error(e) if e.code() == APPROVAL_DENIED => {
            Some(ModelOutput::ExecutionDenied {
                reason: Some(e.message().to_string()),
            })
        }
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

/// Emits the part that reports an outcome: `tool-result`, `tool-error`, `tool-output-denied`,
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
        CallOutcome::Error(e) if e.code() == APPROVAL_DENIED => {
            emit.emit(|| RunPart::ToolOutputDenied {
                tool_call_id: tool_call_id.to_string(),
                tool_name: tool_name.to_string(),
                reason: Some(e.message().to_string()),
            })
        }
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
