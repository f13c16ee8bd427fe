//! One model call, the same for every wire (internal: the models make it through their
//! [`ModelSettings`](crate::ModelSettings)): log the request's warnings, POST the JSON body (with
//! retries), then decode either the event stream or the whole JSON body into parts.

use reqwest::header::{ACCEPT, HeaderValue};
use serde_json::Value;
use toolsmith_core::{ModelError, ModelErrorKind, ModelPart, ModelStream};

use crate::decode::{StreamDecoder, decode_sse};
use crate::errors::{excerpt, transport_error};
use crate::http::{HttpSettings, JsonPost};

/// Decodes a whole (non-streamed) response body into the parts a stream of it would give,
/// `StreamStart` first and `Finish` last.
pub type WholeDecoder = fn(&Value) -> Result<Vec<ModelPart>, ModelError>;

/// How a wire's responses are read.
#[derive(Debug)]
pub struct Decoding<D> {
    /// `true`: server-sent events through `stream`; `false`: one JSON body through `whole`.
    pub streaming: bool,
    /// The decoder for this response's events.
    pub stream: D,
    /// The decoder for a whole body.
    pub whole: WholeDecoder,
}

/// Sends `post` and decodes the answer. `warnings` (what the request builder ignored or
/// dropped) are logged once with the provider and model, and lead the stream in its
/// `StreamStart` part.
///
/// # Errors
///
/// The POST's error (status, network, timeout: see [`JsonPost::send`]); for a whole body, a
/// `Timeout` or `Network` error while reading it, an `InvalidResponse` when it is not JSON, or
/// the whole decoder's error.
pub async fn call<D: StreamDecoder>(
    post: JsonPost,
    client: &reqwest::Client,
    http: &HttpSettings,
    model: &str,
    warnings: Vec<String>,
    decoding: Decoding<D>,
) -> Result<ModelStream, ModelError> {
    for warning in &warnings {
        tracing::warn!(provider = %post.provider, model, "{warning}");
    }
    let accept = if decoding.streaming {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut post = post;
    // A constant value: no parsing or copy, as `JsonPost::header` does for any value.
    post.headers
        .insert(ACCEPT, HeaderValue::from_static(accept));
    let response = post.send(client, http).await?;
    if decoding.streaming {
        return Ok(decode_sse(
            response.bytes_stream(),
            Some(http.idle_timeout),
            decoding.stream,
            warnings,
        ));
    }
    let bytes = match tokio::time::timeout(http.response_timeout, response.bytes()).await {
        Err(_) => {
            return Err(ModelError::new(
                ModelErrorKind::Timeout,
                format!(
                    "{} did not send its response body within {:?}",
                    post.provider, http.response_timeout
                ),
            ));
        }
        Ok(Err(error)) => {
            return Err(transport_error(
                &post.provider,
                &error,
                post.secret.as_deref(),
            ));
        }
        Ok(Ok(bytes)) => bytes,
    };
    let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!(
                "The response body from {} is not valid JSON ({e}): {}",
                post.provider,
                excerpt(&String::from_utf8_lossy(&bytes), 200)
            ),
        )
    })?;
    let mut parts = (decoding.whole)(&body)?;
    match parts.first_mut() {
        Some(ModelPart::StreamStart { warnings: slot }) => *slot = warnings,
        _ => parts.insert(0, ModelPart::StreamStart { warnings }),
    }
    Ok(Box::pin(futures::stream::iter(parts.into_iter().map(Ok))))
}
