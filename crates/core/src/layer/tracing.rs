use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tracing::Instrument;

use super::secrets::{mask_value, masking_order};
use super::{Call, Layer, Next};
use crate::{ToolError, ToolOutput};

/// Wraps each call in an `execute_tool {name}` span, named and attributed per the
/// OpenTelemetry GenAI semantic conventions (`gen_ai.operation.name`, `gen_ai.tool.name`,
/// `gen_ai.tool.call.id`, `gen_ai.tool.type`, and `error.type` with an error status when the
/// call fails; the dynamic name is in the `otel.name` field `tracing-opentelemetry` reads), and
/// logs the agent harness's lifecycle events, each with `stepNumber`, `toolName` and
/// `toolCallId`: `tool.call.started`, then `tool.call.finished` with `durationMs`, or
/// `tool.call.failed` with `durationMs` and the error (`errorCode`, `error`). Inputs and
/// outputs are not logged: they may hold secrets (an error's message is the one the model sees,
/// already masked by the secrets layer inside).
///
/// With content capture on ([`capture_content`]), the span also records the call's
/// `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` as JSON, the run's secret
/// variables masked in both.
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingLayer;

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Turns the recording of tool calls' arguments and results on the `execute_tool` spans on or
/// off, for the whole process (off by default: they may hold personal data). The binary turns
/// it on from the OpenTelemetry GenAI conventions' switch,
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. Secrets are masked either way.
///
/// ```
/// toolsmith_core::layer::capture_content(false);
/// ```
pub fn capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// `value` as JSON with `secrets` masked, for a span.
fn masked_json(mut value: serde_json::Value, secrets: &[&str]) -> String {
    if !secrets.is_empty() {
        let mut secrets = secrets.to_vec();
        masking_order(&mut secrets);
        mask_value(&mut value, &secrets);
    }
    value.to_string()
}

#[async_trait::async_trait]
impl Layer for TracingLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let cx = call.cx;
        let (step, tool, id) = (cx.step(), cx.tool_name(), cx.tool_call_id());
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {tool}"),
            otel.kind = "internal",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tool,
            gen_ai.tool.call.id = id,
            // The conventions' type of a tool the agent runs itself (not an extension or a
            // data store the model reaches through its provider).
            gen_ai.tool.type = "function",
            error.type = tracing::field::Empty,
            gen_ai.tool.call.arguments = tracing::field::Empty,
            gen_ai.tool.call.result = tracing::field::Empty,
            toolsmith.run.id = cx.run_id(),
            // Set by a tool that only hands its work to a worker outside the run (the
            // service's external-dispatch async tools): a call left pending.
            toolsmith.tool.dispatched = tracing::field::Empty,
        );
        let outer = span.clone();
        // Content only for a span someone records: the serialisation is not free.
        let capture = CAPTURE_CONTENT.load(Ordering::Relaxed) && !span.is_disabled();
        if capture {
            let variables = cx.variables();
            let arguments = masked_json(call.input.clone(), &variables.secret_values());
            span.record("gen_ai.tool.call.arguments", arguments);
        }
        async move {
            tracing::info!(
                stepNumber = step,
                toolName = tool,
                toolCallId = id,
                "tool.call.started"
            );
            let started = Instant::now();
            let result = next.run(call).await;
            let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
            match &result {
                Ok(_) => tracing::info!(
                    stepNumber = step,
                    toolName = tool,
                    toolCallId = id,
                    durationMs = duration_ms,
                    "tool.call.finished"
                ),
                Err(e) => tracing::info!(
                    stepNumber = step,
                    toolName = tool,
                    toolCallId = id,
                    durationMs = duration_ms,
                    errorCode = e.code(),
                    error = e.message(),
                    operator_detail = e.operator_detail(),
                    "tool.call.failed"
                ),
            }
            result
        }
        .instrument(span)
        .await
        .inspect(|output| {
            if capture {
                // Already masked by the secrets layer inside; masked again with the
                // secrets as the call ended, as that layer does.
                let variables = cx.scope().variables.current();
                let result = masked_json(output.value.clone(), &variables.secret_values());
                outer.record("gen_ai.tool.call.result", result);
            }
        })
        .inspect_err(|e| {
            outer.record("error.type", e.code());
            outer.record("otel.status_code", "ERROR");
        })
    }
}
