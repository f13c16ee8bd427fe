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
    let telemetry = init_tracing(runtime.handle());
    // The command runs as a task on the runtime's workers, where the connections' tasks and
    // the I/O driver run too; polled by `block_on` on this thread it paid a hop between
    // threads at every wake (measured: about 70 µs a stored tool call on PostgreSQL).
    let command = runtime.spawn(cli::main());
    let result = runtime.block_on(command);
    // The last spans and metrics go out on exit (a SIGTERM ends `serve`, `mcp serve` and
    // `run` through here too), from this thread while the runtime still runs the requests.
    telemetry.shutdown();
    match result {
        Ok(code) => code,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => ExitCode::FAILURE,
    }
}

/// Logs go to stderr, filtered by `TOOLSMITH_LOG` (default: warnings); spans and metrics go
/// over OTLP when the standard `OTEL_*` variables ask for it (docs/observability.md), whatever
/// `TOOLSMITH_LOG` says. Variables that cannot be used are reported and export stays off: a
/// run never fails for its telemetry.
fn init_tracing(runtime: &tokio::runtime::Handle) -> toolsmith_telemetry::Telemetry {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let telemetry = toolsmith_telemetry::Telemetry::from_env(runtime).unwrap_or_else(|e| {
        eprintln!("warning: {e}; OpenTelemetry export is off");
        toolsmith_telemetry::Telemetry::off()
    });
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLSMITH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(filter),
        )
        .with(telemetry.layer())
        .init();
    telemetry
}
