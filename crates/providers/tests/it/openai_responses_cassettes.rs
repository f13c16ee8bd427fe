//! The pydantic-ai cassettes for the Responses API (`test_tool_choice_matrix[*-openai_responses]`,
//! recorded against api.openai.com) compared with the bodies this wire builds: tools,
//! `tool_choice`, and the second turn of the `auto` run, whose input carries the reasoning item
//! (id and encrypted content), the function call (with its item id) and its output.
//!
//! The `parsed_body`s below were copied as JSON from
//! `crates/providers/fixtures/pydantic-ai-cassettes/test_tool_choice_matrix[{auto,required,list_single}-openai_responses].yaml`
//! (there is no YAML parser among the dependencies).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsmith_core::{
    Message, ModelOutput, ModelPart, ModelRequest, Part, ProviderMetadata, Role, ToolCallPart,
    ToolChoice, ToolDeclaration, ToolDeclarations, ToolKind, ToolResultPart,
};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::openai_responses::{OpenAiResponses, decode_response};

/// `auto`, first request.
const AUTO_REQUEST_1: &str = r#"{"include": ["reasoning.encrypted_content"], "input": [{"content": "What's the weather in Paris?", "role": "user"}], "model": "gpt-5-mini", "stream": false, "tool_choice": "auto", "tools": [{"description": "Get the current weather for a city.", "name": "get_weather", "parameters": {"additionalProperties": false, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}, "strict": true, "type": "function"}]}"#;
/// `auto`, first response.
const AUTO_RESPONSE_1: &str = r#"{"background": false, "billing": {"payer": "developer"}, "completed_at": 1769718261, "created_at": 1769718259, "error": null, "frequency_penalty": 0.0, "id": "resp_00bc57bdb9540c4a00697bc1f32bb08197bd2a00c26b2d8880", "incomplete_details": null, "instructions": null, "max_output_tokens": null, "max_tool_calls": null, "metadata": {}, "model": "gpt-5-mini-2025-08-07", "object": "response", "output": [{"encrypted_content": "gAAAAABpe8H1NACf00lBwCrYxsuxZS2ZEKMwlv1ccK0JrbG3LBcOql6R7US9NvrHaILY0GYIZaSUYdd-bzlkfM3g_orn0k5QrCL1Jwv0PXu2mRQRu45W-cdxdO27BmuFCVFFozkYUZ5r9kbRziBGNMgWTpWZXxpDYgiLe-QL6O6VxLhh_xf3Cq8v0cXWHMkXts3DaQ1MfVb7alGXDkNtO6FOw99DyqLVhPfhrRul93zGitTJKkOOv5c7cgLsicXjapMpFt2H_kHjLxZRb9URivIV9v1LBgaLL6VHb9I-Ti9MWd8DdiGlWLk97KNiP2LjDpaXUe8-H9KI8uyrCExuQuuwCJJ_SGPrsHzEExPzn8L9TKEcmCHARnrf2ZI4Yg7AlXEl0nYeEDDA10C_XFVQw2BoUUHHrBBuyVxzovB8-uJzfV_tRH1b39WWEguUPP9IMVQnTOmi2XFfDp72jQ6KreLVhs93m_aJc3s9vU2oiP7iLkIgMX-Zat5ctZ62Jfp6AV4D9lIvScjWzj-TpmtOjsRURyLpqMtSXRBwY_36aseFoEqIgPfOhE7WcZp4jFTgPTzufm349WDk46r6BnH_3IICXCwYq-lGRIIHhQPkoLWC2zLomB6K66a3Bfx8TwEbl3nqnc7ldJF4LYzTBgX_mhcC2NR9sd9KeThoRKsAtfGbN7QZiqDcjti12fm56QX6bnljyWfxQ-S2YFFESvcJhJ5gW3-M_TP6TCLFBf-dO4BCjOOjQQY0B6CkaXQg8rf4ir8CUgdlHjYm6ep1rqb3dg_kzfi29TN39JWbcLWiBtWK2GgQ_C84njDUPkUAP1RyZYBRzOe07B8O_jNh6fEuH74BwMYc6jNo_0HZ2MqmGC1317MoIgOU9quaHEvNZlrDPSbGLAlZQa5ojH8gpGuEGIo5y8D2yxudz5hL-nL-2HKkH3KAO72CGK2Ho3dMr-WZZ1-sZs9mWOvQWuYR7nF3DYG-bPuJxPaPkga-A-arv2YIqPtgWYvDRlXL-3wL7a1y_HdvXd34QKpUQzVZSWN5LA1tRX6NQBKXzyv6pqiOdc-Fh8up-81Q5BlfFVysbFDMl-QN0P2U0Dzl6CPAoI5FB6IXTFLRyMW-wWNXz2pqNiT3_8us-rSdTrB6-sXiAEGND-7swTCNfkJyiHXLMff1uF2zsraAp4whW68Xlb4JU4lYKFFJRbt7iMTKYN2Ui9sXi4m9VqgJpOpiJx_UZQ2N96FIngf10Rle5w==", "id": "rs_00bc57bdb9540c4a00697bc1f3e4ec81978a3a5c602c71755d", "summary": [], "type": "reasoning"}, {"arguments": "{\"city\":\"Paris\"}", "call_id": "call_E4xGYcmG4CvUzTabsGjXo6ba", "id": "fc_00bc57bdb9540c4a00697bc1f59a688197b4e0ec95cbf520b1", "name": "get_weather", "status": "completed", "type": "function_call"}], "parallel_tool_calls": true, "presence_penalty": 0.0, "previous_response_id": null, "prompt_cache_key": null, "prompt_cache_retention": null, "reasoning": {"effort": "medium", "summary": null}, "safety_identifier": null, "service_tier": "default", "status": "completed", "store": true, "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"}, "tool_choice": "auto", "tools": [{"description": "Get the current weather for a city.", "name": "get_weather", "parameters": {"additionalProperties": false, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}, "strict": true, "type": "function"}], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled", "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 81, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 131}, "user": null}"#;
/// `auto`, second request (after the tool ran).
const AUTO_REQUEST_2: &str = r#"{"include": ["reasoning.encrypted_content"], "input": [{"content": "What's the weather in Paris?", "role": "user"}, {"encrypted_content": "gAAAAABpe8H1NACf00lBwCrYxsuxZS2ZEKMwlv1ccK0JrbG3LBcOql6R7US9NvrHaILY0GYIZaSUYdd-bzlkfM3g_orn0k5QrCL1Jwv0PXu2mRQRu45W-cdxdO27BmuFCVFFozkYUZ5r9kbRziBGNMgWTpWZXxpDYgiLe-QL6O6VxLhh_xf3Cq8v0cXWHMkXts3DaQ1MfVb7alGXDkNtO6FOw99DyqLVhPfhrRul93zGitTJKkOOv5c7cgLsicXjapMpFt2H_kHjLxZRb9URivIV9v1LBgaLL6VHb9I-Ti9MWd8DdiGlWLk97KNiP2LjDpaXUe8-H9KI8uyrCExuQuuwCJJ_SGPrsHzEExPzn8L9TKEcmCHARnrf2ZI4Yg7AlXEl0nYeEDDA10C_XFVQw2BoUUHHrBBuyVxzovB8-uJzfV_tRH1b39WWEguUPP9IMVQnTOmi2XFfDp72jQ6KreLVhs93m_aJc3s9vU2oiP7iLkIgMX-Zat5ctZ62Jfp6AV4D9lIvScjWzj-TpmtOjsRURyLpqMtSXRBwY_36aseFoEqIgPfOhE7WcZp4jFTgPTzufm349WDk46r6BnH_3IICXCwYq-lGRIIHhQPkoLWC2zLomB6K66a3Bfx8TwEbl3nqnc7ldJF4LYzTBgX_mhcC2NR9sd9KeThoRKsAtfGbN7QZiqDcjti12fm56QX6bnljyWfxQ-S2YFFESvcJhJ5gW3-M_TP6TCLFBf-dO4BCjOOjQQY0B6CkaXQg8rf4ir8CUgdlHjYm6ep1rqb3dg_kzfi29TN39JWbcLWiBtWK2GgQ_C84njDUPkUAP1RyZYBRzOe07B8O_jNh6fEuH74BwMYc6jNo_0HZ2MqmGC1317MoIgOU9quaHEvNZlrDPSbGLAlZQa5ojH8gpGuEGIo5y8D2yxudz5hL-nL-2HKkH3KAO72CGK2Ho3dMr-WZZ1-sZs9mWOvQWuYR7nF3DYG-bPuJxPaPkga-A-arv2YIqPtgWYvDRlXL-3wL7a1y_HdvXd34QKpUQzVZSWN5LA1tRX6NQBKXzyv6pqiOdc-Fh8up-81Q5BlfFVysbFDMl-QN0P2U0Dzl6CPAoI5FB6IXTFLRyMW-wWNXz2pqNiT3_8us-rSdTrB6-sXiAEGND-7swTCNfkJyiHXLMff1uF2zsraAp4whW68Xlb4JU4lYKFFJRbt7iMTKYN2Ui9sXi4m9VqgJpOpiJx_UZQ2N96FIngf10Rle5w==", "id": "rs_00bc57bdb9540c4a00697bc1f3e4ec81978a3a5c602c71755d", "summary": [], "type": "reasoning"}, {"arguments": "{\"city\":\"Paris\"}", "call_id": "call_E4xGYcmG4CvUzTabsGjXo6ba", "id": "fc_00bc57bdb9540c4a00697bc1f59a688197b4e0ec95cbf520b1", "name": "get_weather", "type": "function_call"}, {"call_id": "call_E4xGYcmG4CvUzTabsGjXo6ba", "output": "Sunny, 22C in Paris", "type": "function_call_output"}], "model": "gpt-5-mini", "stream": false, "tool_choice": "auto", "tools": [{"description": "Get the current weather for a city.", "name": "get_weather", "parameters": {"additionalProperties": false, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}, "strict": true, "type": "function"}]}"#;
/// `required`, first request.
const REQUIRED_REQUEST_1: &str = r#"{"include": ["reasoning.encrypted_content"], "input": [{"content": "What's the weather in Paris?", "role": "user"}], "model": "gpt-5-mini", "stream": false, "tool_choice": "required", "tools": [{"description": "Get weather for a city", "name": "get_weather", "parameters": {"additionalProperties": false, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}, "strict": true, "type": "function"}]}"#;
/// `list_single`, first request.
const LIST_SINGLE_REQUEST_1: &str = r#"{"include": ["reasoning.encrypted_content"], "input": [{"content": "What's the weather in Paris?", "role": "user"}], "model": "gpt-5-mini", "stream": false, "tool_choice": {"name": "get_weather", "type": "function"}, "tools": [{"description": "Get weather for a city", "name": "get_weather", "parameters": {"additionalProperties": false, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}, "strict": true, "type": "function"}, {"description": "Get time in a timezone", "name": "get_time", "parameters": {"additionalProperties": false, "properties": {"timezone": {"type": "string"}}, "required": ["timezone"], "type": "object"}, "strict": true, "type": "function"}]}"#;

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// The cassette's tools as declarations (already strict: the OpenAI dialect leaves them as is).
fn declarations(request: &Value) -> Arc<ToolDeclarations> {
    let tools = request["tools"].as_array().unwrap();
    Arc::new(ToolDeclarations::new(
        tools
            .iter()
            .map(|tool| ToolDeclaration {
                name: tool["name"].as_str().unwrap().into(),
                description: tool["description"].as_str().unwrap().into(),
                input_schema: Arc::new(tool["parameters"].clone()),
                strict: tool["strict"].as_bool().unwrap(),
                kind: ToolKind::Function,
            })
            .collect(),
    ))
}

fn model() -> OpenAiResponses {
    OpenAiResponses::openai("gpt-5-mini", Some("sk-test"), Some("http://127.0.0.1:1/v1"))
        .unwrap()
        .with_streaming(false)
}

/// pydantic-ai always asks for encrypted reasoning; here that is a provider option.
fn include_encrypted() -> Map<String, Value> {
    let mut options = Map::new();
    options.insert(
        "openai".into(),
        json!({"include": ["reasoning.encrypted_content"]}),
    );
    options
}

fn first_request(recorded: &Value, tool_choice: ToolChoice) -> Value {
    let request = ModelRequest {
        messages: vec![Message::user(
            recorded["input"][0]["content"].as_str().unwrap(),
        )],
        tools: declarations(recorded),
        tool_choice,
        provider_options: include_encrypted(),
        ..Default::default()
    };
    model().request_body(&request).0
}

#[test]
fn first_requests_match_the_cassettes() {
    for (recorded, choice) in [
        (AUTO_REQUEST_1, ToolChoice::Auto),
        (REQUIRED_REQUEST_1, ToolChoice::Required),
        (
            LIST_SINGLE_REQUEST_1,
            ToolChoice::Tool {
                tool_name: "get_weather".into(),
            },
        ),
    ] {
        let recorded = parse(recorded);
        assert_eq!(first_request(&recorded, choice), recorded);
    }
}

/// The assistant message the loop records from the decoded response (blocks with their end
/// metadata, calls with theirs).
fn assistant_from(parts: &[ModelPart]) -> Message {
    let mut content = Vec::new();
    for part in parts {
        match part {
            ModelPart::ReasoningEnd {
                provider_metadata, ..
            } => content.push(Part::Reasoning {
                text: String::new(),
                provider_metadata: provider_metadata.clone(),
            }),
            ModelPart::ToolCall(call) => content.push(Part::ToolCall(ToolCallPart {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                input: serde_json::from_str(&call.input).unwrap(),
                provider_executed: false,
                provider_metadata: call.provider_metadata.clone(),
            })),
            ModelPart::TextDelta { .. } => panic!("no text in this turn"),
            _ => {}
        }
    }
    Message::new(Role::Assistant, content)
}

#[test]
fn the_second_turn_round_trips_reasoning_and_the_call_as_recorded() {
    let first = parse(AUTO_REQUEST_1);
    let parts = decode_response(&parse(AUTO_RESPONSE_1)).unwrap();
    let assistant = assistant_from(&parts);
    let call = assistant.tool_calls().next().unwrap().clone();
    let request = ModelRequest {
        messages: vec![
            Message::user(first["input"][0]["content"].as_str().unwrap()),
            assistant,
            Message::tool_results(vec![ToolResultPart {
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
                output: ModelOutput::text("Sunny, 22C in Paris"),
                provider_executed: false,
                provider_metadata: ProviderMetadata::default(),
            }]),
        ],
        tools: declarations(&first),
        provider_options: include_encrypted(),
        ..Default::default()
    };
    let (body, warnings) = model().request_body(&request);
    assert!(warnings.is_empty());
    assert_eq!(body, parse(AUTO_REQUEST_2));
}
