//! The blocking part of `run_code`: one fresh QuickJS runtime per call, under the limits.
//!
//! A runtime and its context can be [`prepare`]d before the code is known (the worker process
//! prepares the next call's while it waits, which takes the ~0.1 ms they cost off the call's
//! path); each is used for one script only.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rquickjs::context::EvalOptions;
use rquickjs::function::Rest;
use rquickjs::promise::PromiseState;
use rquickjs::{Coerced, Context, Ctx, Function, Object, Runtime, Value};
use serde::{Deserialize, Serialize};

use super::RunCodeLimits;
use super::convert::{console_line, error_text, to_json};

/// The note appended once when the console output reaches its cap.
pub(super) const TRUNCATED_NOTE: &str = "[console output truncated]";

/// What a finished script produced.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Outcome {
    /// The value of the last expression (awaited if it was a promise), as JSON text.
    pub json: String,
    /// The console lines.
    pub logs: Vec<String>,
}

/// Why a script did not produce a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Failure {
    /// The code threw (or failed to parse): the JS error text, with its stack if any.
    Thrown(String),
    /// The deadline passed.
    Timeout,
    /// The caller cancelled the call.
    Cancelled,
    /// The runtime hit its memory limit.
    OutOfMemory,
    /// The last value was a promise that can never settle (no job left to run).
    NeverSettled,
    /// The engine could not be set up.
    Engine(String),
}

/// A failure with the console lines written before it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Failed {
    pub failure: Failure,
    pub logs: Vec<String>,
}

const RUNNING: u8 = 0;
const TIMED_OUT: u8 = 1;
const CANCELLED: u8 = 2;

/// Checked by QuickJS's interrupt handler and by the job loop: the deadline and the caller's
/// cancellation flag. Once it has tripped it stays tripped, with the first reason. The deadline
/// is armed when the script starts (the runtime may be prepared long before).
struct Stop {
    /// The origin of `deadline_ns`.
    base: Instant,
    /// Nanoseconds after `base`; `u64::MAX` until armed.
    deadline_ns: AtomicU64,
    cancel: Arc<AtomicBool>,
    reason: AtomicU8,
}

impl Stop {
    fn new(cancel: Arc<AtomicBool>) -> Self {
        Stop {
            base: Instant::now(),
            deadline_ns: AtomicU64::new(u64::MAX),
            cancel,
            reason: AtomicU8::new(RUNNING),
        }
    }

    fn arm(&self, deadline: Instant) {
        let ns = deadline.saturating_duration_since(self.base).as_nanos();
        self.deadline_ns
            .store(u64::try_from(ns).unwrap_or(u64::MAX - 1), Ordering::Relaxed);
    }

    fn tripped(&self) -> bool {
        if self.reason.load(Ordering::Relaxed) != RUNNING {
            return true;
        }
        let reason = if self.cancel.load(Ordering::Relaxed) {
            CANCELLED
        } else if self.base.elapsed().as_nanos()
            >= u128::from(self.deadline_ns.load(Ordering::Relaxed))
        {
            TIMED_OUT
        } else {
            return false;
        };
        // Keep the first reason if both fire at once.
        let _ = self
            .reason
            .compare_exchange(RUNNING, reason, Ordering::Relaxed, Ordering::Relaxed);
        true
    }

    fn failure(&self) -> Option<Failure> {
        match self.reason.load(Ordering::Relaxed) {
            TIMED_OUT => Some(Failure::Timeout),
            CANCELLED => Some(Failure::Cancelled),
            _ => None,
        }
    }
}

/// Console lines, capped at a byte budget (each line counts its length plus a newline).
struct Logs {
    lines: Vec<String>,
    remaining: usize,
    truncated: bool,
}

impl Logs {
    fn new(cap: usize) -> Self {
        Logs {
            lines: Vec::new(),
            remaining: cap,
            truncated: false,
        }
    }

    fn push(&mut self, level: usize, text: &str) {
        if self.truncated {
            return;
        }
        let prefix = match level {
            2 => "[warn] ",
            3 => "[error] ",
            _ => "",
        };
        let needed = prefix.len() + text.len() + 1;
        if needed <= self.remaining {
            self.remaining -= needed;
            self.lines.push(format!("{prefix}{text}"));
            return;
        }
        let mut keep = self
            .remaining
            .saturating_sub(prefix.len() + 1)
            .min(text.len());
        while !text.is_char_boundary(keep) {
            keep -= 1;
        }
        if keep > 0 {
            self.lines.push(format!("{prefix}{}", &text[..keep]));
        }
        self.lines.push(TRUNCATED_NOTE.to_string());
        self.remaining = 0;
        self.truncated = true;
    }
}

type SharedLogs = Arc<Mutex<Logs>>;

fn take_logs(logs: &SharedLogs) -> Vec<String> {
    std::mem::take(&mut logs.lock().unwrap_or_else(PoisonError::into_inner).lines)
}

/// Runs `code` on the current thread in a fresh runtime and context, under `limits`, until it
/// finishes, throws, times out or `cancel` is set. Blocks; the caller picks the thread (its stack
/// must be comfortably larger than `limits.stack_bytes`).
pub(super) fn execute(
    code: &str,
    limits: &RunCodeLimits,
    cancel: Arc<AtomicBool>,
) -> Result<Outcome, Failed> {
    let deadline = Instant::now() + limits.deadline;
    run_in(prepare(limits, cancel), code, deadline)
}

/// Runs `code` in `prepared` (or reports why it could not be prepared) until `deadline`.
pub(super) fn run_in(
    prepared: Result<Prepared, Failure>,
    code: &str,
    deadline: Instant,
) -> Result<Outcome, Failed> {
    match prepared {
        Ok(prepared) => prepared.run(code, deadline),
        Err(failure) => Err(Failed {
            failure,
            logs: Vec::new(),
        }),
    }
}

/// A fresh runtime and context with the console installed, for one script.
pub(super) struct Prepared {
    // Dropped in this order: the context before its runtime.
    context: Context,
    _runtime: Runtime,
    stop: Arc<Stop>,
    logs: SharedLogs,
    /// The limits it was made for (the deadline aside).
    memory_bytes: usize,
    stack_bytes: usize,
    output_bytes: usize,
}

/// A runtime and context under `limits` (the deadline is armed by [`Prepared::run`]); `cancel`
/// stops the script when set.
pub(super) fn prepare(
    limits: &RunCodeLimits,
    cancel: Arc<AtomicBool>,
) -> Result<Prepared, Failure> {
    let engine = |e: rquickjs::Error| Failure::Engine(e.to_string());
    let stop = Arc::new(Stop::new(cancel));
    let logs: SharedLogs = Arc::new(Mutex::new(Logs::new(limits.output_bytes)));
    let rt = Runtime::new().map_err(engine)?;
    rt.set_memory_limit(limits.memory_bytes);
    rt.set_max_stack_size(limits.stack_bytes);
    let handler_stop = Arc::clone(&stop);
    rt.set_interrupt_handler(Some(Box::new(move || handler_stop.tripped())));
    let context = Context::full(&rt).map_err(|e| match e {
        rquickjs::Error::Allocation => Failure::OutOfMemory,
        e => engine(e),
    })?;
    context
        .with(|ctx| install_console(&ctx, &logs, &stop).map_err(|e| classify(&ctx, e, &stop)))?;
    Ok(Prepared {
        context,
        _runtime: rt,
        stop,
        logs,
        memory_bytes: limits.memory_bytes,
        stack_bytes: limits.stack_bytes,
        output_bytes: limits.output_bytes,
    })
}

impl Prepared {
    /// Whether it was made for these limits (the deadline aside).
    pub(super) fn fits(&self, limits: &RunCodeLimits) -> bool {
        (self.memory_bytes, self.stack_bytes, self.output_bytes)
            == (limits.memory_bytes, limits.stack_bytes, limits.output_bytes)
    }

    /// Runs `code` until it finishes, throws, passes `deadline` or is cancelled. Once only: the
    /// runtime keeps what the script left (drop it after).
    pub(super) fn run(&self, code: &str, deadline: Instant) -> Result<Outcome, Failed> {
        self.stop.arm(deadline);
        let result = self.eval(code);
        let lines = take_logs(&self.logs);
        match result {
            Ok(json) => Ok(Outcome { json, logs: lines }),
            Err(failure) => Err(Failed {
                failure,
                logs: lines,
            }),
        }
    }

    fn eval(&self, code: &str) -> Result<String, Failure> {
        let stop = &self.stop;
        self.context.with(|ctx| {
            let mut options = EvalOptions::default();
            options.strict = false;
            options.promise = true;
            options.filename = Some("code.js".to_string());
            let value: Value<'_> = ctx
                .eval_with_options(code, options)
                .map_err(|e| classify(&ctx, e, stop))?;
            // With `promise`, the script's completion arrives as a promise of `{ value }`.
            let completion = settle(&ctx, value, stop)?;
            let value = match completion.as_object() {
                Some(object) => object.get("value").map_err(|e| classify(&ctx, e, stop))?,
                None => completion,
            };
            let value = settle(&ctx, value, stop)?;
            drain_jobs(&ctx, stop)?;
            to_json(&ctx, value, &|| stop.tripped()).map_err(|e| classify(&ctx, e, stop))
        })
    }
}

/// Installs `console` with `log`, `info`, `warn`, `error` and `debug`, writing into `logs`.
///
/// The functions capture no JS value (a JS value held by a Rust closure is invisible to the
/// cycle collector and would outlive the runtime).
fn install_console<'js>(
    ctx: &Ctx<'js>,
    logs: &SharedLogs,
    stop: &Arc<Stop>,
) -> rquickjs::Result<()> {
    let console = Object::new(ctx.clone())?;
    for (level, name) in ["log", "info", "warn", "error", "debug"]
        .into_iter()
        .enumerate()
    {
        let logs = Arc::clone(logs);
        let stop = Arc::clone(stop);
        let method = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<()> {
                if logs
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .truncated
                {
                    return Ok(());
                }
                let line = console_line(&ctx, args, &|| stop.tripped())?;
                logs.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(level, &line);
                Ok(())
            },
        )?
        .with_name(name)?;
        console.set(name, method)?;
    }
    ctx.globals().set("console", console)
}

/// If `value` is a promise, runs jobs until it settles and returns its result.
fn settle<'js>(ctx: &Ctx<'js>, value: Value<'js>, stop: &Stop) -> Result<Value<'js>, Failure> {
    let Some(promise) = value.as_promise().cloned() else {
        return Ok(value);
    };
    loop {
        match promise.state() {
            PromiseState::Resolved | PromiseState::Rejected => {
                return match promise.result::<Value<'js>>() {
                    Some(result) => result.map_err(|e| classify(ctx, e, stop)),
                    None => Err(Failure::NeverSettled),
                };
            }
            PromiseState::Pending => {
                if stop.tripped() {
                    return Err(stop_failure(stop));
                }
                if !ctx.execute_pending_job() {
                    return Err(stop.failure().unwrap_or(Failure::NeverSettled));
                }
            }
        }
    }
}

/// Runs the jobs left over (callbacks of promises nobody awaited), under the same deadline.
fn drain_jobs(ctx: &Ctx<'_>, stop: &Stop) -> Result<(), Failure> {
    loop {
        if stop.tripped() {
            return Err(stop_failure(stop));
        }
        if !ctx.execute_pending_job() {
            return match stop.failure() {
                Some(failure) => Err(failure),
                None => Ok(()),
            };
        }
    }
}

fn stop_failure(stop: &Stop) -> Failure {
    stop.failure().unwrap_or(Failure::Timeout)
}

/// Turns an engine error into a failure: the stop reason first (an interrupt surfaces as an
/// uncatchable exception), then the pending exception.
fn classify(ctx: &Ctx<'_>, error: rquickjs::Error, stop: &Stop) -> Failure {
    if let Some(failure) = stop.failure() {
        return failure;
    }
    match error {
        rquickjs::Error::Exception => describe_exception(&ctx.catch()),
        rquickjs::Error::Allocation => Failure::OutOfMemory,
        other => Failure::Thrown(other.to_string()),
    }
}

/// `Name: message` and the stack for an error object; `Uncaught <value>` for anything else.
fn describe_exception(value: &Value<'_>) -> Failure {
    let Some(object) = value.as_object() else {
        let text = value
            .get::<Coerced<String>>()
            .map(|s| s.0)
            .unwrap_or_else(|_| format!("a {}", value.type_name()));
        return Failure::Thrown(format!("Uncaught {text}"));
    };
    let message = object
        .get::<_, Option<Coerced<String>>>("message")
        .ok()
        .flatten()
        .map(|s| s.0);
    match message {
        Some(message) if message == "out of memory" => Failure::OutOfMemory,
        Some(_) => Failure::Thrown(error_text(object)),
        None => {
            let text = value
                .get::<Coerced<String>>()
                .map(|s| s.0)
                .unwrap_or_else(|_| "an object".to_string());
            Failure::Thrown(format!("Uncaught {text}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_cap_on_a_char_boundary() {
        let mut logs = Logs::new(10);
        logs.push(0, "abc");
        logs.push(0, "ééééé");
        logs.push(0, "never");
        assert_eq!(logs.lines, ["abc", "éé", TRUNCATED_NOTE]);

        let mut logs = Logs::new(12);
        logs.push(2, "careful");
        assert_eq!(logs.lines, ["[warn] care", TRUNCATED_NOTE]);
    }
}
