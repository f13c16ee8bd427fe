//! Resuming a paused run: which calls at the end of the thread wait for an answer, and what
//! the caller's answers decide for each.
//!
//! A pause is data in the thread (docs/approvals.md): a call without a result, after which the
//! assistant message records a [`ToolApprovalRequest`], or a call to a client tool. Resuming is
//! running again with the thread plus the answers: approval answers in
//! [`RunInput::approvals`](crate::RunInput::approvals), client results as a tool message.

use std::collections::HashSet;

use serde_json::Value;
use toolsmith_core::{
    Message, NestedResume, NestedRun, Part, Pause, PauseKind, Role, ToolApprovalRequest,
    ToolApprovalResponse, ToolCallPart, ToolError, ToolKind, ToolResultPart, Toolset,
};

use crate::approval::{
    AUTO_APPROVED, ApprovalKey, ApprovalSettings, DENIED_BY_REVIEWER, TIMED_OUT, TIMED_OUT_ERROR,
    TimeoutAction,
};

/// A call at the end of the thread that has no result and waits for the caller.
#[derive(Debug, Clone)]
pub(crate) struct WaitingCall {
    pub(crate) call: ToolCallPart,
    /// The approval asked for it; `None` for a client tool's call or a sub-agent's.
    pub(crate) approval: Option<ToolApprovalRequest>,
    /// A sub-agent call's paused run.
    pub(crate) nested: Option<NestedRun>,
}

/// What a resumed run does with a waiting call.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Run it with this input (the model's, or the reviewer's edit).
    Run {
        input: Value,
        answer: Option<ToolApprovalResponse>,
    },
    /// Denied: the model is told why.
    Deny {
        reason: String,
        answer: ToolApprovalResponse,
    },
    /// It cannot run: this is its result.
    Fail(ToolError),
    /// No answer yet: the run pauses again.
    Wait(Pause),
    /// A paused sub-agent run: resumed with the answers meant for it (perhaps none: it then
    /// applies its own approval timeouts and pauses again).
    Resume(NestedResume),
}

/// The calls of the thread's last assistant message that have no result and wait: those with
/// an approval request recorded, and calls to client tools. Only when nothing but tool messages
/// follows that message (a thread that went on past a pause abandoned it: its calls are
/// repaired as interrupted).
pub(crate) fn waiting_calls(messages: &[Message], tools: &Toolset) -> Vec<WaitingCall> {
    let Some(last) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    if messages[last + 1..].iter().any(|m| m.role != Role::Tool) {
        return Vec::new();
    }
    let answered: HashSet<&str> = messages[last + 1..]
        .iter()
        .flat_map(|m| m.tool_results_iter())
        .map(|r| r.tool_call_id.as_str())
        .collect();
    let requests: Vec<&ToolApprovalRequest> = messages[last]
        .content
        .iter()
        .filter_map(|p| match p {
            Part::ToolApprovalRequest(r) => Some(r),
            _ => None,
        })
        .collect();
    let nested: Vec<&NestedRun> = messages[last]
        .content
        .iter()
        .filter_map(|p| match p {
            Part::NestedRun(r) => Some(r),
            _ => None,
        })
        .collect();
    messages[last]
        .tool_calls()
        .filter(|c| !c.provider_executed && !answered.contains(c.tool_call_id.as_str()))
        .filter_map(|call| {
            let approval = requests
                .iter()
                .find(|r| r.tool_call_id == call.tool_call_id)
                .map(|r| (*r).clone());
            let nested = nested
                .iter()
                .find(|r| r.tool_call_id == call.tool_call_id)
                .map(|r| (*r).clone());
            let client = tools
                .get(&call.tool_name)
                .is_some_and(|t| matches!(t.kind(), ToolKind::Client));
            (approval.is_some() || nested.is_some() || client).then(|| WaitingCall {
                call: call.clone(),
                approval,
                nested,
            })
        })
        .collect()
}

/// The tools approved with `always` in this thread: every answer that approved with `always`
/// a request that verifies under `key`.
pub(crate) fn always_approved(messages: &[Message], key: &ApprovalKey) -> HashSet<String> {
    let parts = || messages.iter().flat_map(|m| m.content.iter());
    let verified: Vec<&ToolApprovalRequest> = parts()
        .filter_map(|p| match p {
            Part::ToolApprovalRequest(r) => Some(r),
            _ => None,
        })
        .filter(|r| r.approval_id == key.approval_id(&r.tool_call_id, &r.tool_name, &r.input))
        .collect();
    parts()
        .filter_map(|p| match p {
            Part::ToolApprovalResponse(a) if a.approved && a.always => Some(a),
            _ => None,
        })
        .filter_map(|a| verified.iter().find(|r| r.approval_id == a.approval_id))
        .map(|r| r.tool_name.clone())
        .collect()
}

/// Decides every waiting call from the caller's answers, in call order.
///
/// # Errors
///
/// The message of a run that cannot start: an answer that matches no waiting approval (made up,
/// meant for another thread or call, or replayed after its call was answered), or two answers
/// to one approval.
pub(crate) fn decide(
    waiting: &[WaitingCall],
    answers: &[ToolApprovalResponse],
    results: &[ToolResultPart],
    settings: &ApprovalSettings,
    now_millis: u64,
) -> Result<Vec<Decision>, String> {
    // The id each waiting approval must have; a request whose recorded id differs was altered.
    let expected: Vec<Option<String>> = waiting
        .iter()
        .map(|w| {
            w.approval.as_ref().map(|_| {
                settings
                    .key
                    .approval_id(&w.call.tool_call_id, &w.call.tool_name, &w.call.input)
            })
        })
        .collect();
    for (i, answer) in answers.iter().enumerate() {
        if answers[..i]
            .iter()
            .any(|a| a.approval_id == answer.approval_id)
        {
            return Err(format!(
                "Approval {} is answered twice.",
                answer.approval_id
            ));
        }
        let nested = waiting
            .iter()
            .filter_map(|w| w.nested.as_ref())
            .flat_map(NestedRun::approval_ids);
        if !expected
            .iter()
            .flatten()
            .map(String::as_str)
            .chain(nested)
            .any(|id| id == answer.approval_id)
        {
            return Err(format!(
                "Approval {} answers no approval waiting in this thread: its call has been \
                 answered already, or the id was not issued for this thread.",
                answer.approval_id
            ));
        }
    }
    Ok(waiting
        .iter()
        .zip(&expected)
        .map(|(w, expected)| {
            if let Some(run) = &w.nested {
                let ids: Vec<&str> = run.approval_ids().collect();
                let calls: Vec<&str> = run.client_call_ids().collect();
                return Decision::Resume(NestedResume {
                    run: run.clone(),
                    approvals: answers
                        .iter()
                        .filter(|a| ids.contains(&a.approval_id.as_str()))
                        .cloned()
                        .collect(),
                    results: results
                        .iter()
                        .filter(|r| calls.contains(&r.tool_call_id.as_str()))
                        .cloned()
                        .collect(),
                });
            }
            let (Some(request), Some(expected)) = (&w.approval, expected) else {
                return Decision::Wait(pause(w, PauseKind::ClientTool, Value::Null));
            };
            if request.approval_id != *expected {
                return Decision::Fail(ToolError::new(
                    "APPROVAL_INVALID",
                    "The approval request recorded for this call does not match the call (the \
                     thread was altered); the call was not run.",
                ));
            }
            match answers.iter().find(|a| a.approval_id == *expected) {
                Some(answer) if answer.approved => Decision::Run {
                    input: answer.input.clone().unwrap_or_else(|| w.call.input.clone()),
                    answer: Some(answer.clone()),
                },
                Some(answer) => Decision::Deny {
                    reason: answer
                        .reason
                        .clone()
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or_else(|| DENIED_BY_REVIEWER.to_string()),
                    answer: answer.clone(),
                },
                None if timed_out(request, settings, now_millis) => {
                    timeout_decision(request, settings.timeout_action)
                }
                None => Decision::Wait(pause(
                    w,
                    PauseKind::Approval,
                    serde_json::json!({ "approvalId": request.approval_id }),
                )),
            }
        })
        .collect())
}

fn timed_out(request: &ToolApprovalRequest, settings: &ApprovalSettings, now: u64) -> bool {
    request
        .requested_at
        .is_some_and(|at| now.saturating_sub(at) >= settings.timeout.as_millis() as u64)
}

/// The timeout decisions, as RadarOS makes them.
fn timeout_decision(request: &ToolApprovalRequest, action: TimeoutAction) -> Decision {
    match action {
        TimeoutAction::Deny => Decision::Deny {
            reason: TIMED_OUT.into(),
            answer: ToolApprovalResponse::deny(&request.approval_id, TIMED_OUT),
        },
        TimeoutAction::Approve => Decision::Run {
            input: request.input.clone(),
            answer: Some(ToolApprovalResponse {
                reason: Some(AUTO_APPROVED.into()),
                ..ToolApprovalResponse::approve(&request.approval_id)
            }),
        },
        TimeoutAction::Error => Decision::Fail(ToolError::new("APPROVAL_TIMEOUT", TIMED_OUT_ERROR)),
    }
}

fn pause(waiting: &WaitingCall, kind: PauseKind, data: Value) -> Pause {
    Pause::new(
        kind,
        &waiting.call.tool_call_id,
        &waiting.call.tool_name,
        waiting.call.input.clone(),
    )
    .with_data(data)
}

/// Places the caller's client-tool results: those for the thread's own waiting client calls go
/// into the tool message after the calls; those for client calls inside a paused sub-agent are
/// returned, to be routed to it.
///
/// # Errors
///
/// The message of a run that cannot start: a result for a call that waits nowhere.
pub(crate) fn place_results(
    messages: &mut Vec<Message>,
    results: Vec<ToolResultPart>,
    tools: &Toolset,
) -> Result<Vec<ToolResultPart>, String> {
    if results.is_empty() {
        return Ok(results);
    }
    let waiting = waiting_calls(messages, tools);
    let mut own = Vec::new();
    let mut nested = Vec::new();
    for result in results {
        let id = result.tool_call_id.as_str();
        let is_own = waiting
            .iter()
            .any(|w| w.call.tool_call_id == id && w.approval.is_none() && w.nested.is_none());
        if is_own
            && !own
                .iter()
                .any(|p| matches!(p, Part::ToolResult(r) if r.tool_call_id == id))
        {
            own.push(Part::ToolResult(result));
        } else if waiting
            .iter()
            .filter_map(|w| w.nested.as_ref())
            .any(|run| run.client_call_ids().any(|c| c == id))
        {
            nested.push(result);
        } else {
            return Err(format!(
                "The result for tool call {id} answers no client-tool call waiting in this \
                 thread (answered already, answered twice, or not a client tool's call)."
            ));
        }
    }
    if !own.is_empty() {
        match messages.last_mut() {
            Some(last) if last.role == Role::Tool => last.content.extend(own),
            _ => messages.push(Message::new(Role::Tool, own)),
        }
    }
    Ok(nested)
}
