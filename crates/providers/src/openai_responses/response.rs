//! Non-streamed Responses bodies → the same [`ModelPart`]s as the stream.

use serde_json::{Value, json};
use toolsmith_core::{ModelError, ModelErrorKind, ModelPart};

use super::error::provider_error;
use super::stream::ResponsesStreamDecoder;

/// Decodes a non-streamed response body (`"stream": false`) into the parts its stream would
/// have produced: `StreamStart` (no warnings) first, then metadata, blocks, calls, results and
/// sources, and `Finish` last.
///
/// The body is replayed through [`ResponsesStreamDecoder`] as the events a stream would carry
/// (`output_item.added`, the text / reasoning / argument events, `output_item.done`, then
/// `response.completed`), so both paths agree exactly. The events are read as values, never
/// printed back to text and parsed again.
///
/// # Errors
///
/// `InvalidResponse` when the body is not a response object; the provider's error when its
/// `status` is `failed` or it carries an `error`.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::openai_responses::decode_response;
///
/// let parts = decode_response(&json!({
///     "id": "resp_1", "model": "gpt-5", "status": "completed",
///     "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1",
///                 "name": "weather", "arguments": "{\"city\":\"Paris\"}"}],
///     "usage": {"input_tokens": 10, "output_tokens": 5}
/// }))
/// .unwrap();
/// assert!(matches!(&parts[0], ModelPart::StreamStart { .. }));
/// assert!(parts.iter().any(|p| matches!(p, ModelPart::ToolCall(c) if c.input == r#"{"city":"Paris"}"#)));
/// ```
pub fn decode_response(body: &Value) -> Result<Vec<ModelPart>, ModelError> {
    if !body.is_object() {
        return Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            "The Responses body is not a JSON object.",
        ));
    }
    if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
        return Err(provider_error(error));
    }
    let status = body
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("completed");
    if status == "failed" {
        return Err(ModelError::new(
            ModelErrorKind::Other,
            "The provider reported that the response failed.",
        ));
    }
    let mut decoder = ResponsesStreamDecoder::new();
    let mut parts = vec![ModelPart::StreamStart {
        warnings: Vec::new(),
    }];
    let mut push =
        |event: Value, parts: &mut Vec<ModelPart>| decoder_push(&mut decoder, event, parts);
    push(
        json!({"type": "response.created", "response": {"id": body.get("id"), "model": body.get("model")}}),
        &mut parts,
    )?;
    let output = body.get("output").and_then(Value::as_array);
    for (index, item) in output.into_iter().flatten().enumerate() {
        let item_type = item.get("type").and_then(Value::as_str).unwrap_or("");
        let id = item.get("id").cloned().unwrap_or(Value::Null);
        let mut added = item.clone();
        // The stream's `added` item is empty: the content arrives as events.
        if let Some(map) = added.as_object_mut() {
            for key in ["content", "summary", "arguments", "input"] {
                map.remove(key);
            }
        }
        push(
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
            &mut parts,
        )?;
        let at = |extra: Value| {
            let mut event = json!({"output_index": index, "item_id": id});
            if let (Some(event), Value::Object(extra)) = (event.as_object_mut(), extra) {
                event.extend(extra);
            }
            event
        };
        match item_type {
            "message" => {
                let content = item.get("content").and_then(Value::as_array);
                for (ci, part) in content.into_iter().flatten().enumerate() {
                    if part.get("type").and_then(Value::as_str) != Some("output_text") {
                        continue;
                    }
                    let text = part.get("text").cloned().unwrap_or(json!(""));
                    push(
                        at(
                            json!({"type": "response.output_text.delta", "content_index": ci, "delta": text}),
                        ),
                        &mut parts,
                    )?;
                    let annotations = part.get("annotations").and_then(Value::as_array);
                    for annotation in annotations.into_iter().flatten() {
                        push(
                            at(
                                json!({"type": "response.output_text.annotation.added", "content_index": ci, "annotation": annotation}),
                            ),
                            &mut parts,
                        )?;
                    }
                }
            }
            "reasoning" => {
                for (key, event_type, index_key) in [
                    (
                        "summary",
                        "response.reasoning_summary_text.delta",
                        "summary_index",
                    ),
                    ("content", "response.reasoning_text.delta", "content_index"),
                ] {
                    let texts = item.get(key).and_then(Value::as_array);
                    for (i, part) in texts.into_iter().flatten().enumerate() {
                        let text = part.get("text").cloned().unwrap_or(json!(""));
                        push(
                            at(json!({"type": event_type, index_key: i, "delta": text})),
                            &mut parts,
                        )?;
                    }
                }
            }
            "function_call" => {
                let arguments = item.get("arguments").cloned().unwrap_or(json!(""));
                push(
                    at(
                        json!({"type": "response.function_call_arguments.done", "arguments": arguments}),
                    ),
                    &mut parts,
                )?;
            }
            "custom_tool_call" => {
                let input = item.get("input").cloned().unwrap_or(json!(""));
                push(
                    at(json!({"type": "response.custom_tool_call_input.done", "input": input})),
                    &mut parts,
                )?;
            }
            _ => {}
        }
        push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
            &mut parts,
        )?;
    }
    let finish = if status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    push(json!({"type": finish, "response": body}), &mut parts)?;
    Ok(parts)
}

fn decoder_push(
    decoder: &mut ResponsesStreamDecoder,
    event: Value,
    parts: &mut Vec<ModelPart>,
) -> Result<(), ModelError> {
    decoder.push_value(&event, parts)
}
