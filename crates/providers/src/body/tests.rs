//! The spliced body against the value body: the same JSON, byte for byte, on every wire.

use serde_json::json;

use super::*;

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}),
        json!({"type": "function", "function": {"name": "b\"c", "description": "é\n"}}),
    ]
}

#[test]
fn the_bytes_are_the_values_compact_serialisation_in_order() {
    let mut body = Body::new();
    body.insert("model", json!("m"));
    body.splice("tools", tools_json(&tools()));
    body.insert("tool_choice", json!("auto"));
    body.insert("stream", json!(true));
    let bytes = body.to_bytes();
    let value = body.into_value();
    assert_eq!(bytes, serde_json::to_vec(&value).unwrap());
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["model", "tools", "tool_choice", "stream"]);
    assert_eq!(value["tools"], Value::Array(tools()));
}

#[test]
fn setting_the_spliced_member_replaces_it_in_place() {
    let mut body = Body::new();
    body.insert("model", json!("m"));
    body.splice("tools", tools_json(&tools()));
    body.insert("stream", json!(true));
    body.insert("tools", json!([]));
    assert_eq!(
        body.to_bytes(),
        br#"{"model":"m","tools":[],"stream":true}"#
    );
}

#[test]
fn a_spliced_member_changed_in_place_is_an_ordinary_value() {
    let mut body = Body::new();
    body.splice("tools", tools_json(&tools()));
    body.insert("stream", json!(true));
    body.get_mut("tools").unwrap().as_array_mut().unwrap().pop();
    assert_eq!(
        body.into_value(),
        json!({"tools": [tools()[0].clone()], "stream": true})
    );
    let mut body = Body::new();
    body.splice("tools", tools_json(&tools()));
    assert_eq!(body.remove("tools"), Some(Value::Array(tools())));
    assert_eq!(body.to_bytes(), b"{}");
}

#[test]
fn removing_moves_the_last_member_into_its_place_as_the_map_did() {
    let mut body = Body::new();
    let mut map = Map::new();
    for key in ["a", "b", "c", "d"] {
        body.insert(key, json!(key));
        map.insert(key.to_owned(), json!(key));
    }
    body.remove("b");
    map.remove("b");
    assert_eq!(body.to_bytes(), serde_json::to_vec(&map).unwrap());
    assert_eq!(body.into_value(), Value::Object(map));
}

mod wires {
    use std::sync::Arc;

    use serde_json::{Map, Value, json};
    use toolsmith_core::{
        Message, ModelRequest, Tool, ToolChoice, ToolDeclaration, ToolDeclarations, ToolKind,
    };

    use crate::body::Body;
    use crate::provider_tools::{anthropic_web_search, google_search, openai_web_search};
    use crate::settings::ModelBuilder;
    use crate::{AnthropicMessages, GoogleGemini, OpenAiChat, OpenAiResponses};

    fn function(name: &str) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            description: format!("The \"{name}\" tool: é.\n"),
            input_schema: Arc::new(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "Args",
                "type": "object",
                "properties": {"q": {"type": "string"}, "n": {"type": "integer", "default": 1}},
                "required": ["q"]
            })),
            strict: name.ends_with("strict"),
            kind: ToolKind::Function,
        }
    }

    fn provider(tool: &dyn Tool, name: &str) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            description: String::new(),
            input_schema: Arc::new(json!({"type": "object"})),
            strict: false,
            kind: tool.kind().clone(),
        }
    }

    /// Requests with and without tools, choices and provider options (one naming `tools`).
    fn requests() -> Vec<ModelRequest> {
        let declarations = Arc::new(ToolDeclarations::new(vec![
            function("search"),
            function("lookup_strict"),
            provider(&anthropic_web_search(json!({"max_uses": 3})), "web_search"),
            provider(&openai_web_search(json!({})), "openai_search"),
            provider(&google_search(), "google_search"),
        ]));
        let thread = vec![
            Message::system("Be brief."),
            Message::user("Find \"cats\"."),
        ];
        let mut overriding = Map::new();
        for key in ["openai", "openai-compatible", "anthropic", "google"] {
            overriding.insert(key.into(), json!({"tools": [], "store": false, "x": 1}));
        }
        let with_tools = ModelRequest {
            messages: thread.clone(),
            tools: declarations,
            tool_choice: ToolChoice::Tool {
                tool_name: "search".into(),
            },
            parallel_tool_calls: Some(false),
            ..Default::default()
        };
        vec![
            ModelRequest {
                messages: thread,
                ..Default::default()
            },
            with_tools.clone(),
            ModelRequest {
                provider_options: overriding,
                ..with_tools
            },
        ]
    }

    fn check(body: Body, what: &str) {
        let bytes = body.to_bytes();
        let value = body.into_value();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            serde_json::to_string(&value).unwrap(),
            "{what}"
        );
    }

    #[test]
    fn every_wire_sends_the_compact_serialisation_of_its_request_body() {
        let chat = OpenAiChat::compatible("m", "http://127.0.0.1:1/v1", None);
        let responses = OpenAiResponses::compatible("m", "http://127.0.0.1:1/v1", None);
        let anthropic = AnthropicMessages::new("m", Some("k"), Some("http://127.0.0.1:1")).unwrap();
        let gemini =
            |model: &str| GoogleGemini::new(model, Some("k"), Some("http://127.0.0.1:1")).unwrap();
        for (i, request) in requests().iter().enumerate() {
            for streaming in [true, false] {
                let what = format!("request {i}, streaming {streaming}");
                let chat = chat.clone().with_streaming(streaming);
                assert_eq!(
                    chat.body(request).0.into_value(),
                    chat.request_body(request).0
                );
                check(chat.body(request).0, &format!("chat, {what}"));
                let responses = responses.clone().with_streaming(streaming);
                check(responses.body(request).0, &format!("responses, {what}"));
                let anthropic = anthropic.clone().with_streaming(streaming);
                check(anthropic.body(request).0, &format!("anthropic, {what}"));
                // Gemini 1.5 has no Google Search: its tools are not the rendered ones.
                for model in ["gemini-2.5-flash", "gemini-1.5-pro"] {
                    let gemini = gemini(model).with_streaming(streaming);
                    check(gemini.body(request).0, &format!("{model}, {what}"));
                }
            }
        }
        let (body, _) = gemini("gemini-1.5-pro").request_body(&requests()[1]);
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(1), "{body}");
        let (body, _) = chat.request_body(&requests()[2]);
        assert_eq!(body["tools"], json!([]));
        let (body, _) = chat.request_body(&requests()[1]);
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(2));
        assert!(matches!(body.get("tool_choice"), Some(Value::Object(_))));
    }
}
