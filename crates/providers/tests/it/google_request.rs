//! Gemini request bodies, snapshotted: tools, tool choice, history with signatures, settings.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsmith_core::{
    CallSettings, ContentPart, Message, ModelOutput, ModelRequest, Part, ProviderMetadata,
    ProviderTool, Role, ToolCallPart, ToolChoice, ToolDeclaration, ToolDeclarations, ToolKind,
    ToolResultPart,
};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::google::{self, GoogleGemini};

fn declaration(name: &str, schema: Value, kind: ToolKind) -> ToolDeclaration {
    ToolDeclaration {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: Arc::new(schema),
        strict: false,
        kind,
    }
}

fn search_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "The query."},
            "limit": {"type": ["integer", "null"], "minimum": 1, "default": 10},
            "filter": {"$ref": "#/$defs/Filter"}
        },
        "required": ["q"],
        "additionalProperties": false,
        "$defs": {
            "Filter": {
                "type": "object",
                "properties": {
                    "site": {"type": "string", "format": "hostname"},
                    "kind": {"oneOf": [{"const": "news"}, {"const": "web"}]}
                },
                "additionalProperties": false
            }
        }
    })
}

fn provider(id: &str) -> ToolKind {
    ToolKind::Provider(ProviderTool {
        id: id.into(),
        args: json!({}),
    })
}

fn tools() -> Arc<ToolDeclarations> {
    Arc::new(ToolDeclarations::new(vec![
        declaration("search", search_schema(), ToolKind::Function),
        declaration(
            "now",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ToolKind::Function,
        ),
    ]))
}

fn gemini() -> GoogleGemini {
    GoogleGemini::new(
        "gemini-2.5-flash",
        Some("AIza-test"),
        Some("http://127.0.0.1:1/v1beta/"),
    )
    .unwrap()
}

fn body(request: &ModelRequest) -> (Value, Vec<String>) {
    gemini().request_body(request)
}

#[test]
fn endpoints() {
    let model = gemini();
    assert_eq!(
        model.endpoint(),
        "http://127.0.0.1:1/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        model.clone().with_streaming(false).endpoint(),
        "http://127.0.0.1:1/v1beta/models/gemini-2.5-flash:generateContent"
    );
    let tuned = GoogleGemini::new("tunedModels/mine", Some("k"), Some("http://h/v1")).unwrap();
    assert_eq!(
        tuned.endpoint(),
        "http://h/v1/tunedModels/mine:streamGenerateContent?alt=sse"
    );
    use toolsmith_core::LanguageModel;
    assert_eq!(
        (model.provider(), model.model_id()),
        ("google", "gemini-2.5-flash")
    );
}

#[test]
fn tools_provider_tools_and_settings() {
    let declarations = vec![
        declaration("search", search_schema(), ToolKind::Function),
        declaration("now", json!({"type": "object"}), ToolKind::Function),
        declaration("google_search", json!({}), provider("google.google_search")),
        declaration("web_search", json!({}), provider("openai.web_search")),
        declaration(
            "web_search_a",
            json!({}),
            provider("anthropic.web_search_20260318"),
        ),
    ];
    let request = ModelRequest {
        messages: vec![
            Message::system("Be brief."),
            Message::system("Cite sources."),
            Message::user("Find cats."),
        ],
        tools: Arc::new(ToolDeclarations::new(declarations)),
        settings: CallSettings {
            max_output_tokens: Some(256),
            temperature: Some(0.5),
            top_p: Some(0.9),
            top_k: Some(40),
            seed: Some(7),
            stop_sequences: vec!["END".into()],
        },
        ..Default::default()
    };
    let (body, warnings) = body(&request);
    assert_eq!(
        warnings,
        [
            "Dropped 2 provider-executed tool(s) (web_search, web_search_a): they belong to another provider, so google/gemini-2.5-flash will answer without them."
        ]
    );
    // Google Search is its own entry beside the function declarations.
    assert_eq!(body["tools"][1], json!({"google_search": {}}));
    assert_eq!(body["tools"].as_array().unwrap().len(), 2);
    // A tool without parameters has no `parameters`.
    assert!(
        body["tools"][0]["functionDeclarations"][1]
            .get("parameters")
            .is_none()
    );
    insta::assert_json_snapshot!("tools_provider_tools_and_settings", body);
}

#[test]
fn google_search_alone_sends_no_tool_config() {
    let search = toolsmith_providers::provider_tools::google_search_with(
        json!({"timeRangeFilter": {"startTime": "2026-01-01T00:00:00Z"}}),
    );
    use toolsmith_core::Tool;
    let request = ModelRequest {
        messages: vec![Message::user("News?")],
        tools: Arc::new(ToolDeclarations::new(vec![ToolDeclaration {
            name: search.spec().shared_name().clone(),
            description: String::new(),
            input_schema: Arc::new(json!({})),
            strict: false,
            kind: search.kind().clone(),
        }])),
        tool_choice: ToolChoice::Required,
        parallel_tool_calls: Some(false),
        ..Default::default()
    };
    let (body, warnings) = body(&request);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        body["tools"],
        json!([{"google_search": {"timeRangeFilter": {"startTime": "2026-01-01T00:00:00Z"}}}])
    );
    assert!(body.get("toolConfig").is_none());
    assert!(body.get("generationConfig").is_none());
    assert!(body.get("systemInstruction").is_none());
}

#[test]
fn every_tool_choice_variant() {
    let choices = [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::Tool {
            tool_name: "search".into(),
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
            body(&request).0["toolConfig"].clone()
        })
        .collect();
    insta::assert_json_snapshot!("tool_choice_variants", rendered);

    // No tools: no tools, no toolConfig.
    let (plain, warnings) = body(&ModelRequest {
        messages: vec![Message::user("hi")],
        tool_choice: ToolChoice::Required,
        parallel_tool_calls: Some(false),
        ..Default::default()
    });
    assert!(warnings.is_empty());
    assert!(plain.get("tools").is_none());
    assert!(plain.get("toolConfig").is_none());

    // Gemini cannot turn parallel calls off: warned, never silently.
    let (_, warnings) = body(&ModelRequest {
        messages: vec![Message::user("hi")],
        tools: tools(),
        parallel_tool_calls: Some(false),
        ..Default::default()
    });
    assert_eq!(
        warnings,
        ["parallel_tool_calls=false is not supported by google/gemini-2.5-flash; ignored."]
    );
    let (_, warnings) = body(&ModelRequest {
        messages: vec![Message::user("hi")],
        tools: tools(),
        parallel_tool_calls: Some(true),
        ..Default::default()
    });
    assert!(warnings.is_empty());
    // A default (an agent whose calls run one at a time) is no request: nothing to warn about.
    let (_, warnings) = body(&ModelRequest {
        messages: vec![Message::user("hi")],
        tools: tools(),
        parallel_tool_calls: Some(false),
        parallel_tool_calls_defaulted: true,
        ..Default::default()
    });
    assert!(warnings.is_empty(), "{warnings:?}");
}

fn google(metadata: Value) -> ProviderMetadata {
    let mut m = ProviderMetadata::default();
    m.insert("google", metadata);
    m
}

fn call(id: &str, input: Value, metadata: ProviderMetadata) -> Part {
    Part::ToolCall(ToolCallPart {
        tool_call_id: id.into(),
        tool_name: "search".into(),
        input,
        provider_executed: false,
        provider_metadata: metadata,
    })
}

fn result(id: &str, output: ModelOutput) -> ToolResultPart {
    ToolResultPart {
        tool_call_id: id.into(),
        tool_name: "search".into(),
        output,
        provider_executed: false,
        provider_metadata: ProviderMetadata::default(),
    }
}

fn history() -> Vec<Message> {
    vec![
        Message::system("You search."),
        Message::user("Find cats and dogs."),
        Message::new(
            Role::Assistant,
            vec![
                Part::Reasoning {
                    text: "Two searches.".into(),
                    provider_metadata: google(json!({"thoughtSignature": "sig-thought"})),
                },
                Part::text("Searching."),
                call(
                    "fc_1",
                    json!({"q": "cats"}),
                    google(json!({"thoughtSignature": "sig-call-1", "id": "fc_1"})),
                ),
                call(
                    "call_x_2",
                    json!({"q": "dogs", "limit": 2}),
                    ProviderMetadata::default(),
                ),
                // Another provider's metadata is not Gemini's to echo.
                Part::Source(toolsmith_core::Source {
                    source_type: "url".into(),
                    id: "s1".into(),
                    url: Some("https://example.com".into()),
                    title: None,
                }),
            ],
        ),
        // Results arrive out of order: sent in call order, in one content.
        Message::tool_results(vec![
            result(
                "call_x_2",
                ModelOutput::error_text("Search backend is down."),
            ),
            result("fc_1", ModelOutput::json(json!({"hits": ["Tom"]}))),
        ]),
        Message::new(
            Role::Assistant,
            vec![call(
                "call_x_3",
                json!({"q": "dogs"}),
                google(json!({"thoughtSignature": "sig-call-3"})),
            )],
        ),
        Message::tool_results(vec![result(
            "call_x_3",
            ModelOutput::Content {
                value: vec![
                    ContentPart::Text { text: "Rex".into() },
                    ContentPart::Image {
                        data: "iVBORw0KGgo=".into(),
                        media_type: "image/png".into(),
                    },
                ],
            },
        )]),
        Message::new(
            Role::Assistant,
            vec![
                Part::Text {
                    text: "Tom the cat and Rex the dog.".into(),
                    provider_metadata: google(json!({"thoughtSignature": "sig-text"})),
                },
                Part::Text {
                    text: String::new(),
                    provider_metadata: ProviderMetadata::default(),
                },
            ],
        ),
        Message::new(
            Role::User,
            vec![
                Part::text("And these?"),
                Part::File {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                    filename: None,
                },
                Part::File {
                    media_type: "application/pdf".into(),
                    data: "https://example.com/a.pdf".into(),
                    filename: Some("a.pdf".into()),
                },
                Part::File {
                    media_type: "image/jpeg".into(),
                    data: "data:image/webp;base64,UklGRg==".into(),
                    filename: None,
                },
            ],
        ),
        Message::user("Thanks."),
    ]
}

#[test]
fn multi_turn_history_with_signatures_and_results() {
    let request = ModelRequest {
        messages: history(),
        tools: tools(),
        ..Default::default()
    };
    let (body, warnings) = body(&request);
    assert!(warnings.is_empty());
    insta::assert_json_snapshot!("multi_turn_history", body["contents"]);
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "You search."}]})
    );
    let contents = body["contents"].as_array().unwrap();
    // user, model, user (results), model, user (result + image), model, user (merged).
    let roles: Vec<&str> = contents
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "model", "user", "model", "user", "model", "user"]
    );
    // The signature rides on the very part it came with, verbatim.
    assert_eq!(
        contents[1]["parts"][2],
        json!({"functionCall": {"name": "search", "args": {"q": "cats"}, "id": "fc_1"},
            "thoughtSignature": "sig-call-1"})
    );
    assert_eq!(
        contents[2]["parts"],
        json!([
            {"functionResponse": {"name": "search", "response": {"output": {"hits": ["Tom"]}}, "id": "fc_1"}},
            {"functionResponse": {"name": "search", "response": {"error": "Search backend is down."}}}
        ])
    );
}

#[test]
fn provider_options_are_merged_where_they_belong() {
    let mut provider_options = Map::new();
    provider_options.insert(
        "google".into(),
        json!({
            "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true},
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
            "generationConfig": {"responseMimeType": "text/plain", "temperature": 0.1},
            "toolConfig": {"functionCallingConfig": {"streamFunctionCallArguments": true}},
            "cachedContent": "cachedContents/abc"
        }),
    );
    provider_options.insert("openai".into(), json!({"reasoning_effort": "high"}));
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: tools(),
        tool_choice: ToolChoice::Required,
        settings: CallSettings {
            temperature: Some(0.7),
            max_output_tokens: Some(100),
            ..Default::default()
        },
        provider_options,
        ..Default::default()
    };
    let (body, warnings) = body(&request);
    assert!(warnings.is_empty());
    assert_eq!(
        body["generationConfig"],
        json!({
            "maxOutputTokens": 100,
            "temperature": 0.1,
            "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true},
            "responseMimeType": "text/plain"
        })
    );
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "streamFunctionCallArguments": true}})
    );
    assert_eq!(body["cachedContent"], "cachedContents/abc");
    assert_eq!(body["safetySettings"][0]["threshold"], "BLOCK_NONE");
    assert!(body.get("reasoning_effort").is_none());
    insta::assert_json_snapshot!("provider_options", body);
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
    let cached = tools.rendered(google::DIALECT, google::render_tools);
    assert_eq!(Value::Array(cached.tools.clone()), first);
    assert!(cached.has_functions);
    assert_eq!(body(&request).0["tools"], first);
}

#[test]
fn gemini_3_gets_the_documented_signature_for_unsigned_history_calls() {
    // A history written by another model: no Gemini signatures at all.
    let messages = vec![
        Message::user("Find cats and dogs."),
        Message::new(
            Role::Assistant,
            vec![
                call("a", json!({"q": "cats"}), ProviderMetadata::default()),
                call("b", json!({"q": "dogs"}), ProviderMetadata::default()),
            ],
        ),
        Message::tool_results(vec![
            result("a", ModelOutput::text("Tom")),
            result("b", ModelOutput::text("Rex")),
        ]),
        // A signed step is left alone.
        Message::new(
            Role::Assistant,
            vec![call(
                "c",
                json!({"q": "birds"}),
                google(json!({"thoughtSignature": "real"})),
            )],
        ),
        Message::tool_results(vec![result("c", ModelOutput::text("Tweety"))]),
    ];
    let request = ModelRequest {
        messages,
        tools: tools(),
        ..Default::default()
    };
    let gemini3 = GoogleGemini::new("gemini-3-pro-preview", Some("k"), None).unwrap();
    let (body, warnings) = gemini3.request_body(&request);
    assert_eq!(
        warnings,
        [
            "1 tool call(s) in the history (search) have no Gemini thought signature (history from another model, or metadata lost): sent with skip_thought_signature_validator so google/gemini-3-pro-preview accepts them."
        ]
    );
    let contents = &body["contents"];
    assert_eq!(
        contents[1]["parts"][0]["thoughtSignature"],
        google::SKIP_SIGNATURE_VALIDATOR
    );
    assert!(contents[1]["parts"][1].get("thoughtSignature").is_none());
    assert_eq!(contents[3]["parts"][0]["thoughtSignature"], "real");

    // Earlier models accept unsigned calls: nothing added.
    for model in [
        "gemini-2.5-flash",
        "models/gemini-2.0-flash",
        "gemma-3-27b-it",
    ] {
        let (body, warnings) = GoogleGemini::new(model, Some("k"), None)
            .unwrap()
            .request_body(&request);
        assert!(warnings.is_empty(), "{model}");
        assert!(
            body["contents"][1]["parts"][0]
                .get("thoughtSignature")
                .is_none()
        );
    }
    let (_, warnings) = GoogleGemini::new("models/gemini-3.1-flash-lite", Some("k"), None)
        .unwrap()
        .request_body(&request);
    assert_eq!(warnings.len(), 1);
}

#[test]
fn code_execution_history_is_replayed_as_gemini_parts() {
    let executed = |id: &str, input: Value, metadata: ProviderMetadata| {
        Part::ToolCall(ToolCallPart {
            tool_call_id: id.into(),
            tool_name: "code_execution".into(),
            input,
            provider_executed: true,
            provider_metadata: metadata,
        })
    };
    let outcome = |id: &str, output: ModelOutput| {
        Part::ToolResult(ToolResultPart {
            tool_call_id: id.into(),
            tool_name: "code_execution".into(),
            output,
            provider_executed: true,
            provider_metadata: ProviderMetadata::default(),
        })
    };
    let request = ModelRequest {
        messages: vec![
            Message::user("2^10?"),
            Message::new(
                Role::Assistant,
                vec![
                    executed(
                        "c1",
                        json!({"language": "PYTHON", "code": "print(2**10)"}),
                        google(json!({"thoughtSignature": "sig-code"})),
                    ),
                    outcome(
                        "c1",
                        ModelOutput::json(json!({"outcome": "OUTCOME_OK", "output": "1024\n"})),
                    ),
                    executed(
                        "c2",
                        json!({"language": "PYTHON", "code": "1/0"}),
                        ProviderMetadata::default(),
                    ),
                    outcome(
                        "c2",
                        ModelOutput::ErrorJson {
                            value: json!({"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}),
                        },
                    ),
                    Part::text("1024."),
                    // Another provider's hosted tool is not replayed.
                    Part::ToolCall(ToolCallPart {
                        tool_call_id: "ws".into(),
                        tool_name: "web_search".into(),
                        input: json!({"query": "x"}),
                        provider_executed: true,
                        provider_metadata: ProviderMetadata::default(),
                    }),
                ],
            ),
            Message::user("Thanks."),
        ],
        ..Default::default()
    };
    let (body, warnings) = GoogleGemini::new("gemini-3-flash-preview", Some("k"), None)
        .unwrap()
        .request_body(&request);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"executableCode": {"language": "PYTHON", "code": "print(2**10)"}, "thoughtSignature": "sig-code"},
            {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1024\n"}},
            {"executableCode": {"language": "PYTHON", "code": "1/0"}},
            {"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}},
            {"text": "1024."}
        ]})
    );
}

#[test]
fn google_search_is_left_out_with_a_warning_on_gemini_1() {
    let request = ModelRequest {
        messages: vec![Message::user("News?")],
        tools: Arc::new(ToolDeclarations::new(vec![
            declaration("search", search_schema(), ToolKind::Function),
            declaration("google_search", json!({}), provider("google.google_search")),
        ])),
        ..Default::default()
    };
    let old = GoogleGemini::new("gemini-1.5-pro", Some("k"), None).unwrap();
    let (body, warnings) = old.request_body(&request);
    assert_eq!(
        warnings,
        [
            "google_search is not supported by google/gemini-1.5-pro (it needs Gemini 2.0 or later); the model will answer without it."
        ]
    );
    assert_eq!(body["tools"].as_array().unwrap().len(), 1);
    assert!(body["tools"][0].get("functionDeclarations").is_some());
    // Gemini 2 and later, and models that are not named gemini-N, keep it.
    for model in ["gemini-2.0-flash", "gemini-3-pro-preview", "my-proxy-model"] {
        let (body, warnings) = GoogleGemini::new(model, Some("k"), None)
            .unwrap()
            .request_body(&request);
        assert!(warnings.is_empty(), "{model}");
        assert_eq!(body["tools"][1], json!({"google_search": {}}), "{model}");
    }
}
