//! Responses request bodies, snapshotted; multi-turn history built from decoded fixtures the
//! way the agent loop records it.

use std::sync::Arc;

use crate::common::fixtures_dir;
use serde_json::{Map, Value, json};
use toolsmith_core::{
    CallSettings, ContentPart, Message, ModelOutput, ModelPart, ModelRequest, Part,
    ProviderMetadata, Role, Tool, ToolCallPart, ToolChoice, ToolDeclaration, ToolDeclarations,
    ToolKind, ToolResultPart,
};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::decode::StreamDecoder;
use toolsmith_providers::openai_responses::{OpenAiResponses, ResponsesStreamDecoder};
use toolsmith_providers::provider_tools::{anthropic_web_search, openai_web_search};

fn declaration(name: &str, strict: bool, kind: ToolKind) -> ToolDeclaration {
    ToolDeclaration {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: Arc::new(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "default": 5}},
            "required": ["q"]
        })),
        strict,
        kind,
    }
}

fn provider_declaration(tool: &dyn Tool) -> ToolDeclaration {
    ToolDeclaration {
        name: tool.spec().shared_name().clone(),
        description: String::new(),
        input_schema: Arc::new(json!({"type": "object"})),
        strict: false,
        kind: tool.kind().clone(),
    }
}

fn tools() -> Arc<ToolDeclarations> {
    Arc::new(ToolDeclarations::new(vec![
        declaration("search", false, ToolKind::Function),
        declaration("lookup", true, ToolKind::Function),
        provider_declaration(&openai_web_search(json!({
            "search_context_size": "low",
            "filters": {"allowed_domains": ["docs.rs"]}
        }))),
    ]))
}

fn model() -> OpenAiResponses {
    OpenAiResponses::openai("gpt-5-mini", Some("sk-test"), Some("http://127.0.0.1:1/v1")).unwrap()
}

fn body(request: &ModelRequest) -> (Value, Vec<String>) {
    model().request_body(request)
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
        toolsmith_providers::openai_responses::DIALECT,
        toolsmith_providers::openai_responses::render_tools,
    );
    assert_eq!(Value::Array(cached.tools.clone()), first);
    assert_eq!(body(&request).0["tools"], first);
}

#[test]
fn tools_hosted_and_foreign_with_settings() {
    let mut declarations = tools().entries().to_vec();
    declarations.push(provider_declaration(&anthropic_web_search(json!({}))));
    let request = ModelRequest {
        messages: vec![Message::system("Be brief."), Message::user("Find cats.")],
        tools: Arc::new(ToolDeclarations::new(declarations)),
        parallel_tool_calls: Some(false),
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
    insta::assert_json_snapshot!("tools_hosted_and_foreign", body);
    assert_eq!(
        warnings,
        [
            "Dropped 1 provider-executed tool(s) (web_search): they belong to another provider, so openai-responses/gpt-5-mini will answer without them.",
            "top_k is not supported by openai-responses/gpt-5-mini; ignored.",
            "seed is not supported by openai-responses/gpt-5-mini (Responses API); ignored.",
            "Stop sequences are not supported by openai-responses/gpt-5-mini (Responses API); ignored.",
        ]
    );
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
        ToolChoice::Tool {
            tool_name: "web_search".into(),
        },
    ];
    let rendered: Vec<Value> = choices
        .into_iter()
        .map(|tool_choice| {
            let request = ModelRequest {
                messages: vec![Message::user("hi")],
                tools: tools(),
                tool_choice,
                parallel_tool_calls: Some(true),
                ..Default::default()
            };
            let body = body(&request).0;
            assert_eq!(body["parallel_tool_calls"], true);
            body["tool_choice"].clone()
        })
        .collect();
    insta::assert_json_snapshot!("tool_choice_variants", rendered);

    // No tools: neither tools nor tool_choice nor parallel_tool_calls.
    let (plain, _) = body(&ModelRequest {
        messages: vec![Message::user("hi")],
        tool_choice: ToolChoice::Required,
        parallel_tool_calls: Some(true),
        ..Default::default()
    });
    assert!(plain.get("tools").is_none());
    assert!(plain.get("tool_choice").is_none());
    assert!(plain.get("parallel_tool_calls").is_none());
    assert_eq!(plain["stream"], true);
    assert_eq!(
        model().endpoint(),
        "http://127.0.0.1:1/v1/responses",
        "requests go to {{base}}/responses"
    );
}

/// The assistant message the agent loop records from a model's parts (as `step.rs` does):
/// text and reasoning blocks with their end metadata, calls, provider-executed results.
fn assistant_from(parts: &[ModelPart]) -> Message {
    let mut content: Vec<Part> = Vec::new();
    let mut open: Vec<(std::sync::Arc<str>, usize)> = Vec::new();
    for part in parts {
        match part {
            ModelPart::TextStart { id } => {
                content.push(Part::text(""));
                open.push((id.clone(), content.len() - 1));
            }
            ModelPart::ReasoningStart { id } => {
                content.push(Part::Reasoning {
                    text: String::new(),
                    provider_metadata: ProviderMetadata::default(),
                });
                open.push((id.clone(), content.len() - 1));
            }
            ModelPart::TextDelta { id, delta } | ModelPart::ReasoningDelta { id, delta } => {
                let at = open.iter().find(|(o, _)| o == id).unwrap().1;
                if let Part::Text { text, .. } | Part::Reasoning { text, .. } = &mut content[at] {
                    text.push_str(delta);
                }
            }
            ModelPart::TextEnd {
                id,
                provider_metadata: metadata,
            }
            | ModelPart::ReasoningEnd {
                id,
                provider_metadata: metadata,
            } => {
                let at = open.iter().find(|(o, _)| o == id).unwrap().1;
                if let Part::Text {
                    provider_metadata, ..
                }
                | Part::Reasoning {
                    provider_metadata, ..
                } = &mut content[at]
                {
                    *provider_metadata = metadata.clone();
                }
            }
            ModelPart::ToolCall(call) => content.push(Part::ToolCall(ToolCallPart {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                input: serde_json::from_str(&call.input).unwrap_or(json!({})),
                provider_executed: call.provider_executed,
                provider_metadata: call.provider_metadata.clone(),
            })),
            ModelPart::ToolResult {
                tool_call_id,
                tool_name,
                result,
                is_error,
                provider_metadata,
            } => content.push(Part::ToolResult(ToolResultPart {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                output: if *is_error {
                    ModelOutput::ErrorJson {
                        value: result.clone(),
                    }
                } else {
                    ModelOutput::json(result.clone())
                },
                provider_executed: true,
                provider_metadata: provider_metadata.clone(),
            })),
            ModelPart::Source(source) => content.push(Part::Source(source.clone())),
            _ => {}
        }
    }
    Message::new(Role::Assistant, content)
}

/// The first response of a fixture, decoded.
fn decoded(dir: &str, file: &str) -> Vec<ModelPart> {
    let text = std::fs::read_to_string(fixtures_dir().join(dir).join(file)).unwrap();
    let mut decoder = ResponsesStreamDecoder::new();
    let mut parts = Vec::new();
    for line in text.lines() {
        decoder.push(line, &mut parts).unwrap();
        if decoder.is_done() {
            break;
        }
    }
    parts
}

fn result(id: &str, name: &str, output: ModelOutput) -> ToolResultPart {
    ToolResultPart {
        tool_call_id: id.into(),
        tool_name: name.into(),
        output,
        provider_executed: false,
        provider_metadata: ProviderMetadata::default(),
    }
}

/// Encrypted reasoning is long: shortened in snapshots (it is compared in full elsewhere).
fn shortened(mut body: Value) -> Value {
    if let Some(items) = body["input"].as_array_mut() {
        for item in items {
            if let Some(Value::String(encrypted)) = item.get_mut("encrypted_content") {
                encrypted.truncate(16);
                encrypted.push('…');
            }
        }
    }
    body
}

#[test]
fn multi_turn_history_round_trips_reasoning_and_item_ids() {
    let first = decoded(
        "openai-responses",
        "openai-reasoning-encrypted-content.1.chunks.txt",
    );
    let assistant = assistant_from(&first);
    let thread = vec![
        Message::system("Use the calculator."),
        Message::user("(12 + 7) * 3 * 10?"),
        assistant.clone(),
        Message::tool_results(vec![result(
            "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
            "calculator",
            ModelOutput::json(json!(19)),
        )]),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCallPart {
                tool_call_id: "call_2".into(),
                tool_name: "calculator".into(),
                input: json!({"a": 19, "b": 3, "op": "multiply"}),
                provider_executed: false,
                provider_metadata: ProviderMetadata::default(),
            })],
        ),
        Message::tool_results(vec![result(
            "call_2",
            "calculator",
            ModelOutput::error_text("Invalid arguments: op must be add"),
        )]),
    ];
    let request = ModelRequest {
        messages: thread,
        tools: tools(),
        ..Default::default()
    };
    let (body, _) = body(&request);
    // The encrypted content goes back verbatim.
    let Part::Reasoning {
        provider_metadata, ..
    } = &assistant.content[0]
    else {
        panic!("reasoning first: {:?}", assistant.content);
    };
    assert_eq!(
        body["input"][2]["encrypted_content"],
        provider_metadata.get("openai").unwrap()["reasoningEncryptedContent"]
    );
    insta::assert_json_snapshot!("multi_turn_history", shortened(body)["input"]);
}

#[test]
fn hosted_calls_are_referenced_and_mcp_approvals_denied() {
    let search = assistant_from(&decoded(
        "openai-responses",
        "openai-web-search-tool.1.chunks.txt",
    ));
    let mcp = assistant_from(&decoded(
        "openai-responses",
        "openai-mcp-tool-approval.1.chunks.txt",
    ));
    let request = ModelRequest {
        messages: vec![
            Message::user("Tech news?"),
            search,
            Message::user("Shorten ai-sdk.dev."),
            mcp,
            Message::user("And now?"),
        ],
        ..Default::default()
    };
    let (body, _) = body(&request);
    let input = body["input"].as_array().unwrap();
    // Text is long: keep its shape, not all of it.
    let summary: Vec<Value> = input
        .iter()
        .map(|item| {
            let mut item = item.clone();
            if let Some(Value::String(text)) = item.pointer_mut("/content/0/text") {
                text.truncate(24);
            }
            item
        })
        .collect();
    insta::assert_json_snapshot!("hosted_history", summary);
}

fn native_calls() -> Vec<Message> {
    let mut thread = vec![Message::user("Do things.")];
    let mut results = Vec::new();
    for (file, output) in [
        (
            "openai-custom-tool.1.chunks.txt",
            ModelOutput::text("3 rows"),
        ),
        (
            "openai-shell-tool.1.chunks.txt",
            ModelOutput::text(".\n..\nnotes.txt"),
        ),
        (
            "openai-local-shell-tool.1.chunks.txt",
            ModelOutput::error_text("ls: permission denied"),
        ),
        (
            "openai-apply-patch-tool.1.chunks.txt",
            ModelOutput::text("Created shopping-checklist.md"),
        ),
        (
            "openai-client-tool-search.1.chunks.txt",
            ModelOutput::json(json!({"tools": [{"type": "function", "name": "get_weather",
                "parameters": {"type": "object"}, "defer_loading": true}]})),
        ),
    ] {
        let assistant = assistant_from(&decoded("openai-responses", file));
        let call = assistant.tool_calls().next().unwrap().clone();
        results.push(ToolResultPart {
            tool_call_id: call.tool_call_id,
            tool_name: call.tool_name,
            output,
            provider_executed: false,
            provider_metadata: ProviderMetadata::default(),
        });
        thread.push(assistant);
    }
    thread.push(Message::tool_results(results));
    thread
}

#[test]
fn client_executed_openai_tools_answer_with_their_native_output_items() {
    let request = ModelRequest {
        messages: native_calls(),
        ..Default::default()
    };
    let (body, _) = body(&request);
    insta::assert_json_snapshot!("native_calls", shortened(body)["input"]);
}

#[test]
fn store_false_leaves_ids_out_and_asks_for_encrypted_reasoning() {
    let mut thread = vec![Message::user("(12 + 7) * 3 * 10?")];
    thread.push(assistant_from(&decoded(
        "openai-responses",
        "openai-reasoning-encrypted-content.1.chunks.txt",
    )));
    // Reasoning without encrypted content cannot be sent when nothing is stored.
    thread.push(assistant_from(&decoded(
        "openai-responses",
        "openai-web-search-tool.1.chunks.txt",
    )));
    thread.push(Message::user("Thanks."));
    let mut options = Map::new();
    options.insert(
        "openai".into(),
        json!({"store": false, "include": ["file_search_call.results"], "reasoning": {"effort": "low", "summary": "auto"}}),
    );
    let request = ModelRequest {
        messages: thread,
        provider_options: options,
        ..Default::default()
    };
    let (body, _) = body(&request);
    let body = shortened(body);
    let mut summary = body.clone();
    for item in summary["input"].as_array_mut().unwrap() {
        if let Some(Value::String(text)) = item.pointer_mut("/content/0/text") {
            text.truncate(24);
        }
    }
    insta::assert_json_snapshot!("store_false", summary);
}

#[test]
fn provider_options_under_openai_and_the_provider_name() {
    let mut options = Map::new();
    options.insert(
        "openai".into(),
        json!({"reasoning": {"effort": "high"}, "service_tier": "flex", "text": {"verbosity": "low"}}),
    );
    options.insert(
        "lmstudio".into(),
        json!({"service_tier": "default", "ttl": 60}),
    );
    options.insert("anthropic".into(), json!({"thinking": {"type": "enabled"}}));
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        provider_options: options,
        ..Default::default()
    };
    let local = OpenAiResponses::compatible("qwen3", "http://localhost:1234/v1/", None)
        .with_provider_name("lmstudio")
        .with_streaming(false);
    assert_eq!(local.endpoint(), "http://localhost:1234/v1/responses");
    let (body, _) = local.request_body(&request);
    insta::assert_json_snapshot!("provider_options", body);
}

#[test]
fn user_files_and_rich_tool_results() {
    let user = Message::new(
        Role::User,
        vec![
            Part::text("Compare these."),
            Part::File {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
                filename: None,
            },
            Part::File {
                media_type: "image/jpeg".into(),
                data: "https://example.com/cat.jpg".into(),
                filename: None,
            },
            Part::File {
                media_type: "application/pdf".into(),
                data: "JVBERi0=".into(),
                filename: Some("report.pdf".into()),
            },
            Part::File {
                media_type: "application/pdf".into(),
                data: "https://example.com/paper.pdf".into(),
                filename: None,
            },
            Part::File {
                media_type: "audio/wav".into(),
                data: "UklGRg==".into(),
                filename: None,
            },
        ],
    );
    let call = Message::new(
        Role::Assistant,
        vec![
            Part::text("Taking a screenshot."),
            Part::ToolCall(ToolCallPart {
                tool_call_id: "call_shot".into(),
                tool_name: "screenshot".into(),
                input: json!({}),
                provider_executed: false,
                provider_metadata: ProviderMetadata::default(),
            }),
        ],
    );
    let results = Message::tool_results(vec![result(
        "call_shot",
        "screenshot",
        ModelOutput::Content {
            value: vec![
                ContentPart::Text {
                    text: "The screen:".into(),
                },
                ContentPart::Image {
                    data: "iVBORw0KGgo=".into(),
                    media_type: "image/png".into(),
                },
            ],
        },
    )]);
    let (body, warnings) = body(&ModelRequest {
        messages: vec![user, call, results],
        ..Default::default()
    });
    assert_eq!(
        warnings,
        ["A audio/wav file cannot be sent over the Responses wire; it was left out."]
    );
    insta::assert_json_snapshot!("files_and_rich_results", body["input"]);
}

#[test]
fn foreign_reasoning_and_hosted_calls_are_left_out() {
    // A thread that started on another provider: its reasoning (a signature under
    // "anthropic") and its server tool use cannot be expressed here.
    let mut anthropic = ProviderMetadata::default();
    anthropic.insert("anthropic", json!({"signature": "sig"}));
    let assistant = Message::new(
        Role::Assistant,
        vec![
            Part::Reasoning {
                text: "Thinking.".into(),
                provider_metadata: anthropic.clone(),
            },
            Part::ToolCall(ToolCallPart {
                tool_call_id: "srvtoolu_1".into(),
                tool_name: "web_search".into(),
                input: json!({"query": "x"}),
                provider_executed: true,
                provider_metadata: ProviderMetadata::default(),
            }),
            Part::ToolResult(ToolResultPart {
                tool_call_id: "srvtoolu_1".into(),
                tool_name: "web_search".into(),
                output: ModelOutput::json(json!([])),
                provider_executed: true,
                provider_metadata: ProviderMetadata::default(),
            }),
            Part::text("Found nothing."),
        ],
    );
    let (body, _) = body(&ModelRequest {
        messages: vec![Message::user("Search."), assistant],
        ..Default::default()
    });
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": "Search."},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Found nothing."}]}
        ])
    );
}

#[test]
fn message_phases_are_echoed() {
    let lines = [
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_c","phase":"commentary","content":[]}}"#,
        r#"{"type":"response.output_text.delta","output_index":0,"item_id":"msg_c","delta":"Looking."}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_c","phase":"commentary","content":[{"type":"output_text","text":"Looking."}]}}"#,
        r#"{"type":"response.completed","response":{"status":"completed"}}"#,
    ];
    let mut decoder = ResponsesStreamDecoder::new();
    let mut parts = Vec::new();
    for line in lines {
        decoder.push(line, &mut parts).unwrap();
    }
    let (body, _) = body(&ModelRequest {
        messages: vec![Message::user("Go."), assistant_from(&parts)],
        ..Default::default()
    });
    assert_eq!(
        body["input"][1],
        json!({"role": "assistant", "id": "msg_c", "phase": "commentary",
            "content": [{"type": "output_text", "text": "Looking."}]})
    );
}
