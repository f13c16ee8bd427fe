use std::sync::Arc;

use super::{Call, Layer, Next};
use crate::{ToolContext, ToolError, ToolOutput};
use serde_json::Value;

/// Caller hooks around tool execution (RadarOS's `beforeToolExec` / `afterToolExec`).
///
/// Both methods are optional. `before` may skip the call by supplying its result; `after` may
/// rewrite the result, for example to replace what the model sees.
///
/// ```
/// use serde_json::Value;
/// use toolsmith_core::layer::ToolHook;
/// use toolsmith_core::{async_trait, ModelOutput, ToolContext, ToolError, ToolOutput};
///
/// /// Answers `lookup` from a fixture and redacts every result the model sees.
/// struct Redact;
///
/// #[async_trait]
/// impl ToolHook for Redact {
///     async fn before(&self, input: &Value, cx: &ToolContext) -> Option<ToolOutput> {
///         (cx.tool_name() == "lookup").then(|| ToolOutput::text("fixture"))
///     }
///     async fn after(&self, _input: &Value, _cx: &ToolContext, result: &mut Result<ToolOutput, ToolError>) {
///         if let Ok(out) = result {
///             out.model = ModelOutput::text("[redacted]");
///         }
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait ToolHook: Send + Sync + 'static {
    /// Runs before the tool. Returning an output skips the tool; that output is the result.
    async fn before(&self, input: &Value, cx: &ToolContext) -> Option<ToolOutput> {
        let _ = (input, cx);
        None
    }

    /// Runs after the tool (or after a skip), and may change the result.
    async fn after(
        &self,
        input: &Value,
        cx: &ToolContext,
        result: &mut Result<ToolOutput, ToolError>,
    ) {
        let _ = (input, cx, result);
    }
}

/// The layer that runs a [`ToolHook`].
#[derive(Clone)]
pub struct HookLayer(pub Arc<dyn ToolHook>);

#[async_trait::async_trait]
impl Layer for HookLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let cx = call.cx;
        let input = call.input.clone();
        let mut result = match self.0.before(&input, cx).await {
            Some(output) => Ok(output),
            None => next.run(call).await,
        };
        self.0.after(&input, cx, &mut result).await;
        result
    }
}
