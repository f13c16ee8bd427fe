use std::time::Duration;

use super::{Call, Layer, Next};
use crate::{ToolError, ToolOutput};

/// Limits each call to the tool's [`timeout`](crate::ToolMeta::timeout), or the default.
///
/// On expiry the call's cancellation token is cancelled (so cooperative work stops), the call's
/// future is dropped, and the result is the error `TOOL_TIMEOUT`:
/// `Tool "<name>" timed out after <ms>ms`. The model sees it and may try something else.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeoutLayer {
    default: Option<Duration>,
}

impl TimeoutLayer {
    /// A layer applying `default` to tools that set no timeout of their own (`None`: no limit).
    pub fn new(default: Option<Duration>) -> Self {
        TimeoutLayer { default }
    }
}

#[async_trait::async_trait]
impl Layer for TimeoutLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let Some(limit) = call.tool.meta().timeout.or(self.default) else {
            return next.run(call).await;
        };
        let cx = call.cx;
        match tokio::time::timeout(limit, next.run(call)).await {
            Ok(result) => result,
            Err(_) => {
                cx.cancellation().cancel();
                Err(ToolError::new(
                    "TOOL_TIMEOUT",
                    format!(
                        "Tool \"{}\" timed out after {}ms",
                        cx.tool_name(),
                        limit.as_millis()
                    ),
                )
                .with_details(serde_json::json!({ "timeoutMs": limit.as_millis() as u64 })))
            }
        }
    }
}
