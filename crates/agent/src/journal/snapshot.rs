//! [`SnapshotLayer`]: the durability snapshot hook after each successful call of a
//! side-effecting tool (Smithers' `durabilitySnapshot`).
//!
//! It sits right above the journal, so the call's outcome is on record before the snapshot
//! starts (a crash during a slow snapshot keeps it). Its failure is logged and swallowed.

use std::sync::Arc;

use toolsmith_core::layer::{Call, Layer, Next};
use toolsmith_core::{ToolError, ToolOutput, async_trait};

use super::DurabilitySnapshot;

/// Calls the hook after a successful side-effecting call (see the [module docs](self)).
pub(crate) struct SnapshotLayer(pub(crate) Arc<dyn DurabilitySnapshot>);

#[async_trait]
impl Layer for SnapshotLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let (side_effect, cx) = (call.tool.meta().side_effect, call.cx);
        let result = next.run(call).await;
        if side_effect
            && result.is_ok()
            && let Err(e) = self.0.snapshot(cx.tool_name(), cx.tool_call_id()).await
        {
            tracing::warn!(
                tool = cx.tool_name(),
                tool_call_id = cx.tool_call_id(),
                error = %e,
                "the durability snapshot failed (ignored)"
            );
        }
        result
    }
}
