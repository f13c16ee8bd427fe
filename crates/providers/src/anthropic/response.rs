//! Non-streamed Messages API responses: the JSON body → the same parts as the stream.

use serde::Deserialize;
use serde_json::Value;
use toolsmith_core::{ModelError, ModelErrorKind, ModelPart};

use super::stream::{MessagesStreamDecoder, stream_error};
use super::wire::WireMessage;
use crate::decode::StreamDecoder;

/// Decodes a non-streamed response body into the parts its stream would have yielded: a
/// `StreamStart` (without warnings) first, then `ResponseMetadata`, every content block as
/// start / delta / end parts (tool calls with their whole input as one delta, provider-executed
/// results and their sources), and the `Finish` last.
///
/// # Errors
///
/// The provider's error for an `{"type":"error","error":{…}}` body; `InvalidResponse` for a
/// body that is not a message.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::anthropic::decode_response;
///
/// let parts = decode_response(&json!({
///     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
///     "content": [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1}}],
///     "stop_reason": "tool_use",
///     "usage": {"input_tokens": 10, "output_tokens": 3}
/// }))
/// .unwrap();
/// assert!(matches!(parts.first(), Some(ModelPart::StreamStart { .. })));
/// assert!(parts.iter().any(|p| matches!(p, ModelPart::ToolCall(c) if c.input == r#"{"a":1}"#)));
/// assert!(matches!(parts.last(), Some(ModelPart::Finish { .. })));
/// ```
pub fn decode_response(body: &Value) -> Result<Vec<ModelPart>, ModelError> {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        return Err(stream_error(body.get("error")));
    }
    let is_message = body.get("content").is_some_and(Value::is_array)
        || body.get("type").and_then(Value::as_str) == Some("message");
    if !is_message {
        return Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!(
                "The Anthropic response is not a message: {}",
                crate::errors::excerpt(&body.to_string(), 200)
            ),
        ));
    }
    // Read from the parsed body in place: `from_value` would need a deep copy of it.
    let message = WireMessage::deserialize(body).map_err(|error| {
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("The Anthropic response could not be decoded: {error}"),
        )
    })?;
    let mut parts = vec![ModelPart::StreamStart {
        warnings: Vec::new(),
    }];
    let mut decoder = MessagesStreamDecoder::new();
    decoder.whole_message(message, &mut parts)?;
    decoder.finish(&mut parts)?;
    Ok(parts)
}
