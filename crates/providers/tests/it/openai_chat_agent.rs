//! A full agent loop against a loopback server speaking Chat Completions.

use crate::common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolsmith_agent::Agent;
use toolsmith_core::{ToolError, UnifiedFinishReason, from_fn};
use toolsmith_providers::openai_chat::OpenAiChat;

#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The city.
    city: String,
}

fn chunk(delta: serde_json::Value) -> String {
    json!({"id": "chatcmpl-1", "model": "gpt-loop", "choices": [{"index": 0, "delta": delta}]})
        .to_string()
}

fn finish(reason: &str) -> String {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string()
}

fn usage(input: u64, output: u64) -> String {
    json!({"choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output}})
        .to_string()
}

/// Step 1: two calls in one step, the first streamed in pieces (index only after the first
/// delta), the second whole.
fn step_one() -> String {
    let lines = [
        chunk(json!({"role": "assistant", "content": "Checking both."})),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
            "function": {"name": "weather", "arguments": ""}}]}),
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Pa"}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "ris\"}"}}]})),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
            "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        ),
        finish("tool_calls"),
        usage(50, 20),
    ];
    chunks_to_sse(lines.iter().map(String::as_str))
}

fn step_two() -> String {
    let lines = [
        chunk(json!({"content": "Paris is sunny; "})),
        chunk(json!({"content": "Oslo is snowy."})),
        finish("stop"),
        usage(90, 8),
    ];
    chunks_to_sse(lines.iter().map(String::as_str))
}

#[tokio::test]
async fn a_two_step_tool_loop_over_chat_completions() {
    let server = Server::start(vec![
        Reply::sse(step_one()).split(5, 13, true),
        Reply::sse(step_two()).split(6, 9, false),
    ])
    .await;
    let model = OpenAiChat::compatible("gpt-loop", &server.base_url, Some("local-key"));
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
        .build();

    let out = agent.run("Weather in Paris and Oslo?").await.unwrap();

    assert_eq!(out.text, "Paris is sunny; Oslo is snowy.");
    assert_eq!(out.steps.len(), 2);
    let calls: Vec<_> = out.steps[0]
        .tool_calls
        .iter()
        .map(|c| (c.tool_call_id.as_str(), c.input.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", json!({"city": "Paris"})),
            ("call_b", json!({"city": "Oslo"}))
        ]
    );
    assert_eq!(
        out.steps[0].finish_reason.unified,
        UnifiedFinishReason::ToolCalls
    );
    assert_eq!(out.finish_reason.unified, UnifiedFinishReason::Stop);
    assert_eq!(out.usage.input.total, Some(140));
    assert_eq!(out.usage.output.total, Some(28));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer local-key")
    );
    let first = &requests[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(first["tools"][0]["function"]["name"], "weather");
    assert_eq!(
        first["messages"][0],
        json!({"role": "system", "content": "Answer briefly."})
    );

    // The second request carries the assistant's calls and one `tool` message per result.
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let assistant = &messages[messages.len() - 3];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "Checking both.");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_a");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Paris"}"#
    );
    assert_eq!(assistant["tool_calls"][1]["id"], "call_b");
    assert_eq!(
        messages[messages.len() - 2..],
        [
            json!({"role": "tool", "tool_call_id": "call_a", "content": "sunny"}),
            json!({"role": "tool", "tool_call_id": "call_b", "content": "snowy"}),
        ]
    );
}

#[tokio::test]
async fn dropped_provider_tools_warn_once_per_request_in_the_stream_and_the_steps() {
    use futures::StreamExt;
    use toolsmith_core::RunPart;
    use toolsmith_providers::provider_tools::{google_search, openai_web_search};

    let server = Server::start(vec![
        Reply::sse(step_one()).split(5, 13, true),
        Reply::sse(step_two()),
    ])
    .await;
    let model = OpenAiChat::compatible("gpt-loop", &server.base_url, None);
    let weather = from_fn("weather", "Weather.", |_: Weather, _cx| async move {
        Ok::<_, ToolError>("mild")
    });
    let agent = Agent::builder(model)
        .tool(weather)
        .tool(openai_web_search(json!({"search_context_size": "low"})))
        .tool(google_search())
        .build();

    let mut stream = agent.stream("Weather?");
    let mut warnings = Vec::new();
    while let Some(part) = stream.next().await {
        if let RunPart::Warning { message } = part {
            warnings.push(message);
        }
    }
    let out = stream.output().await.unwrap();

    let expected = "Dropped 2 provider-executed tool(s) (web_search, google_search): the Chat Completions wire has no hosted-tool support, so openai-compatible/gpt-loop will answer without them.";
    assert_eq!(
        warnings,
        [expected, expected],
        "one per request, two requests"
    );
    assert_eq!(out.steps[0].warnings, [expected]);
    assert_eq!(out.steps[1].warnings, [expected]);
    for request in server.requests() {
        let names: Vec<&str> = request.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["weather"]);
    }
}

#[tokio::test]
async fn cancelling_a_run_mid_stream_closes_the_connection() {
    let event = format!("data: {}\n\n", chunk(json!({"content": "Thinking"})));
    cancelling_mid_stream_closes_the_connection(
        |base_url| OpenAiChat::compatible("gpt-loop", base_url, None),
        event,
    )
    .await;
}
