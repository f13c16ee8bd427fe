//! A full agent loop against a loopback server speaking Gemini's native streaming wire.

use crate::common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_agent::Agent;
use toolsmith_core::{ToolError, UnifiedFinishReason, from_fn};
use toolsmith_providers::google::GoogleGemini;

#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The city.
    city: String,
    /// Days ahead.
    days: Option<u32>,
}

fn chunk(parts: Value) -> String {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}}],
        "usageMetadata": {"trafficType": "ON_DEMAND"},
        "modelVersion": "gemini-loop",
        "responseId": "resp-1"
    })
    .to_string()
}

fn finish(parts: Value, input: u64, output: u64, thoughts: u64) -> String {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": output,
            "thoughtsTokenCount": thoughts},
        "modelVersion": "gemini-loop"
    })
    .to_string()
}

fn sse(lines: &[String]) -> String {
    lines.iter().map(|l| format!("data: {l}\r\n\r\n")).collect()
}

/// Step 1: a thought, then two calls whose arguments stream in pieces (`partialArgs`), the
/// first carrying the thought signature, the second without its terminator.
fn step_one() -> String {
    sse(&[
        chunk(json!([{"text": "Two cities: two calls.", "thought": true}])),
        chunk(
            json!([{"functionCall": {"name": "weather", "willContinue": true},
            "thoughtSignature": "c2lnbmF0dXJlLTE="}]),
        ),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.city", "stringValue": "Par", "willContinue": true}], "willContinue": true}}])),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.city", "stringValue": "is", "willContinue": true}], "willContinue": true}}])),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.city", "stringValue": ""},
            {"jsonPath": "$.days", "numberValue": 2}], "willContinue": true}}])),
        chunk(json!([{"functionCall": {}}])),
        chunk(json!([{"functionCall": {"name": "weather", "willContinue": true}}])),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.city", "stringValue": "Os", "willContinue": true}], "willContinue": true}}])),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.city", "stringValue": "lo", "willContinue": true}], "willContinue": true}}])),
        finish(json!([{"text": ""}]), 50, 20, 12),
    ])
}

fn step_two() -> String {
    sse(&[
        chunk(json!([{"text": "Paris is sunny; "}])),
        chunk(json!([{"text": "Oslo is snowy."}])),
        finish(
            json!([{"text": "", "thoughtSignature": "c2lnbmF0dXJlLTI="}]),
            90,
            8,
            0,
        ),
    ])
}

#[tokio::test]
async fn a_two_step_tool_loop_over_gemini() {
    let server = Server::start(vec![
        Reply::sse(step_one()).split(5, 13, true),
        Reply::sse(step_two()).split(6, 9, false),
    ])
    .await;
    let model =
        GoogleGemini::new("gemini-loop", Some("AIza-loop-key"), Some(&server.base_url)).unwrap();
    let weather = from_fn(
        "weather",
        "The weather in a city.",
        |args: Weather, _cx| async move {
            Ok::<_, ToolError>(match (args.city.as_str(), args.days) {
                ("Paris", Some(2)) => "sunny",
                ("Paris", _) => "wrong days",
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
    let inputs: Vec<Value> = out.steps[0]
        .tool_calls
        .iter()
        .map(|c| c.input.clone())
        .collect();
    assert_eq!(
        inputs,
        [json!({"city": "Paris", "days": 2}), json!({"city": "Oslo"})]
    );
    assert_eq!(
        out.steps[0].finish_reason.unified,
        UnifiedFinishReason::ToolCalls
    );
    assert_eq!(out.finish_reason.unified, UnifiedFinishReason::Stop);
    assert_eq!(out.usage.input.total, Some(140));
    assert_eq!(out.usage.output.total, Some(40));
    assert_eq!(out.usage.output.reasoning, Some(12));
    // The agent's default of no parallel calls is no request Gemini cannot honour: no warning.
    assert!(out.steps.iter().all(|s| s.warnings.is_empty()), "{out:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            r.path,
            "/v1/models/gemini-loop:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.header("x-goog-api-key"), Some("AIza-loop-key"));
    }
    let first = &requests[0].body;
    assert_eq!(
        first["systemInstruction"],
        json!({"parts": [{"text": "Answer briefly."}]})
    );
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["name"],
        "weather"
    );
    assert_eq!(
        first["toolConfig"],
        json!({"functionCallingConfig": {"mode": "AUTO"}})
    );
    assert_eq!(
        first["contents"],
        json!([{"role": "user", "parts": [{"text": "Weather in Paris and Oslo?"}]}])
    );

    // The second request: the model turn with the thought and both calls (the signature on
    // the first call's part, verbatim), then one user turn with both results in call order.
    let contents = requests[1].body["contents"].as_array().unwrap().clone();
    assert_eq!(contents.len(), 3);
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"text": "Two cities: two calls.", "thought": true},
            {"functionCall": {"name": "weather", "args": {"city": "Paris", "days": 2}},
             "thoughtSignature": "c2lnbmF0dXJlLTE="},
            {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}}
        ]})
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"output": "sunny"}}},
            {"functionResponse": {"name": "weather", "response": {"output": "snowy"}}}
        ]})
    );
}

#[tokio::test]
async fn cancelling_a_run_mid_stream_closes_the_connection() {
    let event = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Thinking\"}],\"role\":\"model\"}}]}\n\n";
    cancelling_mid_stream_closes_the_connection(
        |base_url| {
            GoogleGemini::new("gemini-loop", Some("AIza-loop-key"), Some(&base_url)).unwrap()
        },
        event.to_string(),
    )
    .await;
}
