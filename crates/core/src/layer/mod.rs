//! Layers: the middleware around a tool call.
//!
//! A [`Layer`] sees every call on its way to the tool and every result on its way back, and may
//! answer without calling the tool at all. Cross-cutting behaviour lives here, one small file per
//! concern, so that adding a concern means adding a layer, not touching the loop.
//!
//! # The order
//!
//! Before any layer runs, the loop *prepares* each call: it looks the tool up (unknown names get
//! an error result listing the available tools), parses the JSON input and validates it against
//! the tool's schema with the validator compiled once per tool ([`ToolSpec::validate`]). Invalid
//! calls never reach the layers, and their input is recorded as `{}` in the thread so that every
//! provider accepts the history.
//!
//! Valid calls then pass through the stack, outermost first:
//!
//! 1. [`TracingLayer`]: a span per call, `tool.call.started` / `finished` / `failed` events with
//!    the duration.
//! 2. [`SecretsLayer`]: the run's secret variables masked as `[secret]` in everything the call
//!    returns, so no log, stream part, thread or model sees them.
//! 3. [`LoopDetectionLayer`]: identical calls (same name, same canonical arguments) past a limit
//!    get a hint or abort the run.
//! 4. [`HookLayer`]s: caller hooks that may skip a call with a supplied result or rewrite what
//!    the model sees.
//! 5. [`ResultLimitLayer`]: each tool's result limit (or the agent's) applied to what the model
//!    sees — truncated or summarised — so the hooks above see the limited text, as RadarOS's
//!    `afterToolExec` does; the caller's value is never cut. Inside it, when the agent keeps
//!    large results as artifacts, the agent crate's artifact layer.
//! 6. the caller's own layers ([`AgentBuilder::layer`]), then [`TimeoutLayer`];
//! 7. the agent crate's innermost layers: the durability snapshot hook (after a successful
//!    side-effecting call), the run's journal (the call's intent recorded before it executes,
//!    its outcome after; only for a run with a log), [`CacheLayer`] (inside the journal, so a
//!    resumed call gets the journal's recorded outcome, never a cached one, and a hit is
//!    journaled like a call), and last a catch-panic layer (a panicking tool becomes the error
//!    `TOOL_PANICKED`, which the journal records as its outcome).
//!
//! [`AgentBuilder::layer`]: https://docs.rs/toolsmith-agent/latest/toolsmith_agent/struct.AgentBuilder.html#method.layer
//!
//! [`ToolSpec::validate`]: crate::ToolSpec::validate

mod cache;
mod hooks;
mod loop_detection;
mod result_limit;
mod secrets;
mod timeout;
mod tracing;
mod truncate;

use std::sync::Arc;

use serde_json::Value;

pub use self::tracing::{TracingLayer, capture_content};
pub use cache::{CacheLayer, CacheScope, MemoryCache, ResultCache, cacheable};
pub use hooks::{HookLayer, ToolHook};
pub use loop_detection::{LoopAction, LoopDetection, LoopDetectionLayer};
pub use result_limit::{ResultLimitLayer, SUMMARIZE_INPUT_CHARS, SUMMARIZE_PROMPT};
pub use secrets::{CallSecrets, SecretsLayer};
pub(crate) use secrets::{mask_text, mask_value};
pub use timeout::TimeoutLayer;
pub use truncate::truncate;

use crate::{SharedTool, ToolContext, ToolError, ToolOutput};

/// One call on its way through the stack.
pub struct Call<'a> {
    /// The tool being called.
    pub tool: &'a SharedTool,
    /// Its validated input.
    pub input: Value,
    /// The call's context.
    pub cx: &'a ToolContext,
}

/// Middleware around a tool call. One required method: do something, call `next.run(call)` (or
/// don't), do something with the result.
///
/// ```
/// use toolsmith_core::async_trait;
/// use toolsmith_core::layer::{Call, Layer, Next};
/// use toolsmith_core::{ToolError, ToolOutput};
///
/// /// Refuses every call on Sundays, say.
/// struct Closed;
///
/// #[async_trait]
/// impl Layer for Closed {
///     async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
///         if call.cx.metadata().get("closed").is_some() {
///             return Err(ToolError::msg("The shop is closed."));
///         }
///         next.run(call).await
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Layer: Send + Sync + 'static {
    /// Handles one call.
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError>;
}

/// The rest of the stack, ending at the tool.
pub struct Next<'a> {
    rest: &'a [Arc<dyn Layer>],
}

impl Next<'_> {
    /// Passes the call on to the next layer, or to the tool.
    pub async fn run(self, call: Call<'_>) -> Result<ToolOutput, ToolError> {
        match self.rest.split_first() {
            Some((layer, rest)) => layer.call(call, Next { rest }).await,
            None => call.tool.call(call.input, call.cx).await,
        }
    }
}

/// An ordered stack of layers, outermost first.
#[derive(Clone, Default)]
pub struct LayerStack(Vec<Arc<dyn Layer>>);

impl LayerStack {
    /// An empty stack: calls go straight to the tool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a layer inside the existing ones.
    pub fn push(&mut self, layer: impl Layer) -> &mut Self {
        self.0.push(Arc::new(layer));
        self
    }

    /// Adds a shared layer inside the existing ones.
    pub fn push_shared(&mut self, layer: Arc<dyn Layer>) -> &mut Self {
        self.0.push(layer);
        self
    }

    /// How many layers there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Runs a call through the stack to the tool.
    pub async fn call(
        &self,
        tool: &SharedTool,
        input: Value,
        cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        Next { rest: &self.0 }.run(Call { tool, input, cx }).await
    }
}

impl std::fmt::Debug for LayerStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LayerStack({} layers)", self.0.len())
    }
}
