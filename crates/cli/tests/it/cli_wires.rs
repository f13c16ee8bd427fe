//! `toolsmith run --model PROVIDER:MODEL --base-url URL` against a loopback server speaking each
//! provider's wire: the model calls the calculator with its arguments streamed in pieces, the
//! tool runs, and the second request carries the call and its result back.

use std::process::{Command, Output};

use crate::common::{Received, run_config, serve, sse};
use serde_json::{Value, json};

const ARGS_HEAD: &str = "{\"expression\":";
const ARGS_TAIL: &str = "\"6 * 7\"}";

fn chat_turns() -> Vec<String> {
    let call =
        |delta: Value| json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta}]});
    vec![
        sse(
            &[
                call(
                    json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": ""}}]}),
                ),
                call(json!({"tool_calls": [{"index": 0, "function": {"arguments": ARGS_HEAD}}]})),
                call(json!({"tool_calls": [{"index": 0, "function": {"arguments": ARGS_TAIL}}]})),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ],
            false,
            true,
        ),
        sse(
            &[
                call(json!({"content": "4"})),
                call(json!({"content": "2"})),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 20, "completion_tokens": 2}}),
            ],
            false,
            true,
        ),
    ]
}

fn anthropic_turns() -> Vec<String> {
    let start = |id: &str| json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": "claude-x", "content": [], "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}});
    let delta = |delta: Value| json!({"type": "content_block_delta", "index": 0, "delta": delta});
    let end = |reason: &str| json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": 12}});
    vec![
        sse(
            &[
                start("msg_1"),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}}}),
                delta(json!({"type": "input_json_delta", "partial_json": ARGS_HEAD})),
                delta(json!({"type": "input_json_delta", "partial_json": ARGS_TAIL})),
                json!({"type": "content_block_stop", "index": 0}),
                end("tool_use"),
                json!({"type": "message_stop"}),
            ],
            true,
            false,
        ),
        sse(
            &[
                start("msg_2"),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                delta(json!({"type": "text_delta", "text": "4"})),
                delta(json!({"type": "text_delta", "text": "2"})),
                json!({"type": "content_block_stop", "index": 0}),
                end("end_turn"),
                json!({"type": "message_stop"}),
            ],
            true,
            false,
        ),
    ]
}

fn responses_turns() -> Vec<String> {
    let call_item = |status: &str, arguments: &str| json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "calculator", "arguments": arguments, "status": status});
    let args = format!("{ARGS_HEAD}{ARGS_TAIL}");
    let message = |status: &str, text: &str| json!({"type": "message", "id": "msg_1", "role": "assistant", "status": status, "content": if text.is_empty() { json!([]) } else { json!([{"type": "output_text", "text": text, "annotations": []}]) }});
    let usage = json!({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15});
    vec![
        sse(
            &[
                json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-x", "status": "in_progress", "output": []}}),
                json!({"type": "response.output_item.added", "output_index": 0, "item": call_item("in_progress", "")}),
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": ARGS_HEAD}),
                json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": ARGS_TAIL}),
                json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0, "arguments": args}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": call_item("completed", &args)}),
                json!({"type": "response.completed", "response": {"id": "resp_1", "model": "gpt-x", "status": "completed", "output": [call_item("completed", &args)], "usage": usage}}),
            ],
            true,
            false,
        ),
        sse(
            &[
                json!({"type": "response.created", "response": {"id": "resp_2", "model": "gpt-x", "status": "in_progress", "output": []}}),
                json!({"type": "response.output_item.added", "output_index": 0, "item": message("in_progress", "")}),
                json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "4"}),
                json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "2"}),
                json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "42"}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": message("completed", "42")}),
                json!({"type": "response.completed", "response": {"id": "resp_2", "model": "gpt-x", "status": "completed", "output": [message("completed", "42")], "usage": usage}}),
            ],
            true,
            false,
        ),
    ]
}

fn google_turns() -> Vec<String> {
    let usage = json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15});
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        if let Some(reason) = finish {
            candidate["finishReason"] = json!(reason);
        }
        json!({"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-x"})
    };
    vec![
        sse(
            &[chunk(
                json!([{"functionCall": {"name": "calculator", "args": {"expression": "6 * 7"}}, "thoughtSignature": "c2ln"}]),
                Some("STOP"),
            )],
            false,
            false,
        ),
        sse(
            &[
                chunk(json!([{"text": "4"}]), None),
                chunk(json!([{"text": "2"}]), Some("STOP")),
            ],
            false,
            false,
        ),
    ]
}

fn run(model: &str, base: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args([
            "run",
            "--model",
            model,
            "--base-url",
            base,
            "--api-key",
            "sk-test-key",
            "--tools",
            "calculator",
            "--json",
            "What",
            "is",
            "6 * 7?",
        ])
        .env_remove("TOOLSMITH_MODEL")
        .output()
        .expect("the binary runs")
}

/// Runs the two-step loop over one wire and returns the requests the server saw.
fn full_loop(model: &str, replies: Vec<String>) -> Vec<Received> {
    let (base, received) = serve(replies);
    let out = run(model, &base);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{model}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parts: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = parts
        .iter()
        .find(|p| p["type"] == "tool-result")
        .unwrap_or_else(|| panic!("{model}: no tool result in {stdout}"));
    assert_eq!(
        result["output"],
        json!({"expression": "6 * 7", "result": 42}),
        "{model}"
    );
    let deltas: String = parts
        .iter()
        .filter(|p| p["type"] == "text-delta")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "42", "{model}");
    let finish = parts.last().unwrap();
    assert_eq!(finish["type"], "finish", "{model}");
    assert_eq!(finish["finishReason"], "stop", "{model}");
    let requests = received.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{model}");
    // The second request carries the result back.
    let second = requests[1].body.to_string();
    assert!(
        second.contains("42") && second.contains("calculator"),
        "{model}: {second}"
    );
    requests
}

#[test]
fn openai_chat_completions() {
    let requests = full_loop("openai:gpt-x", chat_turns());
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-test-key")
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_1");
}

#[test]
fn openai_compatible() {
    let requests = full_loop("openai-compatible:qwen3", chat_turns());
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["model"], "qwen3");
}

#[test]
fn anthropic_messages() {
    let requests = full_loop("anthropic:claude-x", anthropic_turns());
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some("sk-test-key"));
    assert!(requests[0].header("anthropic-version").is_some());
    let second = requests[1].body["messages"].to_string();
    assert!(
        second.contains("\"tool_result\"") && second.contains("toolu_1"),
        "{second}"
    );
}

#[test]
fn openai_responses() {
    let requests = full_loop("openai-responses:gpt-x", responses_turns());
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-test-key")
    );
    let input = requests[1].body["input"].to_string();
    assert!(
        input.contains("\"function_call_output\"") && input.contains("call_1"),
        "{input}"
    );
}

#[test]
fn google_gemini() {
    let requests = full_loop("google:gemini-x", google_turns());
    assert_eq!(
        requests[0].path,
        "/v1/models/gemini-x:streamGenerateContent?alt=sse"
    );
    assert_eq!(requests[0].header("x-goog-api-key"), Some("sk-test-key"));
    let contents = requests[1].body["contents"].to_string();
    // The thought signature goes back verbatim with the call.
    assert!(
        contents.contains("\"functionResponse\"") && contents.contains("c2ln"),
        "{contents}"
    );
}

/// `toolsmith run` over the Chat Completions wire with `config` as its `--config` file, `args`
/// added, and no terminal; the JSON parts and the requests the server saw.
fn run_with_config(config: Value, args: &[&str]) -> (Vec<Value>, Vec<Received>) {
    let (base, received) = serve(chat_turns());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = run_config(&base, &path, args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parts = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let requests = received.lock().unwrap().clone();
    (parts, requests)
}

/// `toolsmith run --approve MODE` with a config whose approval policy names the calculator.
fn approve_run(mode: &str) -> (Vec<Value>, Vec<Received>) {
    run_with_config(
        json!({"approval": {"policy": ["calculator"]}, "tools": {"calculator": {}}}),
        &["--approve", mode],
    )
}

fn of_type<'a>(parts: &'a [Value], kind: &str) -> Vec<&'a Value> {
    parts.iter().filter(|p| p["type"] == kind).collect()
}

#[test]
fn approve_auto_runs_the_call_after_the_pause() {
    let (parts, requests) = approve_run("auto");
    assert_eq!(of_type(&parts, "tool-approval-request").len(), 1);
    let results = of_type(&parts, "tool-result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["output"]["result"], 42);
    assert_eq!(requests.len(), 2);
    // The approval parts stay in the thread; the wire never carries them.
    assert!(!requests[1].body.to_string().contains("approval"));
}

#[test]
fn approve_deny_and_ask_without_a_terminal_deny_the_call() {
    for (mode, reason) in [
        ("deny", "Denied by --approve deny."),
        (
            "ask",
            "Denied: no terminal to ask for approval; run toolsmith with --approve auto to allow it.",
        ),
    ] {
        let (parts, requests) = approve_run(mode);
        assert!(of_type(&parts, "tool-result").is_empty(), "{mode}");
        let denied = of_type(&parts, "tool-output-denied");
        assert_eq!(denied.len(), 1, "{mode}");
        assert_eq!(denied[0]["reason"], reason, "{mode}");
        // The model is told why, as the call's error result, with RadarOS's marker.
        let messages = requests[1].body["messages"].as_array().unwrap();
        let tool = messages.iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(tool["tool_call_id"], "call_1", "{mode}");
        assert_eq!(tool["content"], format!("[DENIED] {reason}"), "{mode}");
    }
}

#[test]
fn a_client_tool_call_ends_the_run_paused_without_a_terminal() {
    let (parts, requests) = run_with_config(
        json!({
            "tools": {"read": {}},
            "clientTools": [{"name": "calculator", "description": "The user computes.",
                             "inputSchema": {"type": "object", "properties": {"expression": {"type": "string"}}}}]
        }),
        &[],
    );
    assert_eq!(of_type(&parts, "tool-call").len(), 1);
    assert!(of_type(&parts, "tool-result").is_empty());
    // The client tool is declared to the model, and the model is asked only once.
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].body["tools"]
            .to_string()
            .contains("The user computes.")
    );
}

/// `toolsmith run --approve ask` on a real terminal (a pseudo-terminal from util-linux's
/// `script`), answering `input` at its prompt: the parts printed.
fn ask_on_a_terminal(input: &str) -> (Vec<Value>, String) {
    let (base, _received) = serve(chat_turns());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.json");
    std::fs::write(
        &config,
        json!({"approval": {"policy": ["calculator"]}, "tools": {"calculator": {}}}).to_string(),
    )
    .unwrap();
    let command = format!(
        "{} run --model openai:gpt-x --base-url {base} --api-key sk-test-key --json \
         --approve ask --config {} 'What is 6 * 7?'",
        env!("CARGO_BIN_EXE_toolsmith"),
        config.display()
    );
    let screen = crate::common::on_a_terminal(&command, &[], input);
    let parts = screen
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (parts, screen)
}

#[test]
fn ask_on_a_terminal_takes_yes_no_and_always_and_asks_again_otherwise() {
    for (input, approved, reason) in [
        ("y\n", true, None),
        ("maybe\nyes\n", true, None),
        ("a\n", true, None),
        ("n\n", false, Some("Denied at the terminal.")),
    ] {
        let (parts, screen) = ask_on_a_terminal(input);
        assert!(
            screen.contains("approve calculator {\"expression\":\"6 * 7\"}? [y]es, [n]o, [a]lways for this tool: "),
            "{input:?}: {screen}"
        );
        let results = of_type(&parts, "tool-result");
        let denied = of_type(&parts, "tool-output-denied");
        if approved {
            assert_eq!(results.len(), 1, "{input:?}: {screen}");
            assert_eq!(results[0]["output"]["result"], 42);
            assert!(denied.is_empty());
        } else {
            assert!(results.is_empty(), "{input:?}: {screen}");
            assert_eq!(denied[0]["reason"], reason.unwrap());
        }
        // An answer it does not know asks again.
        let asked = screen.matches("[a]lways for this tool").count();
        assert_eq!(asked, input.lines().count(), "{input:?}: {screen}");
    }
}
