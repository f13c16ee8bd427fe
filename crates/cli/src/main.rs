//! The `toolsmith` command.

mod alloc;
mod cli;

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;

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
    // The `run_code` tool evaluates JavaScript in worker processes started from this binary
    // as `toolsmith __run-code-worker` (through the helper above), killed at their deadline.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == toolsmith_builtins::RUN_CODE_WORKER_ARG)
    {
        toolsmith_builtins::run_code_worker_main();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime starts");
    // The command runs as a task on the runtime's workers, where the connections' tasks and
    // the I/O driver run too; polled by `block_on` on this thread it paid a hop between
    // threads at every wake (measured: about 70 µs a stored tool call on PostgreSQL).
    let command = runtime.spawn(cli::main());
    match runtime.block_on(command) {
        Ok(code) => code,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => ExitCode::FAILURE,
    }
}
