//! A run one level down: what sub-agent and prompt tools share. The child's parts are
//! forwarded into the parent's stream with the nesting path, its usage folds into the
//! parent's, cancelling the parent cancels it, and its pause becomes the call's pause.

use serde_json::Value;
use tokio::sync::mpsc::unbounded_channel;
use toolsmith_core::{
    EventSink, Message, NestedHop, NestedRun, Pause, PauseKind, ToolContext, ToolError,
};

use crate::{Agent, RunError, RunErrorKind, RunInput, RunOutput};

/// How a child run ended, as its call reports it.
pub(super) enum ChildEnd {
    /// It finished.
    Done(Box<RunOutput>),
    /// It paused; the call pauses with it (the error carries the pause).
    Paused(ToolError),
}

/// The child run's id: the saved run's for a resumed call, else `<run id>/<call id>`.
pub(super) fn child_run_id(cx: &ToolContext) -> String {
    match cx.resume() {
        Some(resume) => resume.run.run_id.clone(),
        None => format!("{}/{}", cx.run_id(), cx.tool_call_id()),
    }
}

/// Starts a child run of `agent` for the call `cx`: a resumed one when `cx` carries a saved
/// run, otherwise one over `messages` tagged with `tags`.
pub(super) fn child_input(cx: &ToolContext, messages: Vec<Message>, tags: Vec<String>) -> RunInput {
    let run_id = child_run_id(cx);
    let (messages, tags, approvals, results) = match cx.resume() {
        Some(resume) => (
            resume.run.messages.clone(),
            resume.run.tags.clone(),
            resume.approvals.clone(),
            resume.results.clone(),
        ),
        None => (messages, tags, Vec::new(), Vec::new()),
    };
    let mut metadata = cx.metadata().clone();
    metadata.insert("parentRunId".into(), cx.run_id().into());
    metadata.insert("parentToolCallId".into(), cx.tool_call_id().into());
    metadata.insert("tags".into(), tags.into());
    let mut input = RunInput::new(messages)
        .with_run_id(run_id)
        .with_metadata(metadata)
        .with_cancellation(cx.cancellation().child_token());
    input.approvals = approvals;
    input.tool_results = results;
    input.deps = Some(cx.scope().deps.clone());
    input.inherited = Some(cx.scope().variables.clone());
    input.parent = Some(cx.scope().inbox.clone());
    input
}

/// Runs the child to its end or its pause, forwarding its parts when the parent's stream has
/// a listener. The child's usage is reported to the parent, pause or not. `what` names the
/// child in errors (`Sub-agent`, `Prompt`).
///
/// # Errors
///
/// The call's error when the child fails: `CANCELLED` when the parent was cancelled,
/// `SUBAGENT_FAILED` otherwise (the child's own error in the message).
pub(super) async fn run_child(
    agent: &Agent,
    input: RunInput,
    cx: &ToolContext,
    call_input: &Value,
    what: &str,
) -> Result<ChildEnd, ToolError> {
    let tags = input
        .metadata
        .get("tags")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    let parent = &cx.scope().events;
    let result = if parent.is_active() {
        let hop = NestedHop {
            tool_call_id: cx.tool_call_id().to_string(),
            tool_name: cx.tool_name().to_string(),
        };
        let (sender, mut parts) = unbounded_channel();
        let run = agent.run_with(input, EventSink::new(sender));
        tokio::pin!(run);
        loop {
            tokio::select! {
                biased;
                Some(part) = parts.recv() => parent.send(part.nested(hop.clone())),
                result = &mut run => {
                    while let Ok(part) = parts.try_recv() {
                        parent.send(part.nested(hop.clone()));
                    }
                    break result;
                }
            }
        }
    } else {
        agent.run(input).await
    };
    match result {
        Ok(output) => {
            cx.report_usage(output.usage);
            if !output.is_paused() {
                return Ok(ChildEnd::Done(Box::new(output)));
            }
            let run = NestedRun {
                tool_call_id: cx.tool_call_id().to_string(),
                tool_name: cx.tool_name().to_string(),
                run_id: output.run_id,
                tags,
                messages: output.messages,
                pending: output.pending,
            };
            let data = serde_json::to_value(run).map_err(ToolError::from)?;
            let pause = Pause::new(
                PauseKind::Nested,
                cx.tool_call_id(),
                cx.tool_name(),
                call_input.clone(),
            )
            .with_data(data);
            Ok(ChildEnd::Paused(ToolError::pause(pause)))
        }
        Err(error) => {
            cx.report_usage(error.output.usage);
            Err(child_error(what, cx.tool_name(), &error))
        }
    }
}

fn child_error(what: &str, tool_name: &str, error: &RunError) -> ToolError {
    match error.kind {
        RunErrorKind::Cancelled => ToolError::new(
            "CANCELLED",
            format!("{what} \"{tool_name}\" was cancelled before it finished."),
        ),
        _ => ToolError::new(
            "SUBAGENT_FAILED",
            format!("{what} \"{tool_name}\" failed: {error}"),
        )
        .with_details(serde_json::json!({ "code": error.code() })),
    }
}
