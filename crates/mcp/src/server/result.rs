//! A call's outcome as an MCP `CallToolResult`.
//!
//! - **Success**: what the model would see ([`ModelOutput`]) becomes the content — text as a
//!   text block, JSON as its serialised text, content parts as text, image, audio (a file whose
//!   media type is `audio/*`) and embedded-resource blocks (any other file: a `blob` under
//!   the URI `toolsmith:file/<name>`). `structuredContent` is the tool's value when it is a
//!   JSON object; a tool that declares an output schema must return an object (MCP requires
//!   structured content that matches it), else the call fails with `TOOL_OUTPUT_INVALID`.
//!   Output the model would see as an error (error text or JSON, a denial) is an error result.
//!   Artifacts, which the model never sees, are not sent.
//! - **Error**: `isError: true`, one text block `<CODE>: <message>`, and `structuredContent`
//!   `{"code", "message", "details"?}` unless the tool declares an output schema (whose
//!   structured content describes successes only).

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};
use toolsmith_core::schema::json_type;
use toolsmith_core::{ContentPart, ModelOutput, ToolError, ToolOutput, ToolSpec};

use super::TOOL_OUTPUT_INVALID;

/// The result of a call of the tool `spec` that ended with `outcome`.
pub(crate) fn call_result(
    spec: &ToolSpec,
    outcome: Result<ToolOutput, ToolError>,
) -> CallToolResult {
    match outcome {
        Ok(output) => success(spec, output),
        Err(error) => failure(spec, &error),
    }
}

/// An error result: text `<CODE>: <message>`, and the error as structured content when the
/// tool declares no output schema.
pub(crate) fn failure(spec: &ToolSpec, error: &ToolError) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "{}: {}",
        error.code(),
        error.message()
    ))]);
    if spec.output_schema().is_none() {
        let mut structured = Map::new();
        structured.insert("code".into(), error.code().into());
        structured.insert("message".into(), error.message().into());
        if let Some(details) = error.details() {
            structured.insert("details".into(), details.clone());
        }
        result.structured_content = Some(Value::Object(structured));
    }
    result
}

fn success(spec: &ToolSpec, output: ToolOutput) -> CallToolResult {
    if output.model.is_error() {
        let mut result = CallToolResult::error(content(output.model));
        if spec.output_schema().is_none() && output.value.is_object() {
            result.structured_content = Some(output.value);
        }
        return result;
    }
    if spec.output_schema().is_some() && !output.value.is_object() {
        let kind = json_type(&output.value);
        return failure(
            spec,
            &ToolError::new(
                TOOL_OUTPUT_INVALID,
                format!(
                    "the tool \"{}\" declares an output schema but returned {kind}, not an object",
                    spec.name()
                ),
            ),
        );
    }
    let mut result = CallToolResult::success(content(output.model));
    if output.value.is_object() {
        result.structured_content = Some(output.value);
    }
    result
}

/// What the model would see, as content blocks.
fn content(model: ModelOutput) -> Vec<ContentBlock> {
    match model {
        ModelOutput::Text { value } | ModelOutput::ErrorText { value } => {
            vec![ContentBlock::text(value)]
        }
        ModelOutput::Json { value } | ModelOutput::ErrorJson { value } => {
            vec![ContentBlock::text(value.to_string())]
        }
        ModelOutput::ExecutionDenied { reason } => vec![ContentBlock::text(
            reason.unwrap_or_else(|| "The call was denied.".to_string()),
        )],
        ModelOutput::Content { value } => value.into_iter().enumerate().map(part).collect(),
    }
}

/// The `index`th content part as a block.
fn part((index, part): (usize, ContentPart)) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::text(text),
        ContentPart::Image { data, media_type } => ContentBlock::image(data, media_type),
        ContentPart::File {
            data, media_type, ..
        } if media_type.starts_with("audio/") => ContentBlock::audio(data, media_type),
        ContentPart::File {
            data,
            media_type,
            filename,
        } => {
            let name = filename.unwrap_or_else(|| format!("file-{}", index + 1));
            let uri = format!("toolsmith:file/{}", percent_encode(&name));
            ContentBlock::resource(ResourceContents::blob(data, uri).with_mime_type(media_type))
        }
    }
}

/// `text` with every byte outside RFC 3986's unreserved characters percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plain() -> ToolSpec {
        ToolSpec::new("t", json!({"type": "object"}))
    }

    fn typed() -> ToolSpec {
        plain().with_output_schema(json!({"type": "object"}))
    }

    fn wire(result: CallToolResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    #[test]
    fn text_and_json_with_the_value_as_structured_content() {
        let text = wire(call_result(&plain(), Ok(ToolOutput::text("hi"))));
        assert_eq!(text["content"], json!([{"type": "text", "text": "hi"}]));
        assert_eq!(text["isError"], false);
        assert!(
            text.get("structuredContent").is_none(),
            "a string is not an object"
        );
        let json = wire(call_result(&typed(), Ok(ToolOutput::json(json!({"n": 1})))));
        assert_eq!(
            json["content"],
            json!([{"type": "text", "text": "{\"n\":1}"}])
        );
        assert_eq!(json["structuredContent"], json!({"n": 1}));
        let array = wire(call_result(&typed(), Ok(ToolOutput::json(json!([1])))));
        assert_eq!(array["isError"], true);
        assert_eq!(
            array["content"][0]["text"],
            "TOOL_OUTPUT_INVALID: the tool \"t\" declares an output schema but returned an \
             array, not an object"
        );
        assert!(array.get("structuredContent").is_none());
    }

    #[test]
    fn parts_become_blocks() {
        let output = ToolOutput::text("x").with_model_output(ModelOutput::Content {
            value: vec![
                ContentPart::Text {
                    text: "look".into(),
                },
                ContentPart::Image {
                    data: "iVBO".into(),
                    media_type: "image/png".into(),
                },
                ContentPart::File {
                    data: "UklG".into(),
                    media_type: "audio/wav".into(),
                    filename: None,
                },
                ContentPart::File {
                    data: "JVBE".into(),
                    media_type: "application/pdf".into(),
                    filename: Some("my report.pdf".into()),
                },
                ContentPart::File {
                    data: "AA==".into(),
                    media_type: "application/octet-stream".into(),
                    filename: None,
                },
            ],
        });
        let result = wire(call_result(&plain(), Ok(output)));
        assert_eq!(
            result["content"],
            json!([
                {"type": "text", "text": "look"},
                {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {
                    "uri": "toolsmith:file/my%20report.pdf",
                    "mimeType": "application/pdf",
                    "blob": "JVBE"
                }},
                {"type": "resource", "resource": {
                    "uri": "toolsmith:file/file-5",
                    "mimeType": "application/octet-stream",
                    "blob": "AA=="
                }},
            ])
        );
    }

    #[test]
    fn errors_carry_their_code_in_band() {
        let error = ToolError::new("TOOL_PATH_ESCAPE", "Path escapes the root")
            .with_details(json!({"path": "../x"}));
        let result = wire(call_result(&plain(), Err(error.clone())));
        assert_eq!(result["isError"], true);
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": "TOOL_PATH_ESCAPE: Path escapes the root"}])
        );
        assert_eq!(
            result["structuredContent"],
            json!({
                "code": "TOOL_PATH_ESCAPE",
                "message": "Path escapes the root",
                "details": {"path": "../x"}
            })
        );
        let typed = wire(call_result(&typed(), Err(error)));
        assert!(typed.get("structuredContent").is_none());
        let denied =
            ToolOutput::text("").with_model_output(ModelOutput::ExecutionDenied { reason: None });
        let denied = wire(call_result(&plain(), Ok(denied)));
        assert_eq!(denied["isError"], true);
    }
}
