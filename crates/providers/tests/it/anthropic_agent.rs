//! A full agent loop against a loopback server speaking the Anthropic Messages API.

use crate::common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_agent::Agent;
use toolsmith_core::{ToolError, UnifiedFinishReason, from_fn};
use toolsmith_providers::anthropic::AnthropicMessages;
use toolsmith_providers::provider_tools::anthropic_web_search;

#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The city.
    city: String,
}

fn event(value: Value) -> String {
    let kind = value["type"].as_str().unwrap().to_string();
    format!("event: {kind}\ndata: {value}\n\n")
}

fn start(index: u64, block: Value) -> String {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn delta(index: u64, delta: Value) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": delta}))
}

fn stop(index: u64) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn json_delta(index: u64, partial: &str) -> String {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": partial}),
    )
}

/// Step 1: thinking (signed), a web search run by the provider, text, then two client calls
/// whose input streams in pieces.
fn step_one() -> String {
    [
        event(json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-loop", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 50, "cache_read_input_tokens": 10, "output_tokens": 1}}})),
        start(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
        delta(0, json!({"type": "thinking_delta", "thinking": "Both cities."})),
        delta(0, json!({"type": "signature_delta", "signature": "sig-1"})),
        stop(0),
        start(1, json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}})),
        json_delta(1, "{\"query\": \"weather\"}"),
        stop(1),
        start(2, json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://w.example", "title": "W", "encrypted_content": "E1"}
        ]})),
        stop(2),
        start(3, json!({"type": "text", "text": ""})),
        delta(3, json!({"type": "text_delta", "text": "Checking both."})),
        stop(3),
        start(4, json!({"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {}})),
        json_delta(4, ""),
        json_delta(4, "{\"ci"),
        json_delta(4, "ty\": \"Pa"),
        json_delta(4, "ris\"}"),
        stop(4),
        event(json!({"type": "ping"})),
        start(5, json!({"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {}})),
        json_delta(5, "{\"city\":\"Oslo\"}"),
        stop(5),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 20, "server_tool_use": {"web_search_requests": 1}}})),
        event(json!({"type": "message_stop"})),
    ]
    .concat()
}

fn step_two() -> String {
    [
        event(json!({"type": "message_start", "message": {"id": "msg_2", "type": "message",
            "role": "assistant", "model": "claude-loop", "content": [],
            "usage": {"input_tokens": 90, "output_tokens": 1}}})),
        start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Paris is sunny; "})),
        delta(0, json!({"type": "text_delta", "text": "Oslo is snowy."})),
        stop(0),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 8}})),
        event(json!({"type": "message_stop"})),
    ]
    .concat()
}

#[tokio::test]
async fn a_two_step_tool_loop_over_the_messages_api() {
    let server = Server::start(vec![
        Reply::sse(step_one()).split(5, 13, true),
        Reply::sse(step_two()).split(6, 9, false),
    ])
    .await;
    let model =
        AnthropicMessages::new("claude-loop", Some("sk-ant-loop"), Some(&server.base_url)).unwrap();
    let weather = from_fn(
        "weather",
        "The weather in a city.",
        |args: Weather, _cx| async move {
            Ok::<_, ToolError>(match args.city.as_str() {
                "Paris" => "sunny",
                _ => "snowy",
            })
        },
    );
    let agent = Agent::builder(model)
        .instructions("Answer briefly.")
        .tool(weather)
        .tool(anthropic_web_search(json!({"max_uses": 1})))
        .build();

    let out = agent.run("Weather in Paris and Oslo?").await.unwrap();

    assert_eq!(out.text, "Paris is sunny; Oslo is snowy.");
    assert_eq!(out.steps.len(), 2);
    let calls: Vec<_> = out.steps[0]
        .tool_calls
        .iter()
        .filter(|c| !c.provider_executed)
        .map(|c| (c.tool_call_id.as_str(), c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_a", json!({"city": "Paris"})),
            ("toolu_b", json!({"city": "Oslo"}))
        ]
    );
    assert_eq!(
        out.steps[0].finish_reason.unified,
        UnifiedFinishReason::ToolCalls
    );
    assert_eq!(out.finish_reason.unified, UnifiedFinishReason::Stop);
    assert_eq!(out.usage.input.total, Some(150));
    assert_eq!(out.usage.input.cache_read, Some(10));
    assert_eq!(out.usage.output.total, Some(28));
    assert_eq!(out.usage.server_tool_uses, 1);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(first["system"], "Answer briefly.");
    assert_eq!(first["tools"][0]["name"], "weather");
    assert_eq!(first["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        first["tools"][1],
        json!({"type": "web_search_20260318", "name": "web_search", "max_uses": 1})
    );
    // The agent's calls run one at a time: parallel calls are off unless it says otherwise.
    assert_eq!(
        first["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]}])
    );

    // The second request echoes the whole assistant turn, then one user message of results.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Both cities.", "signature": "sig-1"},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
             "input": {"query": "weather"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                {"type": "web_search_result", "url": "https://w.example", "title": "W",
                 "encrypted_content": "E1"}
            ]},
            {"type": "text", "text": "Checking both."},
            {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {"city": "Oslo"}}
        ]})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "snowy"}
        ]})
    );
}

#[tokio::test]
async fn cancelling_a_run_mid_stream_closes_the_connection() {
    let event = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-loop\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
    cancelling_mid_stream_closes_the_connection(
        |base_url| {
            AnthropicMessages::new("claude-loop", Some("sk-ant-loop"), Some(&base_url)).unwrap()
        },
        event.to_string(),
    )
    .await;
}
