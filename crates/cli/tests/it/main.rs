//! The `toolsmith` command's integration tests, one binary: the command run as a user would,
//! durable runs and reverts on real stores, and (with the `local` feature) the embedded model.

mod common;

mod cli;
mod cli_approvals;
mod cli_cache;
mod cli_crash;
mod cli_crash_points;
mod cli_faults;
mod cli_files;
mod cli_mcp;
mod cli_mcp_interop;
mod cli_mcp_serve;
mod cli_no_stream;
mod cli_secrets;
mod cli_serve;
mod cli_subagents;
mod cli_threads;
mod cli_wires;
mod cli_workspace;
mod durable;
mod handback;
#[cfg(feature = "local")]
mod local_model;
mod revert;
mod secrets_canary;
mod serve_crash_points;
