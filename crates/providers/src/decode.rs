//! The one shape every wire's stream decoder has, and the loop that drives it over SSE.

use std::collections::VecDeque;

use futures::StreamExt;
use toolsmith_core::{ModelError, ModelPart, ModelStream};

use crate::sse::SseStream;

/// Turns one response's event payloads (the `data:` of each server-sent event) into
/// [`ModelPart`]s. Synchronous and allocation-light, so it can be driven by [`decode_events`]
/// over a live response, by tests over a fixture, and by benchmarks without a runtime.
///
/// ```
/// use toolsmith_core::{ModelError, ModelPart};
/// use toolsmith_providers::decode::StreamDecoder;
///
/// /// Each payload is a text delta; `END` finishes.
/// #[derive(Default)]
/// struct Lines(bool);
///
/// impl StreamDecoder for Lines {
///     fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
///         match data {
///             "END" => self.0 = true,
///             text => out.push(ModelPart::TextDelta { id: "t".into(), delta: text.into() }),
///         }
///         Ok(())
///     }
///
///     fn is_done(&self) -> bool {
///         self.0
///     }
/// }
///
/// let mut parts = Vec::new();
/// let mut decoder = Lines::default();
/// for data in ["a", "b", "END"] {
///     decoder.push(data, &mut parts).unwrap();
/// }
/// assert!(decoder.is_done());
/// assert_eq!(parts.len(), 2);
/// ```
pub trait StreamDecoder: Send + 'static {
    /// Decodes one event payload, appending the parts it completes to `out`.
    ///
    /// # Errors
    ///
    /// An `InvalidResponse` (or the provider's in-stream error) when the payload cannot be
    /// decoded; the stream ends there.
    fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError>;

    /// The body ended (or broke): closes what is open and emits the finish part, or reports the
    /// truncation. The default accepts any ending.
    ///
    /// # Errors
    ///
    /// An `InvalidResponse` naming what was left incomplete.
    fn finish(&mut self, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        let _ = out;
        Ok(())
    }

    /// Whether the response is complete: no more events need to be read.
    fn is_done(&self) -> bool {
        false
    }
}

/// Drives `decoder` over `events`: a `StreamStart` with `warnings` first, then the decoded
/// parts; the stream ends after the decoder is done or after the first error.
///
/// When the transport fails mid-body, the decoder's [`finish`](StreamDecoder::finish) decides:
/// if everything that matters had arrived (a finish reason, say, with only the usage chunk
/// lost) the stream ends cleanly; otherwise the transport error is reported.
pub fn decode_events<D: StreamDecoder>(
    events: SseStream,
    decoder: D,
    warnings: Vec<String>,
) -> ModelStream {
    struct State<D> {
        events: SseStream,
        decoder: D,
        pending: VecDeque<Result<ModelPart, ModelError>>,
        /// The decoder's output for one event, reused so an event costs no allocation here.
        parts: Vec<ModelPart>,
        finished: bool,
    }
    let mut pending = VecDeque::new();
    pending.push_back(Ok(ModelPart::StreamStart { warnings }));
    let state = State {
        events,
        decoder,
        pending,
        parts: Vec::new(),
        finished: false,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.pending.pop_front() {
                return Some((item, state));
            }
            if state.finished {
                return None;
            }
            let parts = &mut state.parts;
            let result = match state.events.next().await {
                Some(Ok(event)) => state.decoder.push(&event.data, parts),
                Some(Err(error)) => state.decoder.finish(parts).map_err(|_| error),
                None => {
                    state.finished = true;
                    state.decoder.finish(parts)
                }
            };
            state.pending.extend(parts.drain(..).map(Ok));
            match result {
                Err(error) => {
                    state.pending.push_back(Err(error));
                    state.finished = true;
                }
                Ok(()) if state.decoder.is_done() => state.finished = true,
                Ok(()) => {}
            }
        }
    }))
}

/// Reads the whole body of a non-streamed response to `post`, within `timeout`.
///
/// # Errors
///
/// A `Timeout` when the body takes longer, a `Network` error (without the key) when the
/// connection fails.
pub async fn read_body(
    post: &crate::http::JsonPost,
    response: reqwest::Response,
    timeout: std::time::Duration,
) -> Result<String, ModelError> {
    match tokio::time::timeout(timeout, response.text()).await {
        Err(_) => Err(ModelError::new(
            toolsmith_core::ModelErrorKind::Timeout,
            format!("The response body did not arrive within {timeout:?}."),
        )),
        Ok(Err(error)) => Err(crate::errors::transport_error(
            &post.provider,
            &error,
            post.secret.as_deref(),
        )),
        Ok(Ok(text)) => Ok(text),
    }
}

/// A finished response's parts as a [`ModelStream`]: `StreamStart` with `warnings`, then
/// `parts`, then `error` if the body could not be fully decoded.
pub fn parts_stream(
    warnings: Vec<String>,
    parts: Vec<ModelPart>,
    error: Option<ModelError>,
) -> ModelStream {
    let items = std::iter::once(Ok(ModelPart::StreamStart { warnings }))
        .chain(parts.into_iter().map(Ok))
        .chain(error.map(Err));
    Box::pin(futures::stream::iter(items.collect::<Vec<_>>()))
}
