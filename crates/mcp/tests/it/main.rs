//! toolsmith-mcp against MCP servers and clients nobody here wrote (installed from the
//! lockfiles in `tests/peers` by `scripts/mcp-peers.sh`).

mod client;
mod common;
mod conformance;
mod server;
mod server_context;
