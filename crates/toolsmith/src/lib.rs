#![doc = include_str!("../../../README.md")]
//!
//! # Crates
//!
//! This facade re-exports the toolsmith crates: the vocabulary ([`toolsmith_core`], at the root),
//! the loop ([`agent`]), model providers ([`providers`]; the embedded local model with the
//! `local` feature), built-in tools ([`builtins`], with [`revert`] of what their file tools
//! changed), durable storage ([`store`], and [`durable`] runs over it), agent configs
//! ([`config`]), MCP both ways ([`mcp`]) and the [`tool`] attribute macro. [`prelude`] holds what most programs need.
//! The `toolsmith` command is the `toolsmith-cli` crate.

pub use toolsmith_core::*;

/// Agent configs: the agent config JSON file, loaded and built into an agent.
pub mod config {
    pub use toolsmith_config::*;
}

/// Durable runs: a run recorded in a store as it goes.
pub mod durable {
    pub use toolsmith_store::durable::*;
}

/// Reverting what the file tools of a stored thread changed.
pub mod revert {
    pub use toolsmith_builtins::revert::*;
}

/// The `#[tool]` attribute macro: a typed tool from a function, its schema derived from the
/// parameters and its description from the doc comment.
pub use toolsmith_macros::tool;

/// The agent loop.
pub mod agent {
    pub use toolsmith_agent::*;
}

/// Model providers: one module per wire, and the scripted test model.
pub mod providers {
    pub use toolsmith_providers::*;
}

/// Durable storage for runs: threads, messages, the tool-call journal and the idempotency
/// ledger, in memory, SQLite or PostgreSQL.
pub mod store {
    pub use toolsmith_store::*;
}

/// Built-in tools.
pub mod builtins {
    pub use toolsmith_builtins::*;
}

/// The Model Context Protocol both ways: any MCP server's tools as toolsmith tools
/// ([`mcp::client`]), toolsmith's tools served to any MCP client ([`mcp::server`]).
pub mod mcp {
    pub use toolsmith_mcp::*;
}

/// The harness service (`toolsmith serve`): agents per account over HTTP, async and external
/// tools, approvals, the AI SDK chat route.
pub mod server {
    pub use toolsmith_server::*;
}

pub use toolsmith_agent::{Agent, AgentBuilder, ExecutionPolicy, RunInput, RunOutput};

/// What most programs need: `use toolsmith::prelude::*;`.
pub mod prelude {
    pub use toolsmith_agent::{
        Agent, ExecutionPolicy, RunError, RunInput, RunOutput, has_tool_call, step_count_is,
    };
    pub use toolsmith_core::{
        Json, LanguageModel, Message, ModelOutput, RunPart, Tool, ToolContext, ToolError, ToolMeta,
        ToolOutput, ToolSpec, Toolset, async_trait, from_fn,
    };
    pub use toolsmith_macros::tool;
}
