//! The `run_code` tool: JavaScript in a fresh, capability-free QuickJS runtime per call.

mod convert;
mod engine;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{
    ModelOutput, Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, async_trait,
};

use crate::Workspace;
use engine::{Failed, Failure, Outcome};

const NAME: &str = "run_code";

/// The error code of code that threw, failed to parse or overflowed its stack.
pub const RUN_CODE_ERROR: &str = "RUN_CODE_ERROR";
/// The error code of code stopped at its deadline.
pub const RUN_CODE_TIMEOUT: &str = "RUN_CODE_TIMEOUT";
/// The error code of code that hit the memory limit.
pub const RUN_CODE_OUT_OF_MEMORY: &str = "RUN_CODE_OUT_OF_MEMORY";
/// The error code of code stopped because the call was cancelled.
pub const RUN_CODE_CANCELLED: &str = "RUN_CODE_CANCELLED";

/// Extra native stack for the worker thread beyond the script's own stack budget: Rust frames,
/// QuickJS's C frames outside the checked region, and a safety margin.
const WORKER_STACK_MARGIN: usize = 2 << 20;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCodeLimits {
    /// The runtime's heap limit (default 64 MiB); 0 disables it.
    pub memory_bytes: usize,
    /// Wall-clock time for the whole call: evaluation, promise jobs and reading the result
    /// (default 5 s).
    pub deadline: Duration,
    /// The script's stack (default 512 KiB); deeper recursion throws a `RangeError`. 0 disables
    /// the check (never do that with untrusted code: the worker thread's stack is then the only
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
/// - Limits ([`RunCodeLimits`]): a heap cap, a stack cap and a wall-clock deadline enforced by
///   QuickJS's interrupt handler, which also stops the script when the call's cancellation token
///   fires. Promise jobs run under the same deadline. The engine runs on its own thread, so the
///   async runtime is never blocked.
/// - Output: the app value `{"result": <JSON>, "logs": [<line>…]}`. The result is the last value
///   through `JSON.stringify`, except: `undefined` → `null`; a function → `"[Function: name]"`;
///   a symbol, a BigInt, `NaN` or an infinity → its string; an error → its text and stack; a
///   value that cannot be serialised (cyclic) → `String(value)`. A result longer than
///   `output_bytes` becomes a string of its first bytes with a note. The model sees the compact
///   JSON result, then `Console:` and the lines, if any.
/// - Errors, all respond-to-model, with `details.logs` when the console was written to:
///   [`RUN_CODE_ERROR`] (the JS error as `Name: message` and its stack, including a stack
///   overflow's `RangeError`), [`RUN_CODE_TIMEOUT`] (`Code ran longer than <ms>ms`),
///   [`RUN_CODE_OUT_OF_MEMORY`] (`Code ran out of memory (limit <n> bytes)`),
///   [`RUN_CODE_CANCELLED`], and `INVALID_INPUT` for source longer than `output_bytes`.
///
/// The call runs arbitrary code, so its meta marks a side effect (not idempotent).
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{Tool, ToolContext};
/// use toolsmith_builtins::{RunCode, RunCodeLimits};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
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
}

impl RunCode {
    /// The tool, named `run_code`, with these limits.
    pub fn new(limits: RunCodeLimits) -> Self {
        let description = format!(
            "Run JavaScript in an isolated sandbox (QuickJS, ES2023) and return the value of the \
             last expression as JSON, plus anything written with console.log. Top-level await \
             works and a returned promise is awaited. There is no file system, network, timers, \
             require or process: only the language's built-ins. Each call starts from a fresh \
             state. Limits: {} ms, {} MiB of memory.",
            limits.deadline.as_millis(),
            limits.memory_bytes >> 20,
        );
        RunCode {
            spec: ToolSpec::for_type::<Input>(NAME).with_description(description),
            meta: ToolMeta::new().side_effect(true),
            limits,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &RunCodeLimits {
        &self.limits
    }

    /// Replaces the limits (the description, which names them, follows).
    pub fn with_limits(self, limits: RunCodeLimits) -> Self {
        Self::new(limits)
    }

    /// Runs `code` on the current thread, blocking until it finishes; setting `cancel` stops
    /// it. [`Tool::call`] runs this on a worker thread; use it directly only from a thread whose
    /// stack is at least [`RunCodeLimits::stack_bytes`] plus 2 MiB.
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
        to_output(engine::execute(code, &self.limits, cancel), &self.limits)
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
}

impl Default for RunCode {
    fn default() -> Self {
        Self::new(RunCodeLimits::default())
    }
}

/// The `run_code` tool with the default limits and the workspace's output cap (see [`RunCode`]).
pub fn run_code(workspace: &Arc<Workspace>) -> RunCode {
    RunCode::new(RunCodeLimits::for_workspace(workspace))
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
        let cancel = Arc::new(AtomicBool::new(cx.is_cancelled()));
        let _guard = CancelOnDrop(Arc::clone(&cancel));
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let limits = self.limits.clone();
        let worker_cancel = Arc::clone(&cancel);
        std::thread::Builder::new()
            .name("run_code".to_string())
            .stack_size(limits.stack_bytes.saturating_add(WORKER_STACK_MARGIN))
            .spawn(move || {
                let _ = tx.send(engine::execute(&code, &limits, worker_cancel));
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
        to_output(result, &self.limits)
    }
}

/// Builds the tool's output, or its error, from the engine's result.
fn to_output(
    result: Result<Outcome, Failed>,
    limits: &RunCodeLimits,
) -> Result<ToolOutput, ToolError> {
    let Outcome { json, logs } = result.map_err(|failed| to_error(failed, limits))?;
    let (result, shown) = if json.len() > limits.output_bytes {
        let text = format!(
            "{}… [result truncated: {} bytes of JSON]",
            prefix(&json, limits.output_bytes),
            json.len()
        );
        (Value::String(text.clone()), Value::String(text).to_string())
    } else {
        let value = serde_json::from_str(&json).unwrap_or(Value::String(json));
        let shown = value.to_string();
        (value, shown)
    };
    let text = if logs.is_empty() {
        shown
    } else {
        format!("{shown}\n\nConsole:\n{}", logs.join("\n"))
    };
    Ok(ToolOutput::json(json!({"result": result, "logs": logs}))
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

fn to_error(Failed { failure, logs }: Failed, limits: &RunCodeLimits) -> ToolError {
    let error = match failure {
        Failure::Thrown(text) => ToolError::new(RUN_CODE_ERROR, cap(text, limits.output_bytes)),
        Failure::Timeout => ToolError::new(
            RUN_CODE_TIMEOUT,
            format!("Code ran longer than {}ms", limits.deadline.as_millis()),
        ),
        Failure::OutOfMemory => ToolError::new(
            RUN_CODE_OUT_OF_MEMORY,
            format!(
                "Code ran out of memory (limit {} bytes)",
                limits.memory_bytes
            ),
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
