//! The one shape every wire's stream decoder has, and the loop that drives it over SSE.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::{Stream, StreamExt};
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
    Box::pin(Decode {
        events,
        decoder: Box::new(decoder),
        parts: vec![ModelPart::StreamStart { warnings }],
        error: None,
        finished: false,
    })
}

/// The stream [`decode_events`] returns. A hand-written `poll_next` rather than
/// `futures::stream::unfold`: unfold moves its whole state (the decoder included) into a new
/// future and back out for every item, and a `ModelPart` is over 200 bytes, so those moves and
/// a queue in between were a large share of the decoding time.
struct Decode<D> {
    events: SseStream,
    /// Boxed so the stream is `Unpin` whatever the decoder.
    decoder: Box<D>,
    /// The parts of the last event, in reverse order: the next one is popped off the end, a
    /// single move.
    parts: Vec<ModelPart>,
    /// The error that ends the stream, once `parts` is empty.
    error: Option<ModelError>,
    /// Nothing more is read from `events`.
    finished: bool,
}

impl<D: StreamDecoder> Stream for Decode<D> {
    type Item = Result<ModelPart, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(part) = this.parts.pop() {
                return Poll::Ready(Some(Ok(part)));
            }
            if let Some(error) = this.error.take() {
                return Poll::Ready(Some(Err(error)));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            let parts = &mut this.parts;
            let result = match ready!(this.events.poll_next_unpin(cx)) {
                Some(Ok(event)) => this.decoder.push(&event.data, parts),
                Some(Err(error)) => this.decoder.finish(parts).map_err(|_| error),
                None => {
                    this.finished = true;
                    this.decoder.finish(parts)
                }
            };
            parts.reverse();
            match result {
                Err(error) => {
                    this.error = Some(error);
                    this.finished = true;
                }
                Ok(()) if this.decoder.is_done() => this.finished = true,
                Ok(()) => {}
            }
        }
    }
}
