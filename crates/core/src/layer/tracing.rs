use std::time::Instant;

use tracing::Instrument;

use super::{Call, Layer, Next};
use crate::{ToolError, ToolOutput};

/// Wraps each call in a `tool.call` span and logs `tool.call.started`, then `tool.call.finished`
/// or `tool.call.failed` with `duration_ms` (the agent harness's lifecycle events). Inputs and
/// outputs are not logged: they may hold secrets.
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingLayer;

#[async_trait::async_trait]
impl Layer for TracingLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let cx = call.cx;
        let span = tracing::info_span!(
            "tool.call",
            run_id = cx.run_id(),
            step = cx.step(),
            tool_name = cx.tool_name(),
            tool_call_id = cx.tool_call_id(),
        );
        async move {
            tracing::debug!("tool.call.started");
            let started = Instant::now();
            let result = next.run(call).await;
            let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
            match &result {
                Ok(_) => tracing::debug!(duration_ms, "tool.call.finished"),
                Err(e) => tracing::info!(
                    duration_ms,
                    code = e.code(),
                    operator_detail = e.operator_detail(),
                    "tool.call.failed"
                ),
            }
            result
        }
        .instrument(span)
        .await
    }
}
