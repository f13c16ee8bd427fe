//! The `toolsmith` command.

mod cli;

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    cli::main().await
}
