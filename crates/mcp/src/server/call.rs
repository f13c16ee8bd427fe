//! One `tools/call`, from its validated arguments to its result: approval, the call itself
//! (panics caught, a time limit, the client's cancellation honoured) and progress
//! notifications. The order and the codes are in the [server's docs](super).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use rmcp::model::{CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use toolsmith_core::layer::{LayerStack, SecretsLayer, TracingLayer};
use toolsmith_core::{
    CancellationToken, Concurrency, SharedTool, ToolContext, ToolError, ToolOutput,
};
use tracing::Instrument;

use super::session::McpSession;
use super::{CANCEL_GRACE, CANCELLED, TIMEOUT, TOOL_PANICKED, approval, result};

/// Runs the call of `tool` with `input` that `request` asked for, in a `tools/call {tool}`
/// server span whose parent is the trace context of the request's `_meta`; its result.
pub(crate) async fn call(
    session: &McpSession,
    tool: SharedTool,
    input: Value,
    request: &RequestContext<RoleServer>,
) -> CallToolResult {
    let span = crate::trace::call_span("server", tool.spec().name());
    crate::trace::extract(&span, &request.meta);
    let result = answer(session, tool, input, request)
        .instrument(span.clone())
        .await;
    if result.is_error == Some(true) {
        // The conventions' type of a call the tool answered with `isError`.
        crate::trace::record_error(&span, "tool_error");
    }
    result
}

async fn answer(
    session: &McpSession,
    tool: SharedTool,
    input: Value,
    request: &RequestContext<RoleServer>,
) -> CallToolResult {
    let spec = tool.spec();
    // `INVALID_INPUT`, or `INVALID_SCHEMA` for a schema that does not compile.
    if let Err(error) = spec.validate(&input) {
        return result::failure(spec, &error);
    }
    let name = spec.name();
    let cancel = request.ct.child_token();
    let (step, id) = session.next_call();
    let cx = ToolContext::new(
        Arc::clone(session.scope()),
        step,
        id.into(),
        spec.shared_name().clone(),
        cancel.clone(),
    )
    .with_defaults(&tool.meta().env)
    .with_tool_meta(tool.meta());

    let server = session.server();
    let asks = tool
        .meta()
        .approval
        .required(&input, &cx, server.policy.names(name));
    if asks {
        let asking = approval::ask(&request.peer, name, &input, server.approval_timeout);
        let approved = tokio::select! {
            approved = asking => approved,
            () = request.ct.cancelled() => return cancelled(spec),
        };
        if let Err(denied) = approved {
            return result::failure(spec, &denied);
        }
    }

    let _progress = request
        .meta
        .get_progress_token()
        .map(|token| Progress::start(request.peer.clone(), token, name.to_string()));
    let limit = tool.meta().timeout.unwrap_or(server.timeout);
    // Numbered as it starts, as the agent numbers its calls: a refused call takes no number.
    let cx = cx.numbered();
    let outcome = run(session, &tool, input, &cx, limit, &cancel).await;
    result::call_result(spec, outcome)
}

/// The layers every call passes through: tracing (names, ids, durations, error codes — never
/// arguments or results), then the secrets layer.
fn stack() -> &'static LayerStack {
    static STACK: std::sync::OnceLock<LayerStack> = std::sync::OnceLock::new();
    STACK.get_or_init(|| {
        let mut stack = LayerStack::new();
        stack.push(TracingLayer).push(SecretsLayer);
        stack
    })
}

/// Runs the call within `limit`, unless `cancel` (the request's token's child) is cancelled
/// first; on either, the tool gets [`CANCEL_GRACE`] to end, then its future is dropped.
async fn run(
    session: &McpSession,
    tool: &SharedTool,
    input: Value,
    cx: &ToolContext,
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let name = tool.spec().name();
    let exclusive = tool.meta().concurrency == Concurrency::Exclusive;
    let call = AssertUnwindSafe(async {
        let _turn = session.turn(exclusive).await;
        stack().call(tool, input, cx).await
    })
    .catch_unwind()
    .map(|outcome| {
        outcome.unwrap_or_else(|panic| {
            tracing::error!(tool = name, "the tool panicked");
            tracing::debug!(tool = name, panic = panic_message(&*panic), "the panic");
            Err(ToolError::new(
                TOOL_PANICKED,
                format!("the tool \"{name}\" failed unexpectedly (it panicked)"),
            ))
        })
    });
    tokio::pin!(call);
    let stopped = tokio::select! {
        outcome = &mut call => return outcome,
        () = tokio::time::sleep(limit) => {
            cancel.cancel();
            ToolError::new(
                TIMEOUT,
                format!(
                    "the tool \"{name}\" did not finish within {}; it was cancelled",
                    seconds(limit)
                ),
            )
        }
        () = cancel.cancelled() => ToolError::new(
            CANCELLED,
            format!("the MCP client cancelled the call of \"{name}\""),
        ),
    };
    // A cooperative tool ends on its token; one that does not is dropped.
    let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
    Err(stopped)
}

/// The result of a call the client cancelled: never sent (rmcp answers nothing to a cancelled
/// request), but the handler must return something.
fn cancelled(spec: &toolsmith_core::ToolSpec) -> CallToolResult {
    result::failure(
        spec,
        &ToolError::new(CANCELLED, "the MCP client cancelled the call"),
    )
}

/// `limit` as people read it: `300 s`, `1.5 s`, `250 ms`.
fn seconds(limit: Duration) -> String {
    if limit < Duration::from_secs(1) {
        format!("{} ms", limit.as_millis())
    } else if limit.subsec_millis() == 0 {
        format!("{} s", limit.as_secs())
    } else {
        format!("{:.1} s", limit.as_secs_f64())
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic payload that is not a string".to_string())
}

/// Sends `notifications/progress` about once a second while it lives.
struct Progress(tokio::task::JoinHandle<()>);

impl Progress {
    /// Progress `1, 2, 3…` (the seconds elapsed), message `running <tool>: N s`, on `token`.
    fn start(peer: Peer<RoleServer>, token: ProgressToken, tool: String) -> Progress {
        Progress(tokio::spawn(async move {
            let period = Duration::from_secs(1);
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for elapsed in 1u64.. {
                ticks.tick().await;
                let params = ProgressNotificationParam::new(token.clone(), elapsed as f64)
                    .with_message(format!("running {tool}: {elapsed} s"));
                if peer.notify_progress(params).await.is_err() {
                    break;
                }
            }
        }))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_as_people_write_them() {
        assert_eq!(seconds(Duration::from_secs(300)), "300 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(seconds(Duration::from_millis(250)), "250 ms");
    }
}
