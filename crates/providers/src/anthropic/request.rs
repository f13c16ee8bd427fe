//! Messages API request bodies: system, alternating messages, tools, tool choice, settings.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use toolsmith_core::{
    ContentPart, Message, ModelOutput, ModelRequest, Part, Role, ToolCallPart, ToolChoice,
    ToolDeclaration, ToolResultPart,
};

use super::stream::PROVIDER;
use crate::body::{Body, tools_json};
use crate::dialect::{Anthropic, SchemaDialect};
use crate::provider_tools;
use crate::request_parts::decimal;

/// The dialect name the rendered tools are cached under.
pub const DIALECT: &str = "anthropic-messages";

/// `max_tokens` when the call settings give none (the Messages API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A toolset rendered for the Messages API, computed once per toolset.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedTools {
    /// `{name, description?, input_schema}` entries, then Anthropic's hosted tools verbatim.
    pub tools: Vec<Value>,
    /// `tools` serialised, as every request body carries it.
    pub tools_json: Bytes,
    /// Names of other providers' tools, which this wire cannot carry.
    pub dropped: Vec<String>,
}

/// Renders declarations as Messages API tools: function tools as
/// `{name, description?, input_schema}` with the schema in the [`Anthropic`] dialect (and
/// `strict: true` for strict tools), then this provider's hosted tools (`anthropic.*` provider
/// tools) with their `args` verbatim, for example
/// `{"type":"web_search_20260318","name":"web_search","max_uses":3}`. Other providers' tools
/// are set aside in `dropped`.
pub fn render_tools(declarations: &[ToolDeclaration]) -> RenderedTools {
    let split = provider_tools::split(declarations, Some(PROVIDER));
    let mut tools: Vec<Value> = split
        .functions
        .into_iter()
        .map(|declaration| {
            let mut tool = Map::new();
            tool.insert("name".into(), json!(&*declaration.name));
            if !declaration.description.is_empty() {
                tool.insert("description".into(), json!(declaration.description));
            }
            tool.insert(
                "input_schema".into(),
                Anthropic.transform(&declaration.input_schema, declaration.strict),
            );
            if declaration.strict {
                tool.insert("strict".into(), json!(true));
            }
            Value::Object(tool)
        })
        .collect();
    tools.extend(split.hosted.into_iter().map(|tool| tool.args.clone()));
    RenderedTools {
        tools_json: tools_json(&tools),
        tools,
        dropped: split.dropped,
    }
}

/// The JSON body for a call and the warnings to report at stream start.
///
/// `max_tokens` is `settings.max_output_tokens`, else [`DEFAULT_MAX_TOKENS`] (plus the thinking
/// budget when `provider_options.anthropic.thinking.budget_tokens` is set, which must stay
/// below it). `provider_options["anthropic"]`, when it is an object, is merged into the body
/// verbatim (`thinking`, `metadata`, `service_tier`…). `seed` is not supported (a warning).
pub fn build_body(request: &ModelRequest, model: &str, stream: bool) -> (Value, Vec<String>) {
    let (body, warnings) = build(request, model, stream);
    (body.into_value(), warnings)
}

/// [`build_body`]'s body before it is serialised, the tools spliced in as their JSON text.
pub(crate) fn build(request: &ModelRequest, model: &str, stream: bool) -> (Body, Vec<String>) {
    let mut warnings = Vec::new();
    let mut body = Body::new();
    body.insert("model", json!(model));
    let options = match request.provider_options.get(PROVIDER) {
        Some(Value::Object(options)) => Some(options),
        _ => None,
    };
    let max_tokens = request.settings.max_output_tokens.unwrap_or_else(|| {
        let budget = options
            .and_then(|o| o.get("thinking"))
            .and_then(|t| t.get("budget_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        DEFAULT_MAX_TOKENS.saturating_add(u32::try_from(budget).unwrap_or(u32::MAX))
    });
    body.insert("max_tokens", json!(max_tokens));
    let system: Vec<String> = request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::text)
        .filter(|t| !t.is_empty())
        .collect();
    if !system.is_empty() {
        body.insert("system", json!(system.join("\n\n")));
    }
    body.insert(
        "messages",
        Value::Array(messages(&request.messages, &mut warnings)),
    );

    let rendered = request.tools.rendered(DIALECT, render_tools);
    if !rendered.dropped.is_empty() {
        warnings.push(provider_tools::foreign_warning(
            &rendered.dropped,
            PROVIDER,
            model,
        ));
    }
    if !rendered.tools.is_empty() {
        body.splice("tools", rendered.tools_json.clone());
        let mut choice = match &request.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool { tool_name } => json!({"type": "tool", "name": tool_name}),
        };
        if request.parallel_tool_calls == Some(false) && request.tool_choice != ToolChoice::None {
            choice["disable_parallel_tool_use"] = json!(true);
        }
        body.insert("tool_choice", choice);
    }

    let settings = &request.settings;
    if let Some(t) = settings.temperature {
        body.insert("temperature", decimal(t));
    }
    if let Some(p) = settings.top_p {
        body.insert("top_p", decimal(p));
    }
    if let Some(k) = settings.top_k {
        body.insert("top_k", json!(k));
    }
    if settings.seed.is_some() {
        warnings.push(format!(
            "seed is not supported by {PROVIDER}/{model}; ignored."
        ));
    }
    if !settings.stop_sequences.is_empty() {
        body.insert("stop_sequences", json!(settings.stop_sequences));
    }
    if let Some(options) = options {
        for (key, value) in options {
            body.insert(key.clone(), value.clone());
        }
    }
    body.insert("stream", json!(stream));
    (body, warnings)
}

/// The thread as alternating `user` / `assistant` messages: system messages are left out (they
/// are the top-level `system`), client tool results go in user messages (first, as the API
/// requires), provider-executed calls and results stay in the assistant's, and consecutive
/// messages of one role are merged.
fn messages(thread: &[Message], warnings: &mut Vec<String>) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match out.last_mut() {
        Some((last, blocks)) if *last == role => blocks.push(block),
        _ => out.push((role, vec![block])),
    };
    for message in thread {
        match message.role {
            Role::System => {}
            Role::Assistant => {
                for part in &message.content {
                    match part {
                        Part::ToolResult(result) if !result.provider_executed => {
                            push("user", tool_result(result, warnings));
                        }
                        part => {
                            if let Some(block) = assistant_block(part) {
                                push("assistant", block);
                            }
                        }
                    }
                }
            }
            Role::User | Role::Tool => {
                for part in &message.content {
                    match part {
                        Part::ToolResult(result) if result.provider_executed => {
                            push("assistant", server_tool_result(result));
                        }
                        Part::ToolResult(result) => push("user", tool_result(result, warnings)),
                        Part::Text { text, .. } if !text.is_empty() => {
                            push("user", json!({"type": "text", "text": text}));
                        }
                        Part::File {
                            media_type,
                            data,
                            filename,
                        } => match file_block(media_type, data, filename.as_deref()) {
                            Some(block) => push("user", block),
                            None => warnings.push(unsupported_file(media_type)),
                        },
                        _ => {}
                    }
                }
            }
        }
    }
    out.into_iter()
        .map(|(role, mut content)| {
            if role == "user" {
                // Tool results must open a user message.
                content.sort_by_key(|block| block["type"] != "tool_result");
            }
            json!({"role": role, "content": content})
        })
        .collect()
}

fn unsupported_file(media_type: &str) -> String {
    format!("A {media_type} file cannot be sent over the Anthropic Messages wire; it was left out.")
}

/// One assistant part as a content block; `None` for what the API does not take back (empty
/// text, reasoning without an Anthropic signature, sources, files).
fn assistant_block(part: &Part) -> Option<Value> {
    match part {
        Part::Text {
            text,
            provider_metadata,
        } if !text.is_empty() => {
            let mut block = json!({"type": "text", "text": text});
            if let Some(citations) = provider_metadata
                .get(PROVIDER)
                .and_then(|m| m.get("citations"))
                .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
            {
                block["citations"] = citations.clone();
            }
            Some(block)
        }
        Part::Reasoning {
            text,
            provider_metadata,
        } => {
            let data = provider_metadata.get(PROVIDER)?;
            if let Some(redacted) = data.get("redactedData").and_then(Value::as_str) {
                return Some(json!({"type": "redacted_thinking", "data": redacted}));
            }
            let signature = data.get("signature").and_then(Value::as_str)?;
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        Part::ToolCall(call) => Some(tool_use(call)),
        Part::ToolResult(result) => Some(server_tool_result(result)),
        _ => None,
    }
}

/// `tool_use` (or, for a provider-executed call, the block type it came as:
/// `server_tool_use`, `mcp_tool_use`) with the fields kept in its metadata (`caller`,
/// `server_name`…).
fn tool_use(call: &ToolCallPart) -> Value {
    let kept = match call.provider_metadata.get(PROVIDER) {
        Some(Value::Object(kept)) => kept.clone(),
        _ => Map::new(),
    };
    let default_type = if call.provider_executed {
        "server_tool_use"
    } else {
        "tool_use"
    };
    let mut block = Map::new();
    block.insert(
        "type".into(),
        kept.get("type").cloned().unwrap_or(json!(default_type)),
    );
    block.insert("id".into(), json!(call.tool_call_id));
    block.insert("name".into(), json!(call.tool_name));
    let input = if call.input.is_object() {
        call.input.clone()
    } else {
        json!({})
    };
    block.insert("input".into(), input);
    for (key, value) in kept {
        if key != "type" {
            block.insert(key, value);
        }
    }
    Value::Object(block)
}

/// A provider-executed result echoed back as the block it came as (`web_search_tool_result`…),
/// its content verbatim.
fn server_tool_result(result: &ToolResultPart) -> Value {
    let kept = match result.provider_metadata.get(PROVIDER) {
        Some(Value::Object(kept)) => kept.clone(),
        _ => Map::new(),
    };
    let mut block = Map::new();
    let default_type = format!("{}_tool_result", result.tool_name);
    block.insert(
        "type".into(),
        kept.get("type").cloned().unwrap_or(json!(default_type)),
    );
    block.insert("tool_use_id".into(), json!(result.tool_call_id));
    let content = match &result.output {
        ModelOutput::Json { value } | ModelOutput::ErrorJson { value } => value.clone(),
        other => json!(other.to_text()),
    };
    block.insert("content".into(), content);
    for (key, value) in kept {
        if key != "type" {
            block.insert(key, value);
        }
    }
    Value::Object(block)
}

/// A client tool's result: `{"type":"tool_result","tool_use_id","content"}` with
/// `is_error: true` for errors and denials.
fn tool_result(result: &ToolResultPart, warnings: &mut Vec<String>) -> Value {
    let content = match &result.output {
        ModelOutput::Content { value } => {
            let mut blocks = Vec::new();
            for part in value {
                match part {
                    ContentPart::Text { text } => {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    ContentPart::Image { data, media_type } => {
                        match file_block(media_type, data, None) {
                            Some(block) => blocks.push(block),
                            None => warnings.push(unsupported_file(media_type)),
                        }
                    }
                    ContentPart::File {
                        data,
                        media_type,
                        filename,
                    } => match file_block(media_type, data, filename.as_deref()) {
                        Some(block) => blocks.push(block),
                        None => warnings.push(unsupported_file(media_type)),
                    },
                }
            }
            Value::Array(blocks)
        }
        other => json!(other.to_text()),
    };
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": content,
    });
    if result.output.is_error() {
        block["is_error"] = json!(true);
    }
    block
}

/// An image or PDF as a content block: base64 data (a `data:` URL is unwrapped) or an
/// `http(s)` URL. Other media types are `None`.
fn file_block(media_type: &str, data: &str, filename: Option<&str>) -> Option<Value> {
    let kind = match media_type {
        "image/jpeg" | "image/png" | "image/gif" | "image/webp" => "image",
        "application/pdf" => "document",
        _ => return None,
    };
    let source = if data.starts_with("http://") || data.starts_with("https://") {
        json!({"type": "url", "url": data})
    } else {
        let base64 = match data.strip_prefix("data:") {
            Some(rest) => rest.split_once(',').map_or(rest, |(_, b64)| b64),
            None => data,
        };
        json!({"type": "base64", "media_type": media_type, "data": base64})
    };
    let mut block = json!({"type": kind, "source": source});
    if let (Some(title), "document") = (filename, kind) {
        block["title"] = json!(title);
    }
    Some(block)
}
