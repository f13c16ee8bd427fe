//! What the `run_code` tests share: the tool with default limits, a call, its error,
//! and the timeout assertion.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsmith_builtins::{RunCode, RunCodeLimits};
use toolsmith_core::{Tool, ToolContext, ToolError};

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
