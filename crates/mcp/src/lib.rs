//! toolsmith and the Model Context Protocol, both ways, on `rmcp` (the official Rust SDK).
//!
//! - [`client`]: any MCP server's tools as toolsmith tools — the `mcpServers` entries of an
//!   agent config or of a file of their own, over stdio (optionally inside toolsmith's
//!   sandbox) or streamable HTTP.
//! - [`server`]: toolsmith's tools served to any MCP client, over stdio or streamable HTTP,
//!   approvals asked of the client (elicitation), never run unapproved.
//!
//! The user's guide is `docs/mcp.md`.

pub mod client;
pub mod server;
mod trace;
