//! Non-blocking sub-agents (`blocking: false` in the Standard Agents spec): the call returns at
//! once and the child's result is queued to the parent when it finishes.

use serde_json::Value;
use toolsmith_core::{Message, ToolContext, ToolOutput};

use super::child_run::{ChildEnd, run_child};
use super::tool::answer;
use crate::{Agent, RunInput};

/// What a non-blocking child that paused reports: nobody can answer it.
const CANNOT_PAUSE: &str = "The sub-agent stopped to wait for an approval or a client tool's \
                            result, which a non-blocking sub-agent cannot ask for.";

/// Starts `child` on its own task and returns the acknowledgement the model sees. The parent's
/// run picks the result up before its next model call, and does not end before it arrives.
/// Cancelling the parent cancels the child.
pub(super) fn spawn(agent: Agent, child: RunInput, cx: &ToolContext, input: Value) -> ToolOutput {
    let ticket = cx.scope().inbox.expect();
    let id = cx.tool_call_id().to_string();
    let name = cx.tool_name().to_string();
    let call = cx.clone();
    tokio::spawn(async move {
        let cx = call;
        let (status, result) = match run_child(&agent, child, &cx, &input, "Sub-agent").await {
            Ok(ChildEnd::Done(output)) => ("completed", answer(&name, &output)),
            Ok(ChildEnd::Paused(_)) => ("failed", CANNOT_PAUSE.to_string()),
            Err(error) => ("failed", error.message().to_string()),
        };
        ticket.deliver(Message::user(injected(&id, &name, status, &input, &result)));
    });
    ToolOutput::text(format!(
        "Sub-agent \"{}\" started in the background (resultId: {}). Its result will arrive in \
         a later message; go on meanwhile.",
        cx.tool_name(),
        cx.tool_call_id()
    ))
}

/// The agent harness's message for a result that arrives after its call: the same text for every
/// late result, so models see one shape.
fn injected(id: &str, name: &str, status: &str, input: &Value, result: &str) -> String {
    let input = match input {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let result = if result.is_empty() {
        "(no result)"
    } else {
        result
    };
    format!(
        "Async tool result injected into parent conversation.\nresultId: {id}\ntoolName: \
         {name}\nstatus: {status}\n\nInput:\n{input}\n\nResult:\n{result}"
    )
}
