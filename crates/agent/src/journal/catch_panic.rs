//! [`CatchPanicLayer`]: a panicking tool becomes the error `TOOL_PANICKED`; the run survives it.
//!
//! It is the innermost layer of every call, so that the journal above it records a panic as
//! the call's outcome; [`catch_panic`] also wraps the whole stack, so that a panicking layer
//! (a caller's hook) is caught the same way.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use toolsmith_core::layer::{Call, Layer, Next};
use toolsmith_core::{ToolError, ToolOutput, async_trait};

/// Catches a panic of the tool below it (see the [module docs](self)).
pub(crate) struct CatchPanicLayer;

#[async_trait]
impl Layer for CatchPanicLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let tool = call.cx.tool_name().to_string();
        catch_panic(&tool, next.run(call)).await
    }
}

/// Runs `call` (of the tool named `tool`), a panic caught as the error `TOOL_PANICKED`.
pub(crate) async fn catch_panic(
    tool: &str,
    call: impl Future<Output = Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            tracing::error!(tool, panic = panic_message(&panic), "tool panicked");
            Err(ToolError::new(
                "TOOL_PANICKED",
                format!("Tool \"{tool}\" failed unexpectedly (it panicked)."),
            )
            .with_operator_detail(panic_message(&panic)))
        })
}

/// The text of a panic's payload (a `&str` or a `String`; another payload is named as such).
pub(crate) fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_string())
}
