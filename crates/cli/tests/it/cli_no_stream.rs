//! `toolsmith run --no-stream` and a config model's `"stream": false`: the model is asked for one
//! JSON body per call (no `stream` key in the request), as servers that cannot stream tool calls
//! (llama-cpp-python) need, and the run goes on as with a stream.

use std::process::{Command, Output, Stdio};

use crate::common::{Received, serve};
use serde_json::{Value, json};

/// Two whole answers in llama-cpp-python's shape: a call (in `tool_calls` and the legacy
/// `function_call`, its arguments padded), then the answer.
fn whole_turns() -> Vec<String> {
    let args = " {\"expression\": \"6 * 7\"}\n";
    vec![
        json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "call__0", "type": "function",
                    "function": {"name": "calculator", "arguments": args}}],
                "function_call": {"name": "calculator", "arguments": args}}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}})
        .to_string(),
        json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "42"}}]})
        .to_string(),
    ]
}

fn toolsmith(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .arg("run")
        .args(args)
        .args(["--tools", "calculator", "--json", "What is 6 * 7?"])
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// Checks the run called the calculator and answered, and returns the requests.
fn check_run(out: &Output, received: &std::sync::Mutex<Vec<Received>>) -> Vec<Received> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parts: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = parts.iter().find(|p| p["type"] == "tool-result").unwrap();
    assert_eq!(
        result["output"],
        json!({"expression": "6 * 7", "result": 42})
    );
    let text: String = parts
        .iter()
        .filter(|p| p["type"] == "text-delta")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "42");
    let requests = received.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(request.body.get("stream").is_none(), "{}", request.body);
        assert!(request.body.get("stream_options").is_none());
        assert_eq!(request.header("accept"), Some("application/json"));
    }
    // The call's id went back with its result.
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call__0");
    requests
}

#[test]
fn no_stream_asks_for_whole_bodies() {
    let (base, received) = serve(whole_turns());
    let out = toolsmith(&[
        "--model",
        "openai-compatible:m",
        "--base-url",
        &base,
        "--no-stream",
    ]);
    check_run(&out, &received);
}

#[test]
fn a_config_model_with_stream_false_asks_for_whole_bodies() {
    let (base, received) = serve(whole_turns());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.json");
    let config = json!({"model": {"provider": "openai-compatible", "name": "m", "baseUrl": base,
        "stream": false}});
    std::fs::write(&path, config.to_string()).unwrap();
    let out = toolsmith(&["--config", path.to_str().unwrap()]);
    check_run(&out, &received);
}

#[test]
fn a_config_model_stream_must_be_a_boolean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.json");
    let config = json!({"model": {"provider": "openai-compatible", "name": "m",
        "baseUrl": "http://127.0.0.1:9/v1", "stream": "no"}});
    std::fs::write(&path, config.to_string()).unwrap();
    let out = toolsmith(&["--config", path.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.model.stream must be a boolean"),
        "{stderr}"
    );
}
