//! A run's event at the run's end: its status and detail (`completed` with the text,
//! `awaiting_approval` with the approvals, `failed` with the error, `processing` while external
//! calls are out), written with the run's last save when it finishes or pauses
//! ([`StoredRun::with_event_end`](toolsmith_store::StoredRun::with_event_end): one commit for
//! both), otherwise by `drive` after the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolsmith_agent::{RunError, RunOutput, RunState};
use toolsmith_core::{Message, Pause, PauseKind, Role};
use toolsmith_store::{EventEnd, EventEnding, EventStatus};

use crate::runs::RunRequest;
use crate::service::lock;

/// The event's status and detail after a run: `completed` with the text, `awaiting_approval`
/// with the approvals (and client tool calls) it waits for, `failed` with the error, or still
/// `processing` while external calls are out.
pub(crate) fn outcome(
    result: &Result<RunOutput, RunError>,
    external_waits: bool,
) -> (EventStatus, Value) {
    match result {
        Ok(out) if !out.pending.is_empty() => (
            EventStatus::AwaitingApproval,
            awaiting(&out.pending, &out.text),
        ),
        Ok(out) if external_waits => (
            EventStatus::Processing,
            json!({"text": out.text, "waitingFor": "external-async-tools"}),
        ),
        Ok(out) => (EventStatus::Completed, completed(&out.text)),
        Err(e) => (
            EventStatus::Failed,
            json!({"error": {"code": e.code(), "message": e.to_string()}}),
        ),
    }
}

/// An `awaiting_approval` event's detail: the approvals it waits for, and the run's text.
fn awaiting(pending: &[Pause], text: &str) -> Value {
    let approvals: Vec<Value> = pending
        .iter()
        .filter(|p| p.kind == PauseKind::Approval)
        .map(|p| {
            json!({
                "approvalId": p.approval_id(),
                "toolCallId": p.tool_call_id,
                "toolName": p.tool_name,
                "input": p.input,
            })
        })
        .collect();
    json!({"approvals": approvals, "text": text})
}

/// A `completed` event's detail.
fn completed(text: &str) -> Value {
    json!({"text": text})
}

/// What a run's last save writes of its event ([`StoredRun::with_event_end`]): `completed` or
/// `awaiting_approval`, as [`outcome`] would say, with the text of the run's last assistant
/// message — what its last step said. Nothing for a run that handed calls out (its event
/// waits for them: `drive` seals the group first), a failed run (its error is the run's, not
/// the save's) or a save that adds no assistant message; `drive` writes those, and any end
/// that turns out otherwise, after the run.
pub(crate) fn event_ending(
    request: &RunRequest,
    dispatched: Arc<AtomicBool>,
    written: Arc<Mutex<Option<EventEnd>>>,
) -> EventEnding {
    let (account, agent_id, event_id) = (
        request.account.clone(),
        request.agent_id.clone(),
        request.status_event.clone(),
    );
    Arc::new(move |state: RunState<'_>, tail: &[Message]| {
        if dispatched.load(Ordering::SeqCst) {
            return None;
        }
        let said = || tail.iter().rev().find(|m| m.role == Role::Assistant);
        let (status, detail) = match state {
            RunState::Finished => (EventStatus::Completed, completed(&said()?.text())),
            RunState::Paused(pending) => (
                EventStatus::AwaitingApproval,
                awaiting(pending, &said()?.text()),
            ),
            _ => return None,
        };
        let end = EventEnd {
            account: account.clone(),
            agent_id: agent_id.clone(),
            event_id: event_id.clone(),
            status,
            detail,
        };
        *lock(&written) = Some(end.clone());
        Some(end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::RequestPath;

    fn request() -> RunRequest {
        RunRequest {
            account: "acme".into(),
            agent_id: "calc".into(),
            event_id: "e2:async-tools".into(),
            conversation_key: "c".into(),
            thread: "t".into(),
            messages: Vec::new(),
            approvals: Vec::new(),
            tool_results: Vec::new(),
            path: RequestPath::Stream,
            status_event: "e2".into(),
        }
    }

    /// What the last save writes is what `outcome` says of the run, for the event the run
    /// settles (a continuation's: its root's).
    #[test]
    fn the_last_save_settles_the_event_as_the_outcome_would() {
        let (dispatched, written) = (Arc::default(), Arc::default());
        let ending = event_ending(&request(), Arc::clone(&dispatched), Arc::clone(&written));
        let said = [Message::assistant("The answer is 42.")];
        let end = ending(RunState::Finished, &said).unwrap();
        let out = RunOutput {
            text: "The answer is 42.".into(),
            ..RunOutput::default()
        };
        assert_eq!((end.status, end.detail.clone()), outcome(&Ok(out), false));
        assert_eq!(
            (end.account.as_str(), end.event_id.as_str()),
            ("acme", "e2")
        );
        assert_eq!(lock(&written).as_ref(), Some(&end), "what it wrote is kept");

        let asked = [Pause::new(
            PauseKind::Approval,
            "c1",
            "pay",
            json!({"to": "bob"}),
        )];
        let call = [Message::assistant("Paying.")];
        let end = ending(RunState::Paused(&asked), &call).unwrap();
        let out = RunOutput {
            text: "Paying.".into(),
            pending: asked.to_vec(),
            ..RunOutput::default()
        };
        assert_eq!((end.status, end.detail), outcome(&Ok(out), false));

        // Left to `drive`: a failed run, a save without an assistant message, a run that
        // handed calls out.
        assert!(ending(RunState::Failed, &said).is_none());
        assert!(ending(RunState::Finished, &[Message::user("Hi")]).is_none());
        dispatched.store(true, Ordering::SeqCst);
        assert!(ending(RunState::Finished, &said).is_none());
    }
}
