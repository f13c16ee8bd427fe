//! Command-line parsing and dispatch.

mod approve;
mod doctor;
mod mcp;
mod mcp_serve;
mod print;
mod run;
mod secrets;
mod serve;
mod spinner;
mod threads;
mod tool;
mod tools;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A tool runtime for AI agents.
#[derive(Parser)]
#[command(name = "toolsmith", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an agent on a prompt.
    Run(Box<run::RunArgs>),
    /// Call a built-in tool directly.
    Tool {
        #[command(subcommand)]
        command: tool::ToolCommand,
    },
    /// List and print stored threads with their tool-call journal.
    Threads {
        #[command(subcommand)]
        command: threads::ThreadsCommand,
    },
    /// Show what the sandbox can enforce on this machine.
    Doctor(doctor::DoctorArgs),
    /// Work with the available tools.
    Tools {
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// Serve agents over HTTP: runs streamed as SSE, async and external tools, approvals.
    Serve(Box<serve::ServeArgs>),
    /// Manage the service's accounts.
    Accounts {
        #[command(subcommand)]
        command: serve::AccountsCommand,
    },
    /// Manage the service's agents.
    Agents {
        #[command(subcommand)]
        command: serve::AgentsCommand,
    },
    /// Serve toolsmith's tools to MCP clients.
    Mcp {
        #[command(subcommand)]
        command: mcp_serve::McpCommand,
    },
}

/// Exit code of a failed run (usage errors exit 2, through clap).
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error found after parsing.
pub(crate) const EXIT_USAGE: u8 = 2;

pub(crate) async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(*args).await,
        Command::Tool { command } => tool::tool(command).await,
        Command::Tools { command } => tools::tools(command),
        Command::Doctor(args) => doctor::doctor(args),
        Command::Threads { command } => threads::threads(command).await,
        Command::Serve(args) => serve::serve(*args).await,
        Command::Accounts { command } => serve::accounts(command).await,
        Command::Agents { command } => serve::agents(command).await,
        Command::Mcp { command } => mcp_serve::mcp(command).await,
    }
}

/// Prints a usage error the way clap does and returns its exit code.
pub(crate) fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_USAGE)
}
