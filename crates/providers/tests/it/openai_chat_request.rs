//! Chat Completions request bodies, snapshotted.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::{
    CallSettings, Message, ModelOutput, ModelRequest, Part, ProviderMetadata, ProviderTool, Role,
    ToolCallPart, ToolChoice, ToolDeclaration, ToolDeclarations, ToolKind, ToolResultPart,
};
use toolsmith_providers::openai_chat::OpenAiChat;

fn declaration(name: &str, strict: bool, kind: ToolKind) -> ToolDeclaration {
    ToolDeclaration {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: Arc::new(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["q"]
        })),
        strict,
        kind,
    }
}

fn tools() -> Arc<ToolDeclarations> {
    Arc::new(ToolDeclarations::new(vec![
        declaration("search", false, ToolKind::Function),
        declaration("lookup", true, ToolKind::Function),
    ]))
}

fn openai() -> OpenAiChat {
    OpenAiChat::openai(
        "gpt-4.1-mini",
        Some("sk-test"),
        Some("http://127.0.0.1:1/v1"),
    )
    .unwrap()
}

fn body(request: &ModelRequest) -> (Value, Vec<String>) {
    openai().request_body(request)
}

#[test]
fn tools_strict_and_not_with_settings() {
    let request = ModelRequest {
        messages: vec![Message::system("Be brief."), Message::user("Find cats.")],
        tools: tools(),
        parallel_tool_calls: Some(false),
        settings: CallSettings {
            max_output_tokens: Some(256),
            temperature: Some(0.5),
            seed: Some(7),
            stop_sequences: vec!["END".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let (body, warnings) = body(&request);
    assert!(warnings.is_empty());
    insta::assert_json_snapshot!("tools_strict_and_not", body);
}

#[test]
fn every_tool_choice_variant() {
    let choices = [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::Tool {
            tool_name: "lookup".into(),
        },
    ];
    let rendered: Vec<Value> = choices
        .into_iter()
        .map(|tool_choice| {
            let request = ModelRequest {
                messages: vec![Message::user("hi")],
                tools: tools(),
                tool_choice,
                ..Default::default()
            };
            body(&request).0["tool_choice"].clone()
        })
        .collect();
    insta::assert_json_snapshot!("tool_choice_variants", rendered);

    // No tools: neither tools nor tool_choice is sent.
    let (plain, _) = body(&ModelRequest {
        messages: vec![Message::user("hi")],
        tool_choice: ToolChoice::Required,
        parallel_tool_calls: Some(true),
        ..Default::default()
    });
    assert!(plain.get("tools").is_none());
    assert!(plain.get("tool_choice").is_none());
    assert!(plain.get("parallel_tool_calls").is_none());
}

fn history() -> Vec<Message> {
    let call = |id: &str, input: Value| {
        Part::ToolCall(ToolCallPart {
            tool_call_id: id.into(),
            tool_name: "search".into(),
            input,
            provider_executed: false,
            provider_metadata: ProviderMetadata::default(),
        })
    };
    let result = |id: &str, output: ModelOutput| ToolResultPart {
        tool_call_id: id.into(),
        tool_name: "search".into(),
        output,
        provider_executed: false,
        provider_metadata: ProviderMetadata::default(),
    };
    vec![
        Message::system("You search."),
        Message::user("Find cats and dogs."),
        Message::new(
            Role::Assistant,
            vec![
                Part::Reasoning {
                    text: "two searches".into(),
                    provider_metadata: ProviderMetadata::default(),
                },
                Part::text("Searching."),
                call("call_1", json!({"q": "cats"})),
                call("call_2", json!({"q": "dogs", "limit": 2})),
            ],
        ),
        Message::tool_results(vec![
            result("call_1", ModelOutput::json(json!({"hits": ["Tom"]}))),
            result("call_2", ModelOutput::error_text("Search backend is down.")),
        ]),
        Message::new(Role::Assistant, vec![call("call_3", json!({"q": "dogs"}))]),
        Message::tool_results(vec![result("call_3", ModelOutput::text("Rex"))]),
        Message::assistant("Tom the cat and Rex the dog."),
        Message::new(
            Role::User,
            vec![
                Part::text("And this one?"),
                Part::File {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                    filename: None,
                },
            ],
        ),
    ]
}

#[test]
fn multi_turn_history_with_tool_results_success_and_error() {
    let request = ModelRequest {
        messages: history(),
        tools: tools(),
        ..Default::default()
    };
    let (body, warnings) = body(&request);
    assert!(warnings.is_empty());
    insta::assert_json_snapshot!("multi_turn_history", body["messages"]);
    // The error result is sent as its text.
    assert_eq!(body["messages"][4]["content"], "Search backend is down.");
    // A turn of calls alone has `""` for content, not `null`: llama-cpp-python validates it as
    // a string and answers HTTP 500 to `null`.
    assert_eq!(body["messages"][5]["content"], json!(""));
    assert_eq!(
        body["messages"][2]["tool_calls"][1]["function"]["arguments"],
        r#"{"q":"dogs","limit":2}"#
    );
}

#[test]
fn provider_tools_are_dropped_with_exactly_one_warning() {
    let provider = |id: &str| {
        ToolKind::Provider(ProviderTool {
            id: id.into(),
            args: json!({}),
        })
    };
    let request = ModelRequest {
        messages: vec![Message::user("What happened today?")],
        tools: Arc::new(ToolDeclarations::new(vec![
            declaration("search", false, ToolKind::Function),
            declaration("web_search", false, provider("openai.web_search")),
            declaration("google_search", false, provider("google.google_search")),
        ])),
        ..Default::default()
    };
    let (body, warnings) = body(&request);
    assert_eq!(
        warnings,
        [
            "Dropped 2 provider-executed tool(s) (web_search, google_search): the Chat Completions wire has no hosted-tool support, so openai/gpt-4.1-mini will answer without them."
        ]
    );
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search"]);
    insta::assert_json_snapshot!("provider_tools_dropped", body);

    // Only provider tools: no tools at all, still one warning.
    let only = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: Arc::new(ToolDeclarations::new(vec![declaration(
            "web_search",
            false,
            provider("openai.web_search"),
        )])),
        ..Default::default()
    };
    let (body, warnings) = openai().request_body(&only);
    assert_eq!(warnings.len(), 1);
    assert!(body.get("tools").is_none());
}

#[test]
fn tools_render_once_per_toolset() {
    let tools = tools();
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: tools.clone(),
        ..Default::default()
    };
    let first = body(&request).0["tools"].clone();
    let cached = tools.rendered(
        toolsmith_providers::openai_chat::DIALECT,
        toolsmith_providers::openai_chat::render_tools,
    );
    assert_eq!(Value::Array(cached.tools.clone()), first);
    assert_eq!(body(&request).0["tools"], first);
}

#[test]
fn compatible_flavor_uses_max_tokens_and_top_k_and_provider_options() {
    let model = OpenAiChat::compatible("llama", "http://127.0.0.1:1/v1/", None);
    assert_eq!(model.endpoint(), "http://127.0.0.1:1/v1/chat/completions");
    let mut provider_options = serde_json::Map::new();
    provider_options.insert("openai-compatible".into(), json!({"min_p": 0.1}));
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        settings: CallSettings {
            max_output_tokens: Some(10),
            top_k: Some(40),
            ..Default::default()
        },
        provider_options,
        ..Default::default()
    };
    let (body, warnings) = model.request_body(&request);
    assert!(warnings.is_empty());
    assert_eq!(body["max_tokens"], 10);
    assert_eq!(body["top_k"], 40);
    assert_eq!(body["min_p"], 0.1);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    // OpenAI itself has no top_k: warned, not sent.
    let (body, warnings) = openai().request_body(&request);
    assert!(body.get("top_k").is_none());
    assert_eq!(body["max_completion_tokens"], 10);
    assert_eq!(warnings.len(), 1);
}
