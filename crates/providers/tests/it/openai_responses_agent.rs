//! A full agent loop against a loopback server speaking the Responses API.

use crate::common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_agent::Agent;
use toolsmith_core::{ToolError, UnifiedFinishReason, from_fn};
use toolsmith_providers::openai_responses::OpenAiResponses;

#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The city.
    city: String,
}

fn sse(events: Vec<Value>) -> String {
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    chunks_to_sse(lines.iter().map(String::as_str))
}

fn created(id: &str) -> Value {
    json!({"type": "response.created", "response": {"id": id, "model": "gpt-loop", "status": "in_progress"}})
}

fn completed(id: &str, input: u64, output: u64) -> Value {
    json!({"type": "response.completed", "response": {"id": id, "model": "gpt-loop",
        "status": "completed", "usage": {"input_tokens": input, "output_tokens": output,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 4}}}})
}

fn added(index: u64, item: Value) -> Value {
    json!({"type": "response.output_item.added", "output_index": index, "item": item})
}

fn done(index: u64, item: Value) -> Value {
    json!({"type": "response.output_item.done", "output_index": index, "item": item})
}

fn args_delta(index: u64, item: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "output_index": index,
        "item_id": item, "delta": delta})
}

/// Step 1: reasoning (with encrypted content), a sentence, then two calls: the first streamed
/// in pieces, the second only as `function_call_arguments.done` (as LM Studio does).
fn step_one() -> String {
    let call = |id: &str, call_id: &str, args: &str| {
        json!({"type": "function_call", "id": id, "call_id": call_id, "name": "weather",
            "arguments": args, "status": "completed"})
    };
    sse(vec![
        created("resp_1"),
        added(0, json!({"type": "reasoning", "id": "rs_1", "summary": []})),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0,
            "item_id": "rs_1", "summary_index": 0, "delta": "Two cities."}),
        done(
            0,
            json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "enc_1",
            "summary": [{"type": "summary_text", "text": "Two cities."}]}),
        ),
        added(
            1,
            json!({"type": "message", "id": "msg_1", "role": "assistant", "content": []}),
        ),
        json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1",
            "content_index": 0, "delta": "Checking both."}),
        done(
            1,
            json!({"type": "message", "id": "msg_1", "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking both."}]}),
        ),
        added(
            2,
            json!({"type": "function_call", "id": "fc_a", "call_id": "call_a",
            "name": "weather", "arguments": ""}),
        ),
        args_delta(2, "fc_a", "{\"ci"),
        args_delta(2, "fc_a", "ty\": \"Pa"),
        args_delta(2, "fc_a", "ris\"}"),
        json!({"type": "response.function_call_arguments.done", "output_index": 2,
            "item_id": "fc_a", "arguments": "{\"city\": \"Paris\"}"}),
        done(2, call("fc_a", "call_a", "{\"city\": \"Paris\"}")),
        added(
            3,
            json!({"type": "function_call", "id": "fc_b", "call_id": "call_b",
            "name": "weather", "arguments": ""}),
        ),
        json!({"type": "response.function_call_arguments.done", "output_index": 3,
            "item_id": "fc_b", "arguments": "{\"city\":\"Oslo\"}"}),
        done(3, call("fc_b", "call_b", "{\"city\":\"Oslo\"}")),
        completed("resp_1", 50, 20),
    ])
}

fn step_two() -> String {
    let message = |content: Value| json!({"type": "message", "id": "msg_2", "role": "assistant", "content": content});
    sse(vec![
        created("resp_2"),
        added(0, message(json!([]))),
        json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_2",
            "delta": "Paris is sunny; "}),
        json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_2",
            "delta": "Oslo is snowy."}),
        done(
            0,
            message(json!([{"type": "output_text", "text": "Paris is sunny; Oslo is snowy."}])),
        ),
        completed("resp_2", 90, 8),
    ])
}

#[tokio::test]
async fn a_two_step_tool_loop_over_the_responses_api() {
    let server = Server::start(vec![
        Reply::sse(step_one()).split(5, 13, true),
        Reply::sse(step_two()).split(6, 9, false),
    ])
    .await;
    let model =
        OpenAiResponses::openai("gpt-loop", Some("sk-loop-key"), Some(&server.base_url)).unwrap();
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
    assert_eq!(out.usage.output.reasoning, Some(8));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-loop-key")
    );
    let first = &requests[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(
        first["tools"][0],
        json!({"type": "function", "name": "weather", "description": "The weather in a city.",
            "parameters": first["tools"][0]["parameters"].clone(), "strict": false})
    );
    assert_eq!(
        first["input"],
        json!([
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Weather in Paris and Oslo?"}
        ])
    );

    // The second request replays the first response item by item, then the outputs.
    let input = requests[1].body["input"].as_array().unwrap().clone();
    assert_eq!(
        input[2..],
        [
            json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "enc_1",
                "summary": [{"type": "summary_text", "text": "Two cities."}]}),
            json!({"role": "assistant", "id": "msg_1",
                "content": [{"type": "output_text", "text": "Checking both."}]}),
            json!({"type": "function_call", "id": "fc_a", "call_id": "call_a",
                "name": "weather", "arguments": "{\"city\":\"Paris\"}"}),
            json!({"type": "function_call", "id": "fc_b", "call_id": "call_b",
                "name": "weather", "arguments": "{\"city\":\"Oslo\"}"}),
            json!({"type": "function_call_output", "call_id": "call_a", "output": "sunny"}),
            json!({"type": "function_call_output", "call_id": "call_b", "output": "snowy"}),
        ]
    );
}

#[tokio::test]
async fn cancelling_a_run_mid_stream_closes_the_connection() {
    let event = "data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-loop\"}}\n\n";
    cancelling_mid_stream_closes_the_connection(
        |base_url| {
            OpenAiResponses::openai("gpt-loop", Some("sk-loop-key"), Some(&base_url)).unwrap()
        },
        event.to_string(),
    )
    .await;
}
