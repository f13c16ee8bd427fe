//! Non-streamed `generateContent` bodies: the same parts a stream of the same response yields.

use serde::Deserialize;
use serde_json::Value;
use toolsmith_core::{ModelError, ModelErrorKind, ModelPart};

use super::stream::GeminiStreamDecoder;
use super::wire::Chunk;
use crate::decode::StreamDecoder;

/// Decodes a whole `generateContent` response body into the parts its stream would have
/// yielded: a `StreamStart` (without warnings) first, then text, reasoning, tool inputs and
/// calls, sources, and the `Finish` last. A body without a `finishReason` is complete all the
/// same (it finishes as `stop`, or `tool-calls` when it calls functions).
///
/// # Errors
///
/// The provider's error for an `{"error": …}` body; `InvalidResponse` for a body that is not a
/// `GenerateContentResponse` object or holds arguments that cannot be placed.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::google::decode_response;
///
/// let body = json!({
///     "candidates": [{
///         "content": {"role": "model", "parts": [
///             {"functionCall": {"name": "weather", "args": {"city": "Paris"}},
///              "thoughtSignature": "c2ln"}
///         ]},
///         "finishReason": "STOP"
///     }],
///     "usageMetadata": {"promptTokenCount": 29, "candidatesTokenCount": 15}
/// });
/// let parts = decode_response(&body).unwrap();
/// let call = parts.iter().find_map(|p| match p {
///     ModelPart::ToolCall(call) => Some(call),
///     _ => None,
/// }).unwrap();
/// assert_eq!(call.input, r#"{"city":"Paris"}"#);
/// assert_eq!(call.provider_metadata.get("google").unwrap()["thoughtSignature"], "c2ln");
/// ```
pub fn decode_response(body: &Value) -> Result<Vec<ModelPart>, ModelError> {
    if !body.is_object() {
        return Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            "The Gemini response is not a JSON object.",
        ));
    }
    let chunk = Chunk::deserialize(body).map_err(|error| {
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("The Gemini response could not be decoded: {error}"),
        )
    })?;
    let mut decoder = GeminiStreamDecoder::for_body();
    let mut parts = vec![ModelPart::StreamStart {
        warnings: Vec::new(),
    }];
    decoder.push_chunk(chunk, &mut parts)?;
    decoder.finish(&mut parts)?;
    Ok(parts)
}
