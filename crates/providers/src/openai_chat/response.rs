//! Non-streamed Chat Completions bodies.

use serde_json::Value;
use toolsmith_core::{ModelError, ModelPart};

use super::ChatStreamDecoder;
use crate::decode::StreamDecoder;

/// Decodes a non-streamed `chat.completion` body into the parts a stream of it would give,
/// `StreamStart` first and `Finish` last: the whole completion is one chunk whose `message` the
/// stream decoder reads like a delta, so both paths agree by construction. The body is read
/// once, from the parsed value (never printed back to text); the compatible-server quirks the
/// stream decoder tolerates are tolerated here too (no `usage`, a legacy `function_call`,
/// spaces around the arguments, missing or repeated call ids).
///
/// # Errors
///
/// What the stream decoder reports for the same chunk: an `error` object, or no finish reason.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::openai_chat::decode_response;
///
/// let body = json!({"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
///     "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
///         "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}}]}}],
///     "usage": {"prompt_tokens": 5, "completion_tokens": 3}});
/// let parts = decode_response(&body).unwrap();
/// assert!(parts.iter().any(|p| matches!(p, ModelPart::ToolCall(c) if c.input == r#"{"a":1}"#)));
/// assert!(matches!(parts.last(), Some(ModelPart::Finish { .. })));
/// ```
pub fn decode_response(body: &Value) -> Result<Vec<ModelPart>, ModelError> {
    let mut decoder = ChatStreamDecoder::new();
    let mut parts = vec![ModelPart::StreamStart {
        warnings: Vec::new(),
    }];
    decoder.push_value(body, &mut parts)?;
    decoder.finish(&mut parts)?;
    Ok(parts)
}
