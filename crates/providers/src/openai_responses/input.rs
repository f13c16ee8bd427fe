//! The thread as Responses `input` items (the mapping is tabled in the [module docs](super)).

use std::collections::HashMap;

use crate::request_parts::{data_url, user_content};
use serde_json::{Map, Value, json};
use toolsmith_core::{
    ContentPart, Message, ModelOutput, Part, ProviderMetadata, Role, ToolCallPart, ToolResultPart,
};

/// How the input is built.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputOptions {
    /// Whether the response is stored (`store` not false): item ids and references resolve.
    pub store: bool,
}

fn openai<'a>(metadata: &'a ProviderMetadata, key: &str) -> Option<&'a Value> {
    metadata.get("openai")?.get(key).filter(|v| !v.is_null())
}

fn openai_str<'a>(metadata: &'a ProviderMetadata, key: &str) -> Option<&'a str> {
    openai(metadata, key)?.as_str().filter(|s| !s.is_empty())
}

/// The thread as input items; warnings for content the wire cannot carry.
pub(crate) fn input_items(
    thread: &[Message],
    options: InputOptions,
    warnings: &mut Vec<String>,
) -> Vec<Value> {
    // The kind of each local call, to answer it with the matching output item.
    let mut kinds: HashMap<&str, &str> = HashMap::new();
    for message in thread {
        for call in message.tool_calls() {
            if let Some(kind) = openai_str(&call.provider_metadata, "type") {
                kinds.insert(&call.tool_call_id, kind);
            }
        }
    }
    let mut out = Vec::new();
    for message in thread {
        match message.role {
            Role::System => out.push(json!({"role": "system", "content": message.text()})),
            Role::User => {
                if let Some(content) = user_content(
                    &message.content,
                    "input_text",
                    "Responses",
                    file_part,
                    warnings,
                ) {
                    out.push(json!({"role": "user", "content": content}));
                }
                results(&message.content, &kinds, &mut out);
            }
            Role::Assistant => assistant(&message.content, options, &kinds, &mut out),
            Role::Tool => results(&message.content, &kinds, &mut out),
        }
    }
    out
}

/// `input_image` / `input_file` for a file; `None` for audio, which the wire does not take.
fn file_part(media_type: &str, data: &str, filename: Option<&str>) -> Option<Value> {
    if media_type.starts_with("image/") {
        return Some(json!({"type": "input_image", "image_url": data_url(media_type, data)}));
    }
    if media_type.starts_with("audio/") {
        return None;
    }
    if data.starts_with("http://") || data.starts_with("https://") {
        return Some(json!({"type": "input_file", "file_url": data}));
    }
    let default_name = if media_type == "application/pdf" {
        "document.pdf"
    } else {
        "file"
    };
    Some(json!({
        "type": "input_file",
        "filename": filename.unwrap_or(default_name),
        "file_data": data_url(media_type, data),
    }))
}

/// An assistant message (or reasoning item) being assembled from consecutive parts.
enum Pending {
    Message {
        id: Option<String>,
        phase: Option<Value>,
        content: Vec<Value>,
    },
    Reasoning {
        id: String,
        summary: Vec<Value>,
        content: Vec<Value>,
        encrypted: Option<Value>,
    },
}

impl Pending {
    fn into_item(self) -> Value {
        match self {
            Pending::Message { id, phase, content } => {
                let mut item = Map::new();
                item.insert("role".into(), json!("assistant"));
                item.insert("content".into(), Value::Array(content));
                if let Some(id) = id {
                    item.insert("id".into(), json!(id));
                }
                if let Some(phase) = phase {
                    item.insert("phase".into(), phase);
                }
                Value::Object(item)
            }
            Pending::Reasoning {
                id,
                summary,
                content,
                encrypted,
            } => {
                let mut item = Map::new();
                item.insert("type".into(), json!("reasoning"));
                item.insert("id".into(), json!(id));
                item.insert("summary".into(), Value::Array(summary));
                if !content.is_empty() {
                    item.insert("content".into(), Value::Array(content));
                }
                if let Some(encrypted) = encrypted {
                    item.insert("encrypted_content".into(), encrypted);
                }
                Value::Object(item)
            }
        }
    }
}

fn flush(pending: &mut Option<Pending>, out: &mut Vec<Value>) {
    if let Some(item) = pending.take() {
        out.push(item.into_item());
    }
}

fn assistant(
    parts: &[Part],
    options: InputOptions,
    kinds: &HashMap<&str, &str>,
    out: &mut Vec<Value>,
) {
    let mut pending: Option<Pending> = None;
    for part in parts {
        match part {
            Part::Text {
                text,
                provider_metadata,
            } => {
                let id = openai_str(provider_metadata, "itemId")
                    .filter(|_| options.store)
                    .map(str::to_string);
                let piece = json!({"type": "output_text", "text": text});
                match &mut pending {
                    Some(Pending::Message {
                        id: open, content, ..
                    }) if *open == id => {
                        content.push(piece);
                    }
                    _ => {
                        flush(&mut pending, out);
                        if text.is_empty() {
                            continue;
                        }
                        pending = Some(Pending::Message {
                            id,
                            phase: openai(provider_metadata, "phase").cloned(),
                            content: vec![piece],
                        });
                    }
                }
            }
            Part::Reasoning {
                text,
                provider_metadata,
            } => {
                let Some(id) = openai_str(provider_metadata, "itemId") else {
                    continue;
                };
                let encrypted = openai(provider_metadata, "reasoningEncryptedContent").cloned();
                if !options.store && encrypted.is_none() {
                    continue;
                }
                let raw = openai(provider_metadata, "reasoningText") == Some(&json!(true));
                let same =
                    matches!(&pending, Some(Pending::Reasoning { id: open, .. }) if open == id);
                if !same {
                    flush(&mut pending, out);
                    pending = Some(Pending::Reasoning {
                        id: id.to_string(),
                        summary: Vec::new(),
                        content: Vec::new(),
                        encrypted: None,
                    });
                }
                if let Some(Pending::Reasoning {
                    summary,
                    content,
                    encrypted: slot,
                    ..
                }) = &mut pending
                {
                    if !text.is_empty() {
                        if raw {
                            content.push(json!({"type": "reasoning_text", "text": text}));
                        } else {
                            summary.push(json!({"type": "summary_text", "text": text}));
                        }
                    }
                    if slot.is_none() {
                        *slot = encrypted;
                    }
                }
            }
            Part::ToolCall(call) => {
                flush(&mut pending, out);
                call_items(call, options, out);
            }
            Part::ToolResult(_) => flush(&mut pending, out),
            _ => {}
        }
    }
    flush(&mut pending, out);
    results(parts, kinds, out);
}

/// The item(s) echoing a call.
fn call_items(call: &ToolCallPart, options: InputOptions, out: &mut Vec<Value>) {
    let metadata = &call.provider_metadata;
    let item_id = openai_str(metadata, "itemId");
    let kind = openai_str(metadata, "type").unwrap_or("function_call");
    if call.provider_executed {
        let Some(id) = item_id.filter(|_| options.store) else {
            return;
        };
        out.push(json!({"type": "item_reference", "id": id}));
        if kind == "mcp_approval_request" {
            out.push(json!({
                "type": "mcp_approval_response",
                "approval_request_id": id,
                "approve": false,
            }));
        }
        return;
    }
    let mut item = Map::new();
    item.insert("type".into(), json!(kind));
    item.insert("call_id".into(), json!(call.tool_call_id));
    match kind {
        "custom_tool_call" => {
            item.insert("name".into(), json!(call.tool_name));
            let input = match call.input.get("input") {
                Some(Value::String(text)) => text.clone(),
                _ => call.input.to_string(),
            };
            item.insert("input".into(), json!(input));
        }
        "shell_call" | "local_shell_call" | "computer_call" => {
            item.insert("action".into(), call.input.clone());
            item.insert("status".into(), json!("completed"));
        }
        "apply_patch_call" => {
            item.insert("operation".into(), call.input.clone());
            item.insert("status".into(), json!("completed"));
        }
        "tool_search_call" => {
            item.insert("arguments".into(), call.input.clone());
            item.insert("execution".into(), json!("client"));
            item.insert("status".into(), json!("completed"));
        }
        _ => {
            item.insert("type".into(), json!("function_call"));
            item.insert("name".into(), json!(call.tool_name));
            item.insert("arguments".into(), json!(call.input.to_string()));
        }
    }
    if let Some(id) = item_id.filter(|_| options.store) {
        item.insert("id".into(), json!(id));
    }
    out.push(Value::Object(item));
}

fn results(parts: &[Part], kinds: &HashMap<&str, &str>, out: &mut Vec<Value>) {
    for part in parts {
        if let Part::ToolResult(result) = part
            && !result.provider_executed
        {
            let kind = kinds
                .get(result.tool_call_id.as_str())
                .copied()
                .unwrap_or("function_call");
            out.push(output_item(result, kind));
        }
    }
}

/// The output item answering a call of `kind`.
fn output_item(result: &ToolResultPart, kind: &str) -> Value {
    let call_id = &result.tool_call_id;
    let text = result.output.to_text();
    let failed = result.output.is_error();
    match kind {
        "custom_tool_call" => {
            json!({"type": "custom_tool_call_output", "call_id": call_id, "output": text})
        }
        "shell_call" => {
            let (stdout, stderr) = if failed {
                (String::new(), text)
            } else {
                (text, String::new())
            };
            json!({
                "type": "shell_call_output",
                "call_id": call_id,
                "output": [{
                    "stdout": stdout,
                    "stderr": stderr,
                    "outcome": {"type": "exit", "exit_code": i32::from(failed)},
                }],
            })
        }
        "local_shell_call" => {
            // This item names the call by `id` (the model's call id), not `call_id`.
            json!({"type": "local_shell_call_output", "id": call_id, "output": text})
        }
        "apply_patch_call" => json!({
            "type": "apply_patch_call_output",
            "call_id": call_id,
            "status": if failed { "failed" } else { "completed" },
            "output": text,
        }),
        "tool_search_call" => {
            let tools = match &result.output {
                ModelOutput::Json { value } => match value {
                    Value::Array(tools) => Value::Array(tools.clone()),
                    other => other.get("tools").cloned().unwrap_or(json!([])),
                },
                _ => json!([]),
            };
            json!({
                "type": "tool_search_output",
                "call_id": call_id,
                "execution": "client",
                "status": "completed",
                "tools": tools,
            })
        }
        _ => json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": function_output(&result.output),
        }),
    }
}

/// A function call's output: text, or content parts when the result has images or files.
fn function_output(output: &ModelOutput) -> Value {
    let ModelOutput::Content { value } = output else {
        return json!(output.to_text());
    };
    if value.iter().all(|p| matches!(p, ContentPart::Text { .. })) {
        return json!(output.to_text());
    }
    let parts = value
        .iter()
        .map(|part| match part {
            ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
            ContentPart::Image { data, media_type } => {
                json!({"type": "input_image", "image_url": data_url(media_type, data)})
            }
            ContentPart::File {
                data,
                media_type,
                filename,
            } => json!({
                "type": "input_file",
                "filename": filename.as_deref().unwrap_or("file"),
                "file_data": data_url(media_type, data),
            }),
        })
        .collect();
    Value::Array(parts)
}
