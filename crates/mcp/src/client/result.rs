//! An MCP `tools/call` result as a toolsmith result, read from its wire form (the
//! specification's JSON, stable across SDK versions):
//!
//! - `isError: true` → a [`ToolError`] with code `MCP_TOOL_ERROR` and the content's text as
//!   its message: the model sees it and can try again;
//! - otherwise the app value is `structuredContent` when the server sent it, else the text of
//!   a result that is one text block, else the content blocks as sent;
//! - what the model sees: the text when every block is text (joined by newlines), the
//!   structured content as JSON when there is no content block, else multi-part content —
//!   images as images, audio and binary resources as files (`data` base64, with their media
//!   type), text resources as their text headed by their URI, resource links as a line naming
//!   them. A block of a type this version does not know is shown as its JSON.

use serde_json::{Value, json};
use toolsmith_core::{ContentPart, ModelOutput, ToolError, ToolOutput};

/// The code of the error a tool reports with `isError: true`.
pub const MCP_TOOL_ERROR: &str = "MCP_TOOL_ERROR";

/// Maps a `CallToolResult` in its JSON form (see the [module docs](self)).
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ModelOutput;
/// use toolsmith_mcp::client::tool_result;
///
/// let out = tool_result(json!({"content": [{"type": "text", "text": "12:00"}]})).unwrap();
/// assert_eq!(out.value, json!("12:00"));
/// let err = tool_result(json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}))
///     .unwrap_err();
/// assert_eq!((err.code(), err.message()), ("MCP_TOOL_ERROR", "no such file"));
/// ```
///
/// # Errors
///
/// The tool's own error (`isError: true`).
pub fn tool_result(mut result: Value) -> Result<ToolOutput, ToolError> {
    let content = match result.get_mut("content").map(Value::take) {
        Some(Value::Array(blocks)) => blocks,
        _ => Vec::new(),
    };
    let structured = result
        .get_mut("structuredContent")
        .map(Value::take)
        .filter(|v| !v.is_null());
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let mut message = all_text(&content).unwrap_or_default();
        if message.trim().is_empty() {
            message = match &structured {
                Some(value) => value.to_string(),
                None => "the tool reported an error without a message".into(),
            };
        }
        let mut error = ToolError::new(MCP_TOOL_ERROR, message);
        if let Some(details) = structured {
            error = error.with_details(details);
        }
        return Err(error);
    }
    let model = model_output(&content, structured.as_ref());
    let value = match structured {
        Some(value) => value,
        None => match content.as_slice() {
            [block] if block.get("type").and_then(Value::as_str) == Some("text") => {
                block.get("text").cloned().unwrap_or(Value::Null)
            }
            _ => Value::Array(content),
        },
    };
    Ok(ToolOutput {
        value,
        model,
        artifacts: Vec::new(),
    })
}

/// The text of `blocks` when every one is text, joined by newlines.
fn all_text(blocks: &[Value]) -> Option<String> {
    let texts: Option<Vec<&str>> = blocks
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get("text").and_then(Value::as_str),
            _ => None,
        })
        .collect();
    texts.map(|t| t.join("\n"))
}

fn model_output(content: &[Value], structured: Option<&Value>) -> ModelOutput {
    if content.is_empty() {
        return match structured {
            Some(value) => ModelOutput::json(value.clone()),
            None => ModelOutput::text(""),
        };
    }
    if let Some(text) = all_text(content) {
        return ModelOutput::text(text);
    }
    ModelOutput::Content {
        value: content.iter().map(part).collect(),
    }
}

fn part(block: &Value) -> ContentPart {
    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    let media = |key: &str, default: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_string()
    };
    match text("type") {
        "text" => ContentPart::Text {
            text: text("text").to_string(),
        },
        "image" => ContentPart::Image {
            data: text("data").to_string(),
            media_type: media("mimeType", "image/png"),
        },
        "audio" => ContentPart::File {
            data: text("data").to_string(),
            media_type: media("mimeType", "application/octet-stream"),
            filename: None,
        },
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let field = |key: &str| resource.get(key).and_then(Value::as_str);
            let uri = field("uri").unwrap_or_default();
            match (field("text"), field("blob")) {
                (Some(body), _) => ContentPart::Text {
                    text: format!("{uri}\n{body}"),
                },
                (None, Some(blob)) => ContentPart::File {
                    data: blob.to_string(),
                    media_type: field("mimeType")
                        .unwrap_or("application/octet-stream")
                        .to_string(),
                    filename: uri
                        .rsplit('/')
                        .next()
                        .filter(|n| !n.is_empty())
                        .map(String::from),
                },
                (None, None) => ContentPart::Text {
                    text: resource.to_string(),
                },
            }
        }
        "resource_link" => {
            let mut line = format!("Resource: {} <{}>", text("name"), text("uri"));
            if let Some(description) = block.get("description").and_then(Value::as_str) {
                line.push_str(" — ");
                line.push_str(description);
            }
            ContentPart::Text { text: line }
        }
        _ => ContentPart::Text {
            text: json!(block).to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_content_is_the_value_and_the_text_what_the_model_sees() {
        let out = tool_result(json!({
            "content": [{"type": "text", "text": "{\"t\":21}"}],
            "structuredContent": {"t": 21}
        }))
        .unwrap();
        assert_eq!(out.value, json!({"t": 21}));
        assert_eq!(out.model, ModelOutput::text("{\"t\":21}"));
        let only = tool_result(json!({"content": [], "structuredContent": {"t": 1}})).unwrap();
        assert_eq!(only.model, ModelOutput::json(json!({"t": 1})));
    }

    #[test]
    fn images_resources_and_links_become_parts() {
        let out = tool_result(json!({"content": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAE=", "mimeType": "application/x-b"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "see"},
            {"type": "hologram", "x": 1}
        ]}))
        .unwrap();
        let ModelOutput::Content { value } = &out.model else {
            panic!("{:?}", out.model)
        };
        assert_eq!(value.len(), 7);
        assert_eq!(
            value[1],
            ContentPart::Image {
                data: "iVBO".into(),
                media_type: "image/png".into()
            }
        );
        assert!(
            matches!(&value[2], ContentPart::File { media_type, .. } if media_type == "audio/wav")
        );
        assert_eq!(
            value[3],
            ContentPart::Text {
                text: "file:///a.txt\nhello".into()
            }
        );
        assert!(matches!(&value[4], ContentPart::File { filename: Some(f), .. } if f == "b.bin"));
        assert_eq!(
            value[5],
            ContentPart::Text {
                text: "Resource: c <file:///c> — see".into()
            }
        );
        assert!(matches!(&value[6], ContentPart::Text { text } if text.contains("hologram")));
        assert!(out.value.is_array());
    }

    #[test]
    fn an_error_without_text_still_says_something() {
        let err = tool_result(json!({"content": [], "isError": true})).unwrap_err();
        assert_eq!(
            err.message(),
            "the tool reported an error without a message"
        );
        let err =
            tool_result(json!({"isError": true, "structuredContent": {"why": "x"}})).unwrap_err();
        assert_eq!(err.message(), "{\"why\":\"x\"}");
        assert_eq!(err.details(), Some(&json!({"why": "x"})));
    }
}
