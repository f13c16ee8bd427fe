//! The [`Tool`] trait.

use std::sync::Arc;

use serde_json::Value;

use crate::kind::ToolKind;
use crate::{
    PrepareTools, RunScope, StartCalls, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec,
};

/// A tool: a model-facing [`ToolSpec`], runtime [`ToolMeta`], a [`ToolKind`] and one async
/// method that runs it.
///
/// `call` receives the input exactly as the model sent it, already parsed and validated against
/// [`ToolSpec::input_schema`] by the loop, and the per-call [`ToolContext`]. It returns the
/// [`ToolOutput`] (the app value and what the model sees) or a [`ToolError`].
///
/// Most tools are built with [`from_fn`](crate::from_fn) or the `#[tool]` macro rather than by
/// implementing this trait directly; implement it when a tool carries state or builds its spec at
/// run time (an MCP import, a sub-agent).
///
/// ```
/// use serde_json::{json, Value};
/// use toolsmith_core::{async_trait, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
///
/// struct Echo(ToolSpec);
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     async fn call(&self, input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::json(input))
///     }
/// }
///
/// let echo = Echo(ToolSpec::new("echo", json!({"type": "object"})).with_description("Echo."));
/// assert_eq!(echo.spec().name(), "echo");
/// ```
#[async_trait::async_trait]
pub trait Tool: Send + Sync + 'static {
    /// What the model sees: name, description, input schema.
    fn spec(&self) -> &ToolSpec;

    /// Runtime facts the model never sees. Defaults to [`ToolMeta::default_ref`].
    fn meta(&self) -> &ToolMeta {
        ToolMeta::default_ref()
    }

    /// How the tool is executed. Defaults to [`ToolKind::Function`].
    fn kind(&self) -> &ToolKind {
        &ToolKind::Function
    }

    /// Runs the tool on validated input.
    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// Whether the next request of the run offers the tool to the model. Defaults to `true`.
    /// A tool that hides itself (`subagent_create` at its instance limit) must still refuse a
    /// call the model makes anyway.
    fn offered(&self, scope: &RunScope) -> bool {
        let _ = scope;
        true
    }

    /// What the tool changes in the toolset of each run it is part of, as the run starts (a
    /// resumable sub-agent stands in for itself with `subagent_create` and `subagent_message`):
    /// see [`PrepareTools`]. Defaults to `None`; wrappers delegate to the tool they wrap.
    fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
        None
    }

    /// The calls the tool asks each run to make before the model's first step (an `immediate`
    /// sub-agent's start): see [`StartCalls`]. Defaults to `None`; wrappers delegate to the tool
    /// they wrap.
    fn start_calls(&self) -> Option<&dyn StartCalls> {
        None
    }
}

/// A tool behind an [`Arc`], as toolsets hold them.
pub type SharedTool = Arc<dyn Tool>;

/// Anything that can become a [`SharedTool`]: every [`Tool`], and a `SharedTool` itself.
pub trait IntoTool {
    /// Converts into a shared tool.
    fn into_tool(self) -> SharedTool;
}

impl<T: Tool> IntoTool for T {
    fn into_tool(self) -> SharedTool {
        Arc::new(self)
    }
}

impl IntoTool for SharedTool {
    fn into_tool(self) -> SharedTool {
        self
    }
}
