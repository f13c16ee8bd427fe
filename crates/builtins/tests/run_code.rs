//! The `run_code` tool through the public [`Tool`] interface, in its sandboxed worker processes
//! (the `toolsmith-run-code-worker` binary cargo builds next to this test).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsmith_builtins::{RunCode, RunCodeLimits, RunCodeWorker};
use toolsmith_core::{CancellationToken, ModelOutput, RunScope, Tool, ToolContext, ToolError};

fn tool() -> RunCode {
    RunCode::new(RunCodeLimits::default())
}

fn short(deadline_ms: u64) -> RunCode {
    RunCode::new(RunCodeLimits {
        deadline: Duration::from_millis(deadline_ms),
        ..RunCodeLimits::default()
    })
}

async fn run_with(tool: &RunCode, code: &str) -> Result<Value, ToolError> {
    let cx = ToolContext::for_test("run_code");
    tool.call(json!({ "code": code }), &cx)
        .await
        .map(|out| out.value)
}

async fn result(code: &str) -> Value {
    let value = run_with(&tool(), code).await.unwrap();
    value["result"].clone()
}

async fn error(tool: &RunCode, code: &str) -> ToolError {
    run_with(tool, code).await.unwrap_err()
}

#[tokio::test]
async fn last_expression_values() {
    assert_eq!(result("1 + 1").await, json!(2));
    assert_eq!(result("0.5 * 3").await, json!(1.5));
    assert_eq!(result("'a' + 'b'").await, json!("ab"));
    assert_eq!(
        result("({a: 1, b: [true, null], c: 'x'})").await,
        json!({"a": 1, "b": [true, null], "c": "x"})
    );
    assert_eq!(result("[1, 2, 3].map(x => x * x)").await, json!([1, 4, 9]));
    assert_eq!(result("undefined").await, Value::Null);
    assert_eq!(result("let x = 1;").await, Value::Null);
    assert_eq!(result("").await, Value::Null);
    assert_eq!(result("var y = 2; y * 21").await, json!(42));
    // An object with a `value` key is not mistaken for the script's completion record.
    assert_eq!(
        result("({value: 5, other: 1})").await,
        json!({"value": 5, "other": 1})
    );
}

#[tokio::test]
async fn unusual_values_are_described() {
    assert_eq!(result("function f() {}; f").await, json!("[Function: f]"));
    assert_eq!(result("Symbol('s')").await, json!("Symbol(s)"));
    assert_eq!(result("2n ** 70n").await, json!("1180591620717411303424"));
    assert_eq!(result("NaN").await, json!("NaN"));
    assert_eq!(result("-Infinity").await, json!("-Infinity"));
    assert_eq!(
        result("({f() {}, n: 1n})").await,
        json!({"f": "[Function: f]", "n": "1"})
    );
    assert_eq!(
        result("const o = {}; o.self = o; o").await,
        json!("[object Object]")
    );
    assert_eq!(result("new Map([[1, 2]])").await, json!({}));
    // Replacing the script's JSON does not change how the host reads the result.
    assert_eq!(
        result("JSON.stringify = () => 'x'; String = null; ({a: [1]})").await,
        json!({"a": [1]})
    );
    let err = result("new TypeError('bad')").await;
    assert!(err.as_str().unwrap().starts_with("TypeError: bad"), "{err}");
}

#[tokio::test]
async fn promises_are_awaited() {
    assert_eq!(
        result("async function f() { await null; return 7 * 6 }; f()").await,
        json!(42)
    );
    assert_eq!(
        result("const v = await Promise.resolve({ok: true}); v").await,
        json!({"ok": true})
    );
    assert_eq!(
        result("Promise.resolve(1).then(x => x + 1)").await,
        json!(2)
    );
    let err = error(&tool(), "Promise.reject(new Error('nope'))").await;
    assert_eq!(err.code(), "RUN_CODE_ERROR");
    assert!(
        err.message().starts_with("Error: nope"),
        "{}",
        err.message()
    );

    let err = error(&tool(), "new Promise(() => {})").await;
    assert_eq!(err.code(), "RUN_CODE_ERROR");
    assert!(err.message().contains("never settled"), "{}", err.message());

    // Jobs nobody awaited still run.
    let value = run_with(
        &tool(),
        "Promise.resolve().then(() => console.log('later')); 1",
    )
    .await
    .unwrap();
    assert_eq!(value, json!({"result": 1, "logs": ["later"]}));
}

#[tokio::test]
async fn console_is_captured() {
    let cx = ToolContext::for_test("run_code");
    let out = tool()
        .call(
            json!({"code": "console.log('a', 1, {b: [2]}, undefined, null); \
                console.info('i'); console.warn('w'); console.error(new RangeError('e')); \
                console.debug('d'); 3"}),
            &cx,
        )
        .await
        .unwrap();
    let logs = out.value["logs"].as_array().unwrap();
    assert_eq!(logs[0], json!("a 1 {\"b\":[2]} undefined null"));
    assert_eq!(logs[1], json!("i"));
    assert_eq!(logs[2], json!("[warn] w"));
    assert!(
        logs[3]
            .as_str()
            .unwrap()
            .starts_with("[error] RangeError: e\n    at ")
    );
    assert_eq!(logs[4], json!("d"));
    assert_eq!(out.value["result"], json!(3));
    let ModelOutput::Text { value: text } = out.model else {
        panic!("text output expected");
    };
    assert!(text.starts_with("3\n\nConsole:\na 1 {\"b\":[2]} undefined null\ni\n[warn] w\n"));

    // Lone surrogates are replaced, not an error.
    let out = tool()
        .call(json!({"code": "console.log('a\\ud800b'); '\\ud800'"}), &cx)
        .await
        .unwrap();
    assert_eq!(
        out.value,
        json!({"result": "\u{fffd}", "logs": ["a\u{fffd}b"]})
    );

    let out = tool().call(json!({"code": "[1, 'a']"}), &cx).await.unwrap();
    assert_eq!(out.model, ModelOutput::text("[1,\"a\"]"));
    assert_eq!(out.value, json!({"result": [1, "a"], "logs": []}));
}

#[tokio::test]
async fn console_output_is_capped() {
    let tool = RunCode::new(RunCodeLimits {
        output_bytes: 1000,
        ..RunCodeLimits::default()
    });
    let value = run_with(
        &tool,
        "for (let i = 0; i < 10000; i++) console.log('line ' + i); 'done'",
    )
    .await
    .unwrap();
    let logs = value["logs"].as_array().unwrap();
    assert_eq!(logs.last().unwrap(), "[console output truncated]");
    let bytes: usize = logs.iter().map(|l| l.as_str().unwrap().len() + 1).sum();
    assert!(
        bytes <= 1000 + "[console output truncated]".len() + 1,
        "{bytes}"
    );
    assert_eq!(value["result"], json!("done"));

    // Logs written before an error come back in the details.
    let err = error(&tool, "console.log('before'); throw new Error('boom')").await;
    assert_eq!(err.details(), Some(&json!({"logs": ["before"]})));

    // Error messages are capped too.
    let err = error(&tool, "throw new Error('y'.repeat(5000))").await;
    assert_eq!(err.message().len(), 1000 + "… [truncated]".len());
    assert!(err.message().starts_with("Error: yyy"));

    // A result over the cap is cut to a string.
    let value = run_with(&tool, "'x'.repeat(5000)").await.unwrap();
    let text = value["result"].as_str().unwrap();
    assert!(
        text.contains("[result truncated: 5002 bytes of JSON]"),
        "{text}"
    );
}

#[tokio::test]
async fn errors_carry_message_and_stack() {
    let err = error(&tool(), "x + 1").await;
    assert_eq!(err.code(), "RUN_CODE_ERROR");
    assert!(
        err.message()
            .starts_with("ReferenceError: x is not defined\n    at <eval> ("),
        "{}",
        err.message()
    );

    let err = error(&tool(), "let = = 3").await;
    assert_eq!(err.code(), "RUN_CODE_ERROR");
    assert!(
        err.message().starts_with("SyntaxError: "),
        "{}",
        err.message()
    );

    let err = error(&tool(), "throw 42").await;
    assert_eq!(err.message(), "Uncaught 42");

    let err = error(&tool(), "throw {code: 1}").await;
    assert_eq!(err.message(), "Uncaught [object Object]");
}

#[tokio::test]
async fn deep_recursion_is_a_range_error() {
    let start = Instant::now();
    let err = error(&tool(), "function f(n) { return f(n + 1) + 1 } f(0)").await;
    assert_eq!(err.code(), "RUN_CODE_ERROR");
    assert!(err.message().starts_with("RangeError"), "{}", err.message());
    assert!(start.elapsed() < Duration::from_secs(2));
}

async fn assert_times_out(code: &str) {
    assert_times_out_with(&short(100), code).await;
}

async fn assert_times_out_with(tool: &RunCode, code: &str) {
    let start = Instant::now();
    let err = error(tool, code).await;
    assert_eq!(err.code(), "RUN_CODE_TIMEOUT", "{code}: {}", err.message());
    assert_eq!(err.message(), "Code ran longer than 100ms");
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(100), "{code}: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{code}: {elapsed:?}");
}

#[tokio::test]
async fn runaway_code_stops_at_the_deadline() {
    assert_times_out("while (true) {}").await;
    assert_times_out("for (;;) { try { while (1) {} } catch (e) {} }").await;
    assert_times_out("try { while (1) {} } catch (e) {} finally { while (1) {} }").await;
    assert_times_out("/(a+)+$/.test('a'.repeat(40) + '!')").await;
    assert_times_out("async function f() { for (;;) await null } f()").await;
    assert_times_out(
        "Promise.resolve().then(function again() { return Promise.resolve().then(again) }); 1",
    )
    .await;
}

#[tokio::test]
async fn memory_bombs_hit_the_limit() {
    for code in [
        "const a = []; while (true) a.push(new Array(1000).fill(0))",
        "'x'.repeat(2 ** 29)",
        "new Array(1e9).fill(0)",
    ] {
        let start = Instant::now();
        let err = error(&tool(), code).await;
        assert_eq!(
            err.code(),
            "RUN_CODE_OUT_OF_MEMORY",
            "{code}: {}",
            err.message()
        );
        assert_eq!(
            err.message(),
            "Code ran out of memory (limit 67108864 bytes)"
        );
        assert!(start.elapsed() < Duration::from_secs(4), "{code}");
    }
    // Doubling a string reaches the engine's length limit (ropes keep the memory small) first.
    let err = error(&tool(), "let s = 'x'; while (true) s = s + s").await;
    assert_eq!(err.code(), "RUN_CODE_ERROR");
    assert!(
        err.message().starts_with("InternalError: string too long"),
        "{}",
        err.message()
    );
    // The next call is unaffected.
    assert_eq!(result("1 + 2").await, json!(3));
}

#[tokio::test]
async fn no_ambient_authority() {
    assert_eq!(
        result(
            "[typeof require, typeof process, typeof fetch, typeof setTimeout, typeof setInterval, \
             typeof std, typeof os, typeof XMLHttpRequest, typeof WebAssembly]"
        )
        .await,
        json!(vec!["undefined"; 9])
    );
    let err = error(&tool(), "import('fs')").await;
    assert_eq!(err.code(), "RUN_CODE_ERROR", "{}", err.message());
}

#[tokio::test]
async fn nothing_leaks_between_calls() {
    let tool = tool();
    assert_eq!(
        run_with(
            &tool,
            "globalThis.secret = 1; Array.prototype.x = 2; secret"
        )
        .await
        .unwrap()["result"],
        json!(1)
    );
    assert_eq!(
        run_with(&tool, "[typeof secret, typeof [].x]")
            .await
            .unwrap()["result"],
        json!(["undefined", "undefined"])
    );
}

#[tokio::test]
async fn cancellation_stops_a_running_script() {
    let token = CancellationToken::new();
    let cx = ToolContext::new(
        Arc::new(RunScope::new("run")),
        0,
        "call-1".into(),
        "run_code".into(),
        token.clone(),
    );
    let tool = tool();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let start = Instant::now();
    let err = tool
        .call(json!({"code": "while (true) {}"}), &cx)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RUN_CODE_CANCELLED");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    canceller.await.unwrap();
}

#[tokio::test]
async fn input_is_checked() {
    let tool = RunCode::new(RunCodeLimits {
        output_bytes: 10,
        ..RunCodeLimits::default()
    });
    let err = error(&tool, "1 + 1 + 1 + 1").await;
    assert_eq!(err.code(), "INVALID_INPUT");
    assert_eq!(
        err.message(),
        "The code is 13 bytes long; the limit is 10 bytes"
    );

    let cx = ToolContext::for_test("run_code");
    let err = tool.call(json!({"source": "1"}), &cx).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[test]
fn spec_and_meta() {
    let tool = tool();
    assert_eq!(tool.spec().name(), "run_code");
    assert!(tool.meta().side_effect);
    assert!(!tool.meta().is_idempotent());
    let schema = tool.spec().input_schema();
    assert_eq!(schema["required"], json!(["code"]));
    assert!(schema["properties"]["code"]["description"].is_string());

    let dir = tempfile::tempdir().unwrap();
    let mut policy = toolsmith_sandbox::SandboxPolicy::new(dir.path());
    policy.limits.output_bytes = 1234;
    let workspace = toolsmith_builtins::Workspace::new(policy).unwrap();
    assert_eq!(
        toolsmith_builtins::run_code(&workspace)
            .limits()
            .output_bytes,
        1234
    );
    assert!(toolsmith_builtins::all(&workspace).contains("run_code"));
}

// ---------------------------------------------------------------------------------------------
// The worker process: deadline and cancellation whatever the engine does, crashes, memory,
// confinement.

/// Limits whose stack size is unique to one test: it is on the worker's command line
/// (`--stack-bytes N`), which tells that test's workers apart from those of tests running
/// alongside in this process.
fn marked(marker: usize, deadline_ms: u64) -> RunCodeLimits {
    RunCodeLimits {
        deadline: Duration::from_millis(deadline_ms),
        stack_bytes: (512 << 10) + marker,
        ..RunCodeLimits::default()
    }
}

/// Host pids and states of the workers started with `limits`: `R` when any of its threads
/// runs, else its main thread's state (`S`, `Z`…).
fn workers(limits: &RunCodeLimits) -> Vec<(i32, char)> {
    let flag = format!("--stack-bytes\0{}\0", limits.stack_bytes);
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains("__run-code-worker\0")
            && cmdline.contains(&flag)
            && let Some(state) = state(pid)
        {
            found.push((pid, state));
        }
    }
    found
}

/// `R` when a thread of `pid` runs, else the main thread's state; `None` when it is gone.
fn state(pid: i32) -> Option<char> {
    let letter = |stat: String| stat.rsplit_once(')')?.1.trim_start().chars().next();
    let main = letter(std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    let running = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .any(|stat| letter(stat) == Some('R'));
    Some(if running { 'R' } else { main })
}

/// The one worker of `limits` that has been running code (state `R`) for 100 ms on end (a
/// worker warming up runs for a few ms), waiting up to 5 s for it.
async fn busy_worker(limits: &RunCodeLimits) -> i32 {
    let start = Instant::now();
    let mut since: Vec<(i32, Instant)> = Vec::new();
    loop {
        let now = Instant::now();
        let running: Vec<i32> = workers(limits)
            .into_iter()
            .filter(|(_, s)| *s == 'R')
            .map(|(pid, _)| pid)
            .collect();
        since.retain(|(pid, _)| running.contains(pid));
        for pid in &running {
            if !since.iter().any(|(p, _)| p == pid) {
                since.push((*pid, now));
            }
        }
        let steady: Vec<i32> = since
            .iter()
            .filter(|(_, t)| now - *t >= Duration::from_millis(100))
            .map(|(pid, _)| *pid)
            .collect();
        if steady.len() == 1 {
            return steady[0];
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "running workers: {since:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Asserts `pid` is gone (or a zombie, dead and waiting for whoever adopted it) within 1 s.
async fn assert_gone(pid: i32) {
    let start = Instant::now();
    while let Some(s) = state(pid).filter(|s| !matches!(s, 'Z' | 'X')) {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "worker {pid} still in state {s}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn cancellable(token: &CancellationToken) -> ToolContext {
    ToolContext::new(
        Arc::new(RunScope::new("run")),
        0,
        "call-1".into(),
        "run_code".into(),
        token.clone(),
    )
}

/// Native loops that never poll QuickJS's interrupt handler: in process they run past any
/// deadline (minutes to hours at 100 % CPU); in the worker they are killed with it.
const NON_POLLING: [&str; 5] = [
    "Array.prototype.reverse.call({length: 2 ** 32 - 1})",
    "Array.prototype.reverse.call({length: 2 ** 53 - 1})",
    "Array.prototype.copyWithin.call({length: 2 ** 53 - 1}, 1)",
    "Array.prototype.unshift.call({length: 2 ** 53 - 2}, 1)",
    "Array.prototype.sort.call({length: 2 ** 32 - 1})",
];

#[tokio::test]
async fn non_polling_native_loops_are_killed_at_the_deadline() {
    let limits = marked(1, 100);
    let tool = RunCode::new(limits.clone());
    for code in NON_POLLING {
        let start = Instant::now();
        let err = error(&tool, code).await;
        let elapsed = start.elapsed();
        assert_eq!(err.code(), "RUN_CODE_TIMEOUT", "{code}: {}", err.message());
        assert_eq!(err.message(), "Code ran longer than 100ms");
        // The deadline, the 100 ms grace, then the kill and the reaping (about a millisecond;
        // a loaded machine may add some).
        assert!(elapsed >= Duration::from_millis(200), "{code}: {elapsed:?}");
        assert!(elapsed < Duration::from_millis(300), "{code}: {elapsed:?}");
    }
    // No worker is left running any of them.
    let start = Instant::now();
    while workers(&limits).iter().any(|(_, s)| *s == 'R') {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            workers(&limits)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // And the tool still works.
    assert_eq!(run_with(&tool, "6 * 7").await.unwrap()["result"], json!(42));
}

#[tokio::test]
async fn the_killed_worker_is_gone() {
    let limits = marked(2, 1_000);
    let tool = RunCode::new(limits.clone());
    let call = tokio::spawn({
        let tool = tool.clone();
        async move { run_with(&tool, NON_POLLING[0]).await }
    });
    let pid = busy_worker(&limits).await;
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.code(), "RUN_CODE_TIMEOUT");
    assert_gone(pid).await;
}

#[tokio::test]
async fn cancellation_stops_a_non_polling_loop() {
    let limits = marked(3, 60_000);
    let tool = RunCode::new(limits.clone());
    let token = CancellationToken::new();
    let cx = cancellable(&token);
    let call = tool.call(json!({"code": NON_POLLING[0]}), &cx);
    let cancel = async {
        let pid = busy_worker(&limits).await;
        token.cancel();
        let cancelled = Instant::now();
        (pid, cancelled)
    };
    let (result, (pid, cancelled)) = tokio::join!(call, cancel);
    let err = result.unwrap_err();
    assert_eq!(err.code(), "RUN_CODE_CANCELLED");
    assert_eq!(err.message(), "The call was cancelled");
    assert!(
        cancelled.elapsed() < Duration::from_millis(500),
        "{:?}",
        cancelled.elapsed()
    );
    assert_gone(pid).await;
    assert_eq!(
        run_with(&tool, "'again'").await.unwrap()["result"],
        json!("again")
    );
}

#[tokio::test]
async fn a_crashed_worker_is_reported_and_replaced() {
    let limits = marked(4, 60_000);
    let tool = RunCode::new(limits.clone());
    let call = tokio::spawn({
        let tool = tool.clone();
        async move { run_with(&tool, "while (true) {}").await }
    });
    let pid = busy_worker(&limits).await;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.code(), "RUN_CODE_ERROR");
    assert_eq!(
        err.message(),
        "The JavaScript engine's process died (signal 9 (SIGKILL))"
    );
    assert_eq!(run_with(&tool, "1 + 1").await.unwrap()["result"], json!(2));
}

#[tokio::test]
async fn workers_that_died_idle_are_replaced_transparently() {
    let limits = marked(5, 5_000);
    let tool = RunCode::new(limits.clone());
    assert_eq!(run_with(&tool, "1").await.unwrap()["result"], json!(1));
    let idle = workers(&limits);
    assert!(!idle.is_empty());
    for (pid, _) in &idle {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(*pid).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    for (pid, _) in &idle {
        assert_gone(*pid).await;
    }
    assert_eq!(run_with(&tool, "2").await.unwrap()["result"], json!(2));
}

#[tokio::test]
async fn the_kernel_caps_memory_when_the_heap_is_unlimited() {
    let limits = RunCodeLimits {
        memory_bytes: 0,
        deadline: Duration::from_secs(30),
        ..marked(6, 0)
    };
    let tool = RunCode::new(limits);
    let err = error(
        &tool,
        "const a = []; while (true) a.push(new Array(1e6).fill(1))",
    )
    .await;
    assert_eq!(err.code(), "RUN_CODE_OUT_OF_MEMORY", "{}", err.message());
    assert_eq!(
        err.message(),
        "Code ran out of memory (limit 1073741824 bytes)"
    );
    assert_eq!(run_with(&tool, "1 + 2").await.unwrap()["result"], json!(3));
}

#[tokio::test]
async fn concurrent_calls_get_their_own_workers() {
    let tool = RunCode::new(marked(7, 5_000));
    let calls = (0..4).map(|i| {
        let tool = tool.clone();
        tokio::spawn(async move { run_with(&tool, &format!("{i} * 10")).await })
    });
    for (i, call) in calls.enumerate() {
        assert_eq!(call.await.unwrap().unwrap()["result"], json!(i * 10));
    }
}

#[tokio::test]
async fn the_worker_can_open_no_file_and_no_socket() {
    let tool = RunCode::new(marked(8, 5_000));
    let worker = RunCodeWorker::locate().unwrap();
    for path in [
        std::path::PathBuf::from("/etc/passwd"),
        worker.program().to_path_buf(),
        std::env::current_exe().unwrap(),
    ] {
        assert!(std::fs::File::open(&path).is_ok(), "{}", path.display());
        let probe = tool.probe_worker(&path).await.unwrap();
        assert_eq!(
            probe.open_error.as_deref(),
            Some("Permission denied (os error 13)"),
            "{}",
            path.display()
        );
        assert_eq!(
            probe.socket_error.as_deref(),
            Some("Operation not permitted (os error 1)")
        );
    }
}

#[tokio::test]
async fn a_missing_worker_is_sandbox_unavailable() {
    let tool = RunCode::new(RunCodeLimits::default())
        .with_worker(RunCodeWorker::new("/nonexistent/toolsmith-run-code-worker"));
    let err = error(&tool, "1").await;
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert_eq!(
        err.message(),
        "sandbox helper unavailable: cannot start /nonexistent/toolsmith-run-code-worker: No \
         such file or directory (os error 2)"
    );
}

#[tokio::test]
async fn a_program_that_is_no_worker_is_sandbox_unavailable() {
    let Some(program) = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("SKIPPED: no `true` program");
        return;
    };
    let tool = RunCode::new(RunCodeLimits::default()).with_worker(RunCodeWorker::new(program));
    let err = error(&tool, "1").await;
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert_eq!(
        err.message(),
        "the run_code worker exited while starting (exit status 0)"
    );
}

#[tokio::test]
async fn in_process_is_an_explicit_opt_in() {
    assert!(!tool().is_in_process());
    let tool = RunCode::in_process(RunCodeLimits::default());
    assert!(tool.is_in_process());
    let value = run_with(&tool, "console.log('x'); [1, 2]").await.unwrap();
    assert_eq!(value, json!({"result": [1, 2], "logs": ["x"]}));
    assert_times_out_with(
        &RunCode::in_process(RunCodeLimits {
            deadline: Duration::from_millis(100),
            ..RunCodeLimits::default()
        }),
        "while (true) {}",
    )
    .await;
    let err = tool.probe_worker("/etc/passwd").await.unwrap_err();
    assert_eq!(
        err.message(),
        "run_code runs in process: there is no worker"
    );
}

/// Set in the child [`without_landlock_or_namespaces`] starts.
const DEGRADED_ENV: &str = "TOOLSMITH_TEST_DEGRADED";

/// Re-runs [`degraded_machine`] under the sandbox helper's `degrade` mode (the worker program
/// is the helper too), which makes Landlock unavailable and namespaces forbidden for the test
/// process and everything it starts; seccomp still works.
#[test]
fn without_landlock_or_namespaces() {
    if std::env::var_os(DEGRADED_ENV).is_some() {
        return;
    }
    let worker = RunCodeWorker::locate().unwrap();
    let out = std::process::Command::new(worker.program())
        .args(["__sandbox-exec", "degrade", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "degraded_machine",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DEGRADED_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}{stderr}", out.status);
    assert!(stdout.contains("test result: ok. 1 passed"), "{stdout}");
}

/// Only in the degraded child: a fail-closed tool refuses, a best-effort one runs and still
/// kills a runaway at its deadline (killing a process needs no optional layer).
#[tokio::test]
async fn degraded_machine() {
    if std::env::var_os(DEGRADED_ENV).is_none() {
        return;
    }
    let err = error(&tool(), "1").await;
    assert_eq!(err.code(), "SANDBOX_UNAVAILABLE");
    assert!(
        err.message().starts_with("sandbox layer unavailable: "),
        "{}",
        err.message()
    );
    let tool =
        RunCode::new(marked(9, 100)).with_strictness(toolsmith_sandbox::Strictness::BestEffort);
    assert_eq!(run_with(&tool, "6 * 7").await.unwrap()["result"], json!(42));
    let start = Instant::now();
    let err = error(&tool, NON_POLLING[0]).await;
    assert_eq!(err.code(), "RUN_CODE_TIMEOUT");
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        run_with(&tool, "'still'").await.unwrap()["result"],
        json!("still")
    );
}
