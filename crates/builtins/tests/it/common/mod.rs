//! What the built-in tools' tests share: a workspace and a call of a file tool, with its error;
//! the `run_code` tool with default limits, a call, its error, and the timeout assertion.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsmith_builtins::{RunCode, RunCodeLimits, Workspace};
use toolsmith_core::{Tool, ToolContext, ToolError};
use toolsmith_sandbox::SandboxPolicy;

/// A workspace on a fresh temporary folder whose tools' output is capped at `limit` bytes.
pub fn workspace(limit: usize) -> (tempfile::TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = SandboxPolicy::new(dir.path());
    policy.limits.output_bytes = limit;
    (dir, Workspace::new(policy).unwrap())
}

/// Calls `tool` with `input`: what the model sees, or the error.
pub async fn call(tool: &impl Tool, input: Value) -> Result<String, ToolError> {
    let cx = ToolContext::for_test(tool.spec().name());
    tool.call(input, &cx).await.map(|out| out.model.to_text())
}

/// Asserts `result` is the error `code` with `message`, and returns it.
pub fn assert_err(result: Result<String, ToolError>, code: &str, message: &str) -> ToolError {
    let err = result.unwrap_err();
    assert_eq!((err.code(), err.message()), (code, message));
    err
}

pub fn tool() -> RunCode {
    RunCode::new(RunCodeLimits::default())
}

pub async fn run_with(tool: &RunCode, code: &str) -> Result<Value, ToolError> {
    let cx = ToolContext::for_test("run_code");
    tool.call(json!({ "code": code }), &cx)
        .await
        .map(|out| out.value)
}

pub async fn error(tool: &RunCode, code: &str) -> ToolError {
    run_with(tool, code).await.unwrap_err()
}

pub async fn assert_times_out_with(tool: &RunCode, code: &str) {
    let start = Instant::now();
    let err = error(tool, code).await;
    assert_eq!(err.code(), "RUN_CODE_TIMEOUT", "{code}: {}", err.message());
    assert_eq!(err.message(), "Code ran longer than 100ms");
    let elapsed = start.elapsed();
    assert!(elapsed >= Duration::from_millis(100), "{code}: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{code}: {elapsed:?}");
}
