//! The vocabulary of toolsmith.
//!
//! This crate holds the types every other toolsmith crate speaks, and does no I/O:
//!
//! - **Tools**: [`Tool`] (one required async method), [`ToolSpec`] (what the model sees),
//!   [`ToolKind`], [`ToolMeta`] (runtime facts the model never sees), [`ToolOutput`],
//!   [`ToolError`] and [`ToolContext`].
//! - **Typed tools**: [`from_fn`] turns an async closure over a `serde` + `schemars` type into a
//!   tool whose JSON Schema is derived and whose input is validated before the closure runs.
//! - **Schemas**: derivation, strict mode, slimming, canonical JSON and a validator compiled once
//!   per tool ([`schema`]).
//! - **Toolsets**: an ordered, composable collection of tools with a per-run resolver
//!   ([`Toolset`]) and pre-serialised declarations ([`ToolDeclarations`]).
//! - **Run hooks**: what a tool asks of each run it is part of as the run starts: a say in its
//!   toolset ([`PrepareTools`]) and calls before the model's first step ([`StartCalls`]).
//! - **Layers**: the middleware around a tool call ([`layer`]).
//! - **Models and streams**: [`Message`]/[`Part`] (and the provider-invisible
//!   [`MessageMeta`] of a stored step), [`Usage`], [`FinishReason`], the provider
//!   interface [`LanguageModel`] with its stream of [`ModelPart`]s, and the run-level stream
//!   parts [`RunPart`].
//!
//! # Example
//!
//! ```
//! use toolsmith_core::{from_fn, ToolError, Toolset};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! }
//!
//! let add = from_fn("add", "Add two integers.", |args: Add, _cx| async move {
//!     Ok::<_, ToolError>(args.a + args.b)
//! });
//! let tools = Toolset::new().with(add);
//! assert_eq!(tools.names().collect::<Vec<_>>(), ["add"]);
//! ```

mod approval;
mod async_call;
mod client_tool;
mod context;
mod declarations;
mod error;
mod finish;
mod from_fn;
mod inbox;
mod kind;
pub mod layer;
mod message;
mod message_meta;
mod meta;
mod model;
mod model_error;
mod model_part;
mod nested;
mod output;
mod run_hooks;
mod run_part;
pub mod schema;
mod smithers_key;
mod spec;
mod tool;
mod toolset;
mod usage;
mod variable_cell;
mod variables;

pub use approval::{ToolApprovalRequest, ToolApprovalResponse};
pub use async_call::AsyncCall;
pub use client_tool::ClientTool;
pub use context::{Dependencies, EventSink, RunScope, SessionState, ToolContext, UsageReports};
pub use declarations::{ToolDeclaration, ToolDeclarations};
pub use error::{Disposition, Pause, PauseKind, ToolError};
pub use finish::{FinishReason, UnifiedFinishReason};
pub use from_fn::{FnTool, IntoToolOutput, Json, from_fn};
pub use inbox::{Inbox, InboxTicket};
pub use kind::{ProviderTool, ToolKind};
pub use message::{Message, Part, ProviderMetadata, Role, Source, ToolCallPart, ToolResultPart};
pub use message_meta::MessageMeta;
pub use meta::{
    Approval, ApprovalPredicate, AsyncMode, Concurrency, Reconcile, ResultLimit,
    ResultLimitStrategy, Revert, ToolMeta, VariableDecl, VariableKind,
};
pub use model::{CallSettings, LanguageModel, ModelRequest, ModelStream, ToolChoice};
pub use model_error::{ModelError, ModelErrorKind};
pub use model_part::{ModelPart, ModelToolCall};
pub use nested::{NestedHop, NestedResume, NestedRun};
pub use output::{
    Artifact, ContentPart, DENIED_BY_REVIEWER, DENIED_MARKER, ModelOutput, ToolOutput,
};
pub use run_hooks::{PrepareTools, StartCalls};
pub use run_part::{ErrorInfo, RunPart};
pub use smithers_key::smithers_idempotency_key;
pub use spec::ToolSpec;
pub use tool::{IntoTool, SharedTool, Tool};
pub use toolset::{ToolResolver, Toolset};
pub use usage::{InputTokens, OutputTokens, Usage};
pub use variable_cell::VariableCell;
pub use variables::{MIN_MASKED_LEN, SECRET_MASK, Variables};

/// Re-exported so that implementors of [`Tool`] and [`LanguageModel`] use the same macro.
pub use async_trait::async_trait;
/// Re-exported: the cancellation token handed to every tool call.
pub use tokio_util::sync::CancellationToken;

/// Re-exports for the `#[tool]` macro's generated code. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;
}
