//! The `toolsmith` command.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // The sandbox launcher re-executes this binary as `toolsmith __sandbox-exec` to confine a
    // command; that must happen before any thread exists (namespaces need a single-threaded
    // process), so before the async runtime starts.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "__sandbox-exec")
    {
        toolsmith_sandbox::exec::helper_main();
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime starts")
        .block_on(cli::main())
}
