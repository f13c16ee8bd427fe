//! Chat Completions against OpenAI-compatible servers as they really answer: a whole body
//! instead of a stream (llama-cpp-python cannot stream automatic tool choice), no `usage`, the
//! legacy `function_call`, white space around the arguments, and odd call ids. The bodies have
//! the shapes those servers send.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::{
    LanguageModel, ModelErrorKind, ModelRequest, ToolChoice, ToolDeclaration, ToolDeclarations,
    ToolKind, UnifiedFinishReason,
};
use toolsmith_providers::openai_chat::{ChatStreamDecoder, OpenAiChat, decode_response};
use toolsmith_providers::{ModelBuilder, ProviderOptions, resolve};

use crate::common::*;

/// A non-streamed llama-cpp-python (`chatml-function-calling`) answer to a request with tools:
/// the call in `tool_calls` and again in the legacy `function_call`, its arguments padded.
fn llama_cpp_python_tool_call() -> Value {
    json!({
        "id": "chatcmpl-5e1b", "object": "chat.completion", "created": 1764216000,
        "model": "gemma-3-270m",
        "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call__0_calculator_cmpl-5e1b", "type": "function",
                "function": {"name": "calculator", "arguments": " {\"expression\": \"6 * 7\"}\n"}}],
            "function_call": {"name": "calculator",
                "arguments": " {\"expression\": \"6 * 7\"}\n"}
        }}],
        "usage": {"prompt_tokens": 131, "completion_tokens": 12, "total_tokens": 143}
    })
}

fn tool_request() -> ModelRequest {
    ModelRequest {
        tools: Arc::new(ToolDeclarations::new(vec![ToolDeclaration {
            name: "calculator".into(),
            description: "Evaluates an arithmetic expression.".into(),
            input_schema: Arc::new(json!({"type": "object",
                "properties": {"expression": {"type": "string"}}, "required": ["expression"]})),
            strict: false,
            kind: ToolKind::Function,
        }])),
        tool_choice: ToolChoice::Auto,
        ..request()
    }
}

#[tokio::test]
async fn a_non_streamed_request_has_no_stream_key_and_its_tool_call_decodes() {
    let server = Server::start(vec![Reply::json(200, llama_cpp_python_tool_call())]).await;
    let options = ProviderOptions {
        base_url: Some(server.base_url.clone()),
        streaming: Some(false),
        ..Default::default()
    };
    let model = resolve("openai-compatible:gemma", &options).unwrap();
    let (parts, error) = collect(model.stream(&tool_request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert!(summary.error.is_none(), "{:?}", summary.error);
    // One call, though the server sent it twice (`tool_calls` and `function_call`), with the
    // server's id and its arguments without the padding.
    let calls: Vec<_> = summary
        .calls
        .iter()
        .map(|c| {
            (
                c.tool_call_id.as_str(),
                c.tool_name.as_str(),
                c.input.as_str(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [(
            "call__0_calculator_cmpl-5e1b",
            "calculator",
            r#"{"expression": "6 * 7"}"#
        )]
    );
    let finish = summary.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::ToolCalls);
    assert_eq!(summary.usage.input.total, Some(131));
    assert_eq!(summary.usage.output.total, Some(12));

    let requests = server.requests();
    let body = &requests[0].body;
    assert!(body.get("stream").is_none(), "{body}");
    assert!(body.get("stream_options").is_none(), "{body}");
    assert_eq!(body["model"], "gemma");
    assert_eq!(body["tools"][0]["function"]["name"], "calculator");
    assert_eq!(requests[0].header("accept"), Some("application/json"));
}

#[tokio::test]
async fn a_non_streamed_text_answer_without_usage_decodes() {
    let body = json!({"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "42"}}]});
    let server = Server::start(vec![Reply::json(200, body)]).await;
    let model = OpenAiChat::compatible("m", &server.base_url, None).with_streaming(false);
    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "42");
    assert_eq!(summary.usage.input.total, None);
    assert_eq!(summary.finish.unwrap().unified, UnifiedFinishReason::Stop);
}

#[tokio::test]
async fn a_truncated_compatible_stream_says_to_try_without_streaming() {
    // llama-cpp-python drops the stream of an automatic tool choice: no finish, no [DONE].
    let dropped = "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n";
    let server = Server::start(vec![Reply::sse(dropped), Reply::sse(dropped)]).await;
    let compatible = OpenAiChat::compatible("m", &server.base_url, None);
    let (parts, error) = collect(compatible.stream(&tool_request()).await.unwrap()).await;
    let error = check(parts, error).error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert_eq!(
        error.message,
        "The Chat Completions stream ended without a finish reason (truncated response). \
         (some OpenAI-compatible servers cannot stream tool calls: try \"stream\": false in \
         the model config, or --no-stream)"
    );
    // OpenAI itself streams tool calls: no hint.
    let openai = OpenAiChat::openai("m", Some("sk-test"), Some(&server.base_url)).unwrap();
    let (parts, error) = collect(openai.stream(&tool_request()).await.unwrap()).await;
    let error = check(parts, error).error.unwrap();
    assert_eq!(
        error.message,
        "The Chat Completions stream ended without a finish reason (truncated response)."
    );
}

#[test]
fn a_stream_without_usage_finishes_with_unknown_usage() {
    let summary = decode_with(
        ChatStreamDecoder::new(),
        &[
            r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
            r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ],
    );
    assert!(summary.error.is_none());
    assert_eq!(summary.text, "hi");
    assert_eq!(summary.usage.input.total, None);
    assert_eq!(summary.usage.output.total, None);
}

#[test]
fn a_legacy_function_call_is_a_call_streamed_or_whole() {
    // Streamed instead of `tool_calls`, with the legacy finish reason.
    let summary = decode_with(
        ChatStreamDecoder::new(),
        &[
            r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","function_call":{"name":"add","arguments":""}}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"function_call":{"arguments":"{\"a\":"}}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"function_call":{"arguments":"1}"}}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"function_call"}]}"#,
            "[DONE]",
        ],
    );
    assert!(summary.error.is_none(), "{:?}", summary.error);
    assert_eq!(summary.calls.len(), 1);
    assert_eq!(summary.calls[0].tool_name, "add");
    assert_eq!(summary.calls[0].input, r#"{"a":1}"#);
    assert!(summary.calls[0].tool_call_id.starts_with("call_"));
    assert_eq!(
        summary.finish.unwrap().unified,
        UnifiedFinishReason::ToolCalls
    );

    // Whole, instead of `tool_calls`.
    let body = json!({"choices": [{"index": 0, "finish_reason": "function_call", "message": {
        "role": "assistant", "content": null,
        "function_call": {"name": "add", "arguments": "{\"a\":2}"}}}]});
    let summary = check(decode_response(&body).unwrap(), None);
    assert_eq!(summary.calls.len(), 1);
    assert_eq!(summary.calls[0].input, r#"{"a":2}"#);
}

#[test]
fn white_space_around_the_arguments_is_not_the_input() {
    let call = |args: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":{}}}}}]}}}}]}}"#,
            serde_json::to_string(args).unwrap()
        )
    };
    let summary = decode_with(
        ChatStreamDecoder::new(),
        &[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"add","arguments":""}}]}}]}"#.to_string(),
            call("\n "),
            call("{\"a\": "),
            call("1} "),
            call("\n"),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.to_string(),
        ],
    );
    // `check` also asserts that the input deltas concatenate to the input.
    assert!(summary.error.is_none(), "{:?}", summary.error);
    assert_eq!(summary.calls[0].input, r#"{"a": 1}"#);

    let body = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "add", "arguments": "\n\n{\"a\": 2}\n"}}]}}]});
    let summary = check(decode_response(&body).unwrap(), None);
    assert_eq!(summary.calls[0].input, r#"{"a": 2}"#);
}

#[test]
fn missing_empty_and_repeated_call_ids_get_unique_ones() {
    let call = |id: Value, a: u32| {
        let mut call = json!({"type": "function",
            "function": {"name": "add", "arguments": format!("{{\"a\":{a}}}")}});
        if !id.is_null() {
            call["id"] = id;
        }
        call
    };
    let body = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
    "role": "assistant", "content": null, "tool_calls": [
        call(json!("call_0"), 1),
        call(json!("call_0"), 2),
        call(json!(""), 3),
        call(Value::Null, 4),
    ]}}]});
    let summary = check(decode_response(&body).unwrap(), None);
    let inputs: Vec<_> = summary.calls.iter().map(|c| c.input.as_str()).collect();
    assert_eq!(
        inputs,
        [r#"{"a":1}"#, r#"{"a":2}"#, r#"{"a":3}"#, r#"{"a":4}"#]
    );
    let ids: Vec<_> = summary
        .calls
        .iter()
        .map(|c| c.tool_call_id.as_str())
        .collect();
    assert_eq!(ids[0], "call_0");
    assert!(ids.iter().all(|id| id.starts_with("call_")), "{ids:?}");
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 4, "{ids:?}");

    // Streamed: two calls numbered apart by index but sharing one id.
    let summary = decode_with(
        ChatStreamDecoder::new(),
        &[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","function":{"name":"add","arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_x","function":{"name":"add","arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_x","function":{"arguments":"2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ],
    );
    assert!(summary.error.is_none(), "{:?}", summary.error);
    let calls: Vec<_> = summary
        .calls
        .iter()
        .map(|c| (c.tool_call_id.as_str() == "call_x", c.input.as_str()))
        .collect();
    assert_eq!(calls, [(true, r#"{"a":1}"#), (false, r#"{"a":2}"#)]);
}
