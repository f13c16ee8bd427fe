//! The `run_code` tool through the public [`Tool`] interface: what scripts get back, their
//! limits and errors, in its sandboxed worker processes (the `toolsmith-run-code-worker` binary
//! cargo builds next to this test). The workers' own lifecycle is in `run_code_worker.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{assert_times_out_with, error, run_with, tool};
use serde_json::{Value, json};
use toolsmith_builtins::{RunCode, RunCodeLimits};
use toolsmith_core::{CancellationToken, ModelOutput, RunScope, Tool, ToolContext};

fn short(deadline_ms: u64) -> RunCode {
    RunCode::new(RunCodeLimits {
        deadline: Duration::from_millis(deadline_ms),
        ..RunCodeLimits::default()
    })
}

async fn result(code: &str) -> Value {
    let value = run_with(&tool(), code).await.unwrap();
    value["result"].clone()
}

async fn assert_times_out(code: &str) {
    assert_times_out_with(&short(100), code).await;
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
