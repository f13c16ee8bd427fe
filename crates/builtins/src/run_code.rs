//! The `run_code` tool: JavaScript in a fresh, capability-free QuickJS runtime per call, in a
//! sandboxed worker process that is killed when the deadline passes or the call is cancelled.

mod convert;
mod engine;
mod pool;
mod protocol;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith_core::{
    ModelOutput, Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, async_trait,
};
use toolsmith_sandbox::Strictness;

use crate::Workspace;
use engine::{Failed, Failure, Outcome};
use pool::{Pool, PoolConfig, Reply};
use protocol::{Request, Response};

pub use worker::{RUN_CODE_WORKER_ARG, RUN_CODE_WORKER_ENV, RunCodeWorker, run_code_worker_main};

const NAME: &str = "run_code";

/// The error code of code that threw, failed to parse or overflowed its stack.
pub const RUN_CODE_ERROR: &str = "RUN_CODE_ERROR";
/// The error code of code stopped at its deadline.
pub const RUN_CODE_TIMEOUT: &str = "RUN_CODE_TIMEOUT";
/// The error code of code that hit the memory limit.
pub const RUN_CODE_OUT_OF_MEMORY: &str = "RUN_CODE_OUT_OF_MEMORY";
/// The error code of code stopped because the call was cancelled.
pub const RUN_CODE_CANCELLED: &str = "RUN_CODE_CANCELLED";

/// Extra native stack for the engine's thread beyond the script's own stack budget: Rust frames,
/// QuickJS's C frames outside the checked region, and a safety margin.
const WORKER_STACK_MARGIN: usize = 2 << 20;

/// How long past its deadline a worker may take to report the timeout itself before it is
/// killed. QuickJS's interrupt handler stops ordinary code 12–16 µs after the deadline, and a
/// native sort between two checks overran by 10–14 ms; code in a
/// native loop that never checks (a `reverse` over a 2³² − 1 array-like) is killed here.
const KILL_GRACE: Duration = Duration::from_millis(100);

/// How often a call retries on a worker that turned out to have died while idle.
const STALE_RETRIES: usize = 3;

/// What Rust's allocation-failure handler prints before it aborts: the worker hit the kernel's
/// memory cap outside QuickJS's heap.
const ALLOCATION_FAILED: &str = "memory allocation of";

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// JavaScript source. The value of the last expression is returned; `await` works at the
    /// top level. Use console.log for intermediate output.
    code: String,
}

/// The limits of one `run_code` call.
///
/// ```
/// use std::time::Duration;
/// use toolsmith_builtins::RunCodeLimits;
///
/// let limits = RunCodeLimits {
///     deadline: Duration::from_millis(500),
///     ..RunCodeLimits::default()
/// };
/// assert_eq!(limits.memory_bytes, 64 << 20);
/// assert_eq!(limits.stack_bytes, 512 << 10);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCodeLimits {
    /// The runtime's heap limit (default 64 MiB); 0 disables it. The worker process also gets a
    /// kernel cap on its data segment (`RLIMIT_DATA`): twice this plus the stack and 64 MiB of
    /// headroom, or 1 GiB when this is 0.
    pub memory_bytes: usize,
    /// Wall-clock time for the whole call: evaluation, promise jobs and reading the result
    /// (default 5 s). A worker still running 100 ms past it is killed.
    pub deadline: Duration,
    /// The script's stack (default 512 KiB); deeper recursion throws a `RangeError`. 0 disables
    /// the check (never do that with untrusted code: the engine thread's stack is then the only
    /// bound).
    pub stack_bytes: usize,
    /// The largest accepted source, the console output kept and the largest result returned, in
    /// bytes (default 200 000, the sandbox policy's default `output_bytes`).
    pub output_bytes: usize,
}

impl Default for RunCodeLimits {
    fn default() -> Self {
        RunCodeLimits {
            memory_bytes: 64 << 20,
            deadline: Duration::from_secs(5),
            stack_bytes: 512 << 10,
            output_bytes: 200_000,
        }
    }
}

impl RunCodeLimits {
    /// The defaults, with the output cap of the workspace's policy.
    pub fn for_workspace(workspace: &Workspace) -> Self {
        RunCodeLimits {
            output_bytes: workspace.policy().limits.output_bytes,
            ..Self::default()
        }
    }
}

/// What a worker's sandbox let it do, from [`RunCode::probe_worker`]: a check for tests and
/// diagnostics that the confinement is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerProbe {
    /// Why opening the probed file for reading failed; `None` if it opened.
    pub open_error: Option<String>,
    /// Why binding a TCP socket on 127.0.0.1 failed; `None` if it worked.
    pub socket_error: Option<String>,
}

/// Where the code runs.
#[derive(Debug, Clone)]
enum Mode {
    /// In sandboxed worker processes, from `worker` (`None`: located on first use).
    Process {
        strictness: Strictness,
        worker: Option<RunCodeWorker>,
    },
    /// On a thread of this process.
    InProcess,
}

/// The `run_code` tool: runs JavaScript in an isolated QuickJS engine (quickjs-ng, through
/// `rquickjs`) and returns the value of the last expression with the console output.
///
/// - Input: `{"code": "<JavaScript>"}`, evaluated as a sloppy-mode script with top-level
///   `await`. A promise as last value is awaited.
/// - Isolation: a fresh runtime and context per call, so nothing survives between calls. No host
///   capability: no file system, network, timers, `require`, `process` or module loader; only the
///   language's built-ins and a `console` (`log`, `info`, `warn`, `error`, `debug`) that writes
///   lines into a buffer capped at [`RunCodeLimits::output_bytes`], ending with
///   `[console output truncated]` when cut. `warn` and `error` lines are prefixed `[warn] ` and
///   `[error] `; arguments are joined by spaces, strings as they are, objects as JSON.
/// - The process: the engine runs in a **worker process** confined by the sandbox helper like
///   `bash` (user, network and pid namespaces; Landlock granting only the worker binary and the
///   shared libraries, no write access, then nothing at all once it has started; seccomp without
///   network sockets; `RLIMIT_DATA` as [`RunCodeLimits::memory_bytes`] says; an empty
///   environment). Workers are kept warm: one is started in the background before it is needed
///   ([`RunCode::warm_up`] starts it early) and each serves call after call, one at a time, with
///   a fresh runtime each. The program is found by [`RunCodeWorker::locate`].
/// - Limits ([`RunCodeLimits`]): a heap cap, a stack cap and a wall-clock deadline enforced by
///   QuickJS's interrupt handler; promise jobs run under the same deadline. Code the handler
///   cannot stop (a native loop that never checks it) is killed with its process 100 ms past
///   the deadline, and a cancelled call kills its worker at once: **the deadline and the
///   cancellation hold whatever the script does**. A killed, crashed or out-of-memory worker is
///   replaced in the background. The async runtime is never blocked.
/// - Output: the app value `{"result": <JSON>, "logs": [<line>…]}`. The result is the last value
///   through `JSON.stringify`, except: `undefined` → `null`; a function → `"[Function: name]"`;
///   a symbol, a BigInt, `NaN` or an infinity → its string; an error → its text and stack; a
///   value that cannot be serialised (cyclic) → `String(value)`. A result longer than
///   `output_bytes` becomes a string of its first bytes with a note. The model sees the compact
///   JSON result, then `Console:` and the lines, if any.
/// - Errors, all respond-to-model, with `details.logs` when the console was written to (and the
///   worker could still report it):
///   [`RUN_CODE_ERROR`] (the JS error as `Name: message` and its stack, including a stack
///   overflow's `RangeError`; `The JavaScript engine's process died (<how>)` when the worker
///   crashed), [`RUN_CODE_TIMEOUT`] (`Code ran longer than <ms>ms`),
///   [`RUN_CODE_OUT_OF_MEMORY`] (`Code ran out of memory (limit <n> bytes)`, from QuickJS's cap
///   or the kernel's), [`RUN_CODE_CANCELLED`], `INVALID_INPUT` for source longer than
///   `output_bytes`, and `SANDBOX_UNAVAILABLE` when no worker can be started as the policy
///   requires (no worker program, or a layer missing under a fail-closed policy).
///
/// [`RunCode::in_process`] evaluates on a thread of the calling process instead: an explicit
/// opt-in for trusted code, **without** the guarantee above.
///
/// The call runs arbitrary code, so its meta marks a side effect (not idempotent).
///
/// ```no_run
/// use serde_json::json;
/// use toolsmith_core::{Tool, ToolContext};
/// use toolsmith_builtins::{RunCode, RunCodeLimits};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // Needs the worker program: `toolsmith-run-code-worker` next to this executable, or
/// // TOOLSMITH_RUN_CODE_WORKER naming it.
/// let tool = RunCode::new(RunCodeLimits::default());
/// let cx = ToolContext::for_test("run_code");
/// let out = tool.call(json!({"code": "console.log('hi'); [1, 2].map(x => x * 2)"}), &cx)
///     .await
///     .unwrap();
/// assert_eq!(out.value, json!({"result": [2, 4], "logs": ["hi"]}));
///
/// let err = tool.call(json!({"code": "x + 1"}), &cx).await.unwrap_err();
/// assert_eq!(err.code(), "RUN_CODE_ERROR");
/// assert!(err.message().starts_with("ReferenceError: x is not defined"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct RunCode {
    spec: ToolSpec,
    meta: ToolMeta,
    limits: RunCodeLimits,
    mode: Mode,
    /// The workers, in [`Mode::Process`].
    pool: Option<Arc<Pool>>,
}

impl RunCode {
    /// The tool, named `run_code`, with these limits, running code in sandboxed worker
    /// processes under a fail-closed policy.
    pub fn new(limits: RunCodeLimits) -> Self {
        Self::build(
            limits,
            Mode::Process {
                strictness: Strictness::FailClosed,
                worker: None,
            },
        )
    }

    /// The tool evaluating code **in this process**, on a thread per call, as an explicit choice
    /// of the embedding program (never the model's): no worker program and no sandbox needed,
    /// but QuickJS's interrupt handler is then the only stop. A native loop that never checks
    /// it (`Array.prototype.reverse.call({length: 2 ** 32 - 1})`) runs past the deadline, cannot
    /// be cancelled and keeps its thread busy until it ends, and a memory-safety bug in the
    /// engine is a bug in this process. Use it only for trusted code.
    pub fn in_process(limits: RunCodeLimits) -> Self {
        Self::build(limits, Mode::InProcess)
    }

    fn build(limits: RunCodeLimits, mode: Mode) -> Self {
        let description = format!(
            "Run JavaScript in an isolated sandbox (QuickJS, ES2023) and return the value of the \
             last expression as JSON, plus anything written with console.log. Top-level await \
             works and a returned promise is awaited. There is no file system, network, timers, \
             require or process: only the language's built-ins. Each call starts from a fresh \
             state. Limits: {} ms, {} MiB of memory.",
            limits.deadline.as_millis(),
            limits.memory_bytes >> 20,
        );
        let pool = match &mode {
            Mode::Process { strictness, worker } => Some(Arc::new(Pool::new(PoolConfig {
                limits: limits.clone(),
                strictness: *strictness,
                worker: worker.clone(),
            }))),
            Mode::InProcess => None,
        };
        RunCode {
            spec: ToolSpec::for_type::<Input>(NAME).with_description(description),
            meta: ToolMeta::new().side_effect(true),
            limits,
            mode,
            pool,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &RunCodeLimits {
        &self.limits
    }

    /// Replaces the limits (the description, which names them, follows; workers are started
    /// afresh).
    pub fn with_limits(self, limits: RunCodeLimits) -> Self {
        Self::build(limits, self.mode)
    }

    /// What to do when the machine cannot enforce a layer of the workers' sandbox: refuse with
    /// `SANDBOX_UNAVAILABLE` (the default) or run with what is available. The deadline holds
    /// either way: killing a process needs no optional layer. No effect in process.
    pub fn with_strictness(self, strictness: Strictness) -> Self {
        match self.mode {
            Mode::Process { worker, .. } => {
                Self::build(self.limits, Mode::Process { strictness, worker })
            }
            Mode::InProcess => self,
        }
    }

    /// Starts workers from `worker` rather than the one [`RunCodeWorker::locate`] finds. No
    /// effect in process.
    pub fn with_worker(self, worker: RunCodeWorker) -> Self {
        match self.mode {
            Mode::Process { strictness, .. } => Self::build(
                self.limits,
                Mode::Process {
                    strictness,
                    worker: Some(worker),
                },
            ),
            Mode::InProcess => self,
        }
    }

    /// Whether code runs in this process ([`RunCode::in_process`]).
    pub fn is_in_process(&self) -> bool {
        matches!(self.mode, Mode::InProcess)
    }

    /// Starts a worker in the background if none is idle, so the first call does not wait for
    /// one (~3 ms). Returns at once; a failure shows on the next call.
    pub fn warm_up(&self) {
        if let Some(pool) = &self.pool {
            pool.warm_up();
        }
    }

    /// Asks a worker what its sandbox lets it do: open `path` for reading, bind a TCP socket.
    ///
    /// # Errors
    ///
    /// `SANDBOX_UNAVAILABLE` when no worker starts; [`RUN_CODE_ERROR`] in process or when the
    /// worker died.
    pub async fn probe_worker(&self, path: impl Into<PathBuf>) -> Result<WorkerProbe, ToolError> {
        let Some(pool) = &self.pool else {
            return Err(ToolError::new(
                RUN_CODE_ERROR,
                "run_code runs in process: there is no worker",
            ));
        };
        let path = path.into();
        for _ in 0..STALE_RETRIES {
            let worker = pool.checkout().await.map_err(unavailable)?;
            let request = Request::Probe { path: path.clone() };
            let deadline = Instant::now() + self.limits.deadline + KILL_GRACE;
            match worker.send(&request, Some(deadline)).await {
                Ok(Reply::Answer(Response::Probe {
                    open_error,
                    socket_error,
                })) => {
                    pool.put_back(worker);
                    return Ok(WorkerProbe {
                        open_error,
                        socket_error,
                    });
                }
                Ok(Reply::Stale) => pool.discard(worker),
                _ => {
                    pool.discard(worker);
                    break;
                }
            }
        }
        Err(ToolError::new(RUN_CODE_ERROR, "The worker did not answer"))
    }

    /// Runs `code` **in this process** on the current thread, blocking until it finishes;
    /// setting `cancel` stops it. This is [`RunCode::in_process`]'s engine, with the same lack
    /// of a hard deadline; the worker processes run the same code. Use it only from a thread
    /// whose stack is at least [`RunCodeLimits::stack_bytes`] plus 2 MiB.
    ///
    /// # Errors
    ///
    /// The tool's errors (see [`RunCode`]).
    pub fn run_blocking(
        &self,
        code: &str,
        cancel: Arc<AtomicBool>,
    ) -> Result<ToolOutput, ToolError> {
        self.check_size(code)?;
        let result = capped(engine::execute(code, &self.limits, cancel), &self.limits);
        to_output(result, &self.limits, self.limits.memory_bytes as u64)
    }

    fn check_size(&self, code: &str) -> Result<(), ToolError> {
        if code.len() > self.limits.output_bytes {
            return Err(ToolError::invalid_input(format!(
                "The code is {} bytes long; the limit is {} bytes",
                code.len(),
                self.limits.output_bytes
            )));
        }
        Ok(())
    }

    /// The memory limit the out-of-memory message names: the QuickJS heap's, or the kernel's
    /// cap when the heap is unlimited in a worker.
    fn memory_limit(&self) -> u64 {
        match (&self.mode, self.limits.memory_bytes) {
            (Mode::Process { .. }, 0) => pool::kernel_memory_cap(&self.limits),
            (_, bytes) => bytes as u64,
        }
    }

    /// A call in a worker process.
    async fn call_in_worker(
        &self,
        pool: &Pool,
        code: String,
        cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let limits = &self.limits;
        let cancelled = || to_error(failed(Failure::Cancelled), limits, 0);
        for _ in 0..STALE_RETRIES {
            let worker = tokio::select! {
                worker = pool.checkout() => worker.map_err(unavailable)?,
                () = cx.cancellation().cancelled() => return Err(cancelled()),
            };
            let request = Request::Run {
                code: code.clone(),
                limits: limits.clone(),
            };
            let reply = worker.send(
                &request,
                Some(Instant::now() + limits.deadline + KILL_GRACE),
            );
            // Returning early drops `worker`, which kills its process tree.
            let reply = tokio::select! {
                reply = reply => reply,
                () = cx.cancellation().cancelled() => {
                    pool.discard(worker);
                    return Err(cancelled());
                }
            };
            let died = |how: String| {
                ToolError::new(
                    RUN_CODE_ERROR,
                    format!("The JavaScript engine's process died ({how})"),
                )
            };
            let error = match reply {
                Ok(Reply::Answer(Response::Run { result })) => {
                    pool.put_back(worker);
                    return to_output(result, limits, self.memory_limit());
                }
                Ok(Reply::Stale) => {
                    pool.discard(worker);
                    continue;
                }
                Ok(Reply::Deadline) => to_error(failed(Failure::Timeout), limits, 0),
                Ok(Reply::Died { stderr, .. }) if stderr.contains(ALLOCATION_FAILED) => {
                    to_error(failed(Failure::OutOfMemory), limits, self.memory_limit())
                }
                Ok(Reply::Died { status, stderr }) => {
                    died(status).with_operator_detail(stderr.trim().to_string())
                }
                Ok(Reply::Answer(_)) => died("it answered out of turn".into()),
                Err(_) => died("its driver thread ended".into()),
            };
            pool.discard(worker);
            return Err(error);
        }
        Err(ToolError::new(
            RUN_CODE_ERROR,
            "The JavaScript engine's process died (repeatedly, before the code was sent)",
        ))
    }

    /// A call on a thread of this process ([`RunCode::in_process`]).
    async fn call_in_process(
        &self,
        code: String,
        cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let cancel = Arc::new(AtomicBool::new(cx.is_cancelled()));
        let _guard = CancelOnDrop(Arc::clone(&cancel));
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let limits = self.limits.clone();
        let worker_cancel = Arc::clone(&cancel);
        std::thread::Builder::new()
            .name("run_code".to_string())
            .stack_size(limits.stack_bytes.saturating_add(WORKER_STACK_MARGIN))
            .spawn(move || {
                let result = engine::execute(&code, &limits, worker_cancel);
                let _ = tx.send(capped(result, &limits));
            })
            .map_err(|e| {
                ToolError::new(RUN_CODE_ERROR, "Could not start the JavaScript engine")
                    .with_operator_detail(e.to_string())
            })?;
        let result = tokio::select! {
            result = &mut rx => result,
            () = cx.cancellation().cancelled() => {
                cancel.store(true, Ordering::Relaxed);
                rx.await
            }
        };
        let result =
            result.map_err(|_| ToolError::new(RUN_CODE_ERROR, "The JavaScript engine failed"))?;
        to_output(result, &self.limits, self.memory_limit())
    }
}

impl Default for RunCode {
    fn default() -> Self {
        Self::new(RunCodeLimits::default())
    }
}

/// The `run_code` tool with the default limits, the workspace's output cap and the strictness
/// of its policy (see [`RunCode`]).
pub fn run_code(workspace: &Arc<Workspace>) -> RunCode {
    RunCode::new(RunCodeLimits::for_workspace(workspace))
        .with_strictness(workspace.policy().strictness)
}

/// Sets the flag when dropped: a call abandoned by its caller stops its script.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl Tool for RunCode {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Input { code } = serde_json::from_value(input)
            .map_err(|e| ToolError::invalid_input(format!("Invalid arguments: {e}")))?;
        self.check_size(&code)?;
        match &self.pool {
            Some(pool) => {
                if cx.is_cancelled() {
                    return Err(to_error(failed(Failure::Cancelled), &self.limits, 0));
                }
                self.call_in_worker(pool, code, cx).await
            }
            None => self.call_in_process(code, cx).await,
        }
    }
}

/// `SANDBOX_UNAVAILABLE`, as `bash` reports it.
fn unavailable(message: String) -> ToolError {
    ToolError::new("SANDBOX_UNAVAILABLE", message)
}

fn failed(failure: Failure) -> Failed {
    Failed {
        failure,
        logs: Vec::new(),
    }
}

/// Cuts what the engine produced to the output cap, where it is produced (in the worker, so
/// the frame it sends stays small): a result over the cap becomes a JSON string of its first
/// bytes with a note, an error text is cut with a note.
fn capped(result: Result<Outcome, Failed>, limits: &RunCodeLimits) -> Result<Outcome, Failed> {
    match result {
        Ok(Outcome { json, logs }) if json.len() > limits.output_bytes => {
            let text = format!(
                "{}… [result truncated: {} bytes of JSON]",
                prefix(&json, limits.output_bytes),
                json.len()
            );
            Ok(Outcome {
                json: Value::String(text).to_string(),
                logs,
            })
        }
        Err(Failed {
            failure: Failure::Thrown(text),
            logs,
        }) => Err(Failed {
            failure: Failure::Thrown(cap(text, limits.output_bytes)),
            logs,
        }),
        other => other,
    }
}

/// Builds the tool's output, or its error, from the engine's (capped) result.
fn to_output(
    result: Result<Outcome, Failed>,
    limits: &RunCodeLimits,
    memory_limit: u64,
) -> Result<ToolOutput, ToolError> {
    let Outcome { json, logs } = result.map_err(|failed| to_error(failed, limits, memory_limit))?;
    let value = serde_json::from_str(&json).unwrap_or(Value::String(json));
    let shown = value.to_string();
    let text = if logs.is_empty() {
        shown
    } else {
        format!("{shown}\n\nConsole:\n{}", logs.join("\n"))
    };
    Ok(ToolOutput::json(json!({"result": value, "logs": logs}))
        .with_model_output(ModelOutput::text(text)))
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text`, cut to `max` bytes with a note if longer.
fn cap(text: String, max: usize) -> String {
    if text.len() > max {
        format!("{}… [truncated]", prefix(&text, max))
    } else {
        text
    }
}

fn to_error(
    Failed { failure, logs }: Failed,
    limits: &RunCodeLimits,
    memory_limit: u64,
) -> ToolError {
    let error = match failure {
        Failure::Thrown(text) => ToolError::new(RUN_CODE_ERROR, text),
        Failure::Timeout => ToolError::new(
            RUN_CODE_TIMEOUT,
            format!("Code ran longer than {}ms", limits.deadline.as_millis()),
        ),
        Failure::OutOfMemory => ToolError::new(
            RUN_CODE_OUT_OF_MEMORY,
            format!("Code ran out of memory (limit {memory_limit} bytes)"),
        ),
        Failure::Cancelled => ToolError::new(RUN_CODE_CANCELLED, "The call was cancelled"),
        Failure::NeverSettled => ToolError::new(
            RUN_CODE_ERROR,
            "The code's promise never settled: nothing was left to run",
        ),
        Failure::Engine(detail) => ToolError::new(RUN_CODE_ERROR, "The JavaScript engine failed")
            .with_operator_detail(detail),
    };
    if logs.is_empty() {
        error
    } else {
        error.with_details(json!({ "logs": logs }))
    }
}
