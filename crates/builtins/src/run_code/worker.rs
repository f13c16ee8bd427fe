//! The worker process: where it is ([`RunCodeWorker`]), and what it runs ([`run_code_worker_main`]).
//!
//! The worker is started by the sandbox helper with its stdout as a duplex socket (see
//! `toolsmith_sandbox::exec::Launcher::spawn`). Before it answers anything it drops the little
//! the helper's plan let it keep: a Landlock ruleset that handles every filesystem right (and
//! TCP, and scopes, where the kernel has them) with no rule at all, so no file can be opened,
//! not even the worker's own binary. Then it warms the engine up, says [`Response::Ready`] and
//! serves one request at a time on a thread whose stack fits the script's stack limit.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use std::time::Instant;

use super::engine::Failure;
use super::protocol::{FrameError, MAX_REQUEST, Request, Response, read_frame, write_frame};
use super::{RunCodeLimits, WORKER_STACK_MARGIN, engine};

/// The argument that selects the worker mode (`toolsmith __run-code-worker`).
pub const RUN_CODE_WORKER_ARG: &str = "__run-code-worker";

/// The environment variable naming the worker program explicitly.
pub const RUN_CODE_WORKER_ENV: &str = "TOOLSMITH_RUN_CODE_WORKER";

/// The dedicated worker binary's file name.
const WORKER_BIN: &str = "toolsmith-run-code-worker";

/// The limits the worker prepares its runtimes for, on its command line. The stack's also
/// sizes the worker's thread.
const STACK_FLAG: &str = "--stack-bytes";
const MEMORY_FLAG: &str = "--memory-bytes";
const OUTPUT_FLAG: &str = "--output-bytes";

/// The program `run_code` starts its worker processes from: the dedicated
/// `toolsmith-run-code-worker` binary or any program whose `main` calls
/// [`run_code_worker_main`] when its first argument is [`RUN_CODE_WORKER_ARG`] or
/// `__sandbox-exec` (the `toolsmith` CLI does). The same program serves as the sandbox helper
/// that confines the worker, so it is the only file `run_code` needs.
///
/// ```
/// use toolsmith_builtins::RunCodeWorker;
///
/// let worker = RunCodeWorker::new("/usr/local/bin/toolsmith");
/// assert_eq!(worker.program(), std::path::Path::new("/usr/local/bin/toolsmith"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCodeWorker {
    program: PathBuf,
}

impl RunCodeWorker {
    /// The worker program at `program`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        RunCodeWorker {
            program: program.into(),
        }
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Finds the worker: `$TOOLSMITH_RUN_CODE_WORKER`; else `toolsmith-run-code-worker` next to
    /// the current executable (or one directory up when that is cargo's `deps/`); else the
    /// current executable itself when it is named `toolsmith`.
    ///
    /// # Errors
    ///
    /// A message saying where it looked.
    pub fn locate() -> Result<RunCodeWorker, String> {
        toolsmith_sandbox::exec::locate_program(RUN_CODE_WORKER_ENV, WORKER_BIN)
            .map(RunCodeWorker::new)
    }

    /// The arguments of a worker for `limits`.
    pub(super) fn args(limits: &RunCodeLimits) -> Vec<String> {
        vec![
            RUN_CODE_WORKER_ARG.into(),
            STACK_FLAG.into(),
            limits.stack_bytes.to_string(),
            MEMORY_FLAG.into(),
            limits.memory_bytes.to_string(),
            OUTPUT_FLAG.into(),
            limits.output_bytes.to_string(),
        ]
    }
}

/// The worker's entry point (and the sandbox helper's, for the same binary):
///
/// - `__sandbox-exec …`: the sandbox helper (`toolsmith_sandbox::exec::helper_main`), which
///   confines the worker before exec'ing it;
/// - `__run-code-worker [--stack-bytes N] [--memory-bytes N] [--output-bytes N]` (or no
///   argument): the worker, its runtimes prepared for these limits (the defaults of
///   [`RunCodeLimits`] otherwise; a request with other limits gets a runtime made for it). It
///   must be started by `run_code` (its stdout a duplex socket); it serves requests until EOF.
///
/// Call it first thing in `main`, before any thread is started (the helper needs a
/// single-threaded process). Never returns.
pub fn run_code_worker_main() -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args
        .first()
        .is_some_and(|a| a == toolsmith_sandbox::exec::HELPER_ARG)
    {
        toolsmith_sandbox::exec::helper_main();
    }
    let mut rest = args.iter().skip_while(|a| *a == RUN_CODE_WORKER_ARG);
    let mut limits = RunCodeLimits::default();
    while let Some(arg) = rest.next() {
        match (arg.as_str(), rest.next().map(|v| v.parse::<usize>())) {
            (STACK_FLAG, Some(Ok(n))) => limits.stack_bytes = n,
            (MEMORY_FLAG, Some(Ok(n))) => limits.memory_bytes = n,
            (OUTPUT_FLAG, Some(Ok(n))) => limits.output_bytes = n,
            _ => exit_with(&format!("unknown argument {arg:?}")),
        }
    }
    let stack_bytes = limits.stack_bytes;
    let channel = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(UnixStream::from)
    {
        Ok(channel) => channel,
        Err(e) => exit_with(&format!("no channel on stdout: {e}")),
    };
    // Before any thread exists: a Landlock domain binds the thread that makes it and the
    // threads it starts, so the main thread must not stay outside it.
    if let Err(e) = restrict_self() {
        exit_with(&e);
    }
    // The loop runs on a thread sized for the script's stack (the main thread's is whatever
    // RLIMIT_STACK says); the main thread only waits.
    let server = std::thread::Builder::new()
        .name("run_code".into())
        .stack_size(stack_bytes.saturating_add(WORKER_STACK_MARGIN))
        .spawn(move || serve(channel, limits));
    match server.map(std::thread::JoinHandle::join) {
        Ok(Ok(Ok(()))) => std::process::exit(0),
        Ok(Ok(Err(e))) => exit_with(&e),
        Ok(Err(_)) => exit_with("the worker thread panicked"),
        Err(e) => exit_with(&format!("cannot start the worker thread: {e}")),
    }
}

fn exit_with(message: &str) -> ! {
    eprintln!("toolsmith run_code worker: {message}");
    std::process::exit(2)
}

/// Warms up, then answers requests until EOF, each in a runtime prepared before it came.
fn serve(channel: UnixStream, limits: RunCodeLimits) -> Result<(), String> {
    let no_cancel = || Arc::new(AtomicBool::new(false));
    // The first script pays for page faults in QuickJS's code and the allocator's arenas
    // (~0.3 ms); pay it before saying ready.
    let warm = engine::execute("[1].map(x => x + 1)", &limits, no_cancel());
    if let Err(failed) = warm {
        return Err(format!("the engine does not start: {:?}", failed.failure));
    }
    let mut next = engine::prepare(&limits, no_cancel());
    write_frame(&channel, &Response::Ready).map_err(|e| format!("writing: {e}"))?;
    let mut input = &channel;
    loop {
        let frame = match read_frame(&mut input, MAX_REQUEST, |_| Ok(true), None) {
            Ok(frame) => frame,
            Err(FrameError::Closed) => return Ok(()),
            Err(e) => return Err(format!("reading a request: {e}")),
        };
        let request: Request =
            serde_json::from_slice(&frame).map_err(|e| format!("invalid request: {e}"))?;
        drop(frame);
        let (response, used) = match request {
            Request::Run { code, limits } => {
                let deadline = Instant::now() + limits.deadline;
                let prepared = match std::mem::replace(&mut next, Err(Failure::NeverSettled)) {
                    Ok(prepared) if prepared.fits(&limits) => Ok(prepared),
                    _ => engine::prepare(&limits, no_cancel()),
                };
                let result = match &prepared {
                    Ok(prepared) => prepared.run(&code, deadline),
                    Err(failure) => engine::run_in(Err(failure.clone()), &code, deadline),
                };
                let response = Response::Run {
                    result: super::capped(result, &limits),
                };
                (response, Some((prepared, limits)))
            }
            Request::Probe { path } => {
                let response = Response::Probe {
                    open_error: std::fs::File::open(&path).err().map(|e| e.to_string()),
                    socket_error: std::net::TcpListener::bind("127.0.0.1:0")
                        .err()
                        .map(|e| e.to_string()),
                };
                (response, None)
            }
        };
        match write_frame(&channel, &response) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(format!("writing: {e}")),
        }
        // Off the call's path: tear the used runtime down, make the next call's.
        if let Some((used, limits)) = used {
            drop(used);
            next = engine::prepare(&limits, no_cancel());
        } else if next.is_err() {
            next = engine::prepare(&limits, no_cancel());
        }
    }
}

/// A Landlock domain that handles every right the kernel knows and grants none: no file can
/// be opened or executed, no TCP port bound or connected, no signal sent out. On a kernel
/// without Landlock this does nothing: the helper's plan decided (fail-closed policies refuse
/// to start without it).
fn restrict_self() -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
    };
    let abi = ABI::V6;
    let err = |e: landlock::RulesetError| format!("landlock: {e}");
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .handle_access(AccessNet::from_all(abi))
        .map_err(err)?
        .scope(Scope::from_all(abi))
        .map_err(err)?
        .create()
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    let _ = status;
    Ok(())
}
