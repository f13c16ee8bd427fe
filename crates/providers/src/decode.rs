//! The one shape every wire's stream decoder has, and the loop that drives it over SSE.

use std::fmt::Display;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::{Stream, StreamExt};
use toolsmith_core::{ModelError, ModelPart, ModelStream};

use crate::sse::{Events, Parser, SseStream};

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
    Box::pin(Decode::new(events, decoder, warnings))
}

/// [`decode_events`] over a body's bytes, each event decoded where the SSE parser holds it:
/// no copy of its data and no allocation per event (what [`SseStream`]'s owned events cost).
/// This is how every provider reads a streamed response.
///
/// The chunks may split lines, CRLF pairs and UTF-8 sequences anywhere; events follow the
/// WHATWG rules. A read error is a `Network` error, invalid UTF-8 an `InvalidResponse`, and a
/// silence longer than `idle_timeout` (when given, timed from the first read that has to wait
/// for the next event until it is complete) a `Timeout`; each is handled as a transport failure
/// in [`decode_events`].
///
/// ```
/// use futures::StreamExt;
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::decode::decode_sse;
/// use toolsmith_providers::openai_chat::ChatStreamDecoder;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
///             data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
///             data: [DONE]\n\n";
/// let chunks = futures::stream::iter([Ok::<_, std::convert::Infallible>(body.as_bytes())]);
/// let parts: Vec<_> = decode_sse(chunks, None, ChatStreamDecoder::new(), Vec::new())
///     .collect()
///     .await;
/// assert!(parts.iter().any(|p| matches!(p, Ok(ModelPart::TextDelta { delta, .. }) if delta == "Hi")));
/// assert!(matches!(parts.last(), Some(Ok(ModelPart::Finish { .. }))));
/// # });
/// ```
pub fn decode_sse<S, B, E, D>(
    bytes: S,
    idle_timeout: Option<Duration>,
    decoder: D,
    warnings: Vec<String>,
) -> ModelStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
    D: StreamDecoder,
{
    Box::pin(Decode::new(
        Events::new(bytes, idle_timeout),
        decoder,
        warnings,
    ))
}

/// Where [`Decode`] reads event payloads from.
trait Payloads: Unpin + Send + 'static {
    /// Polls for the next event and hands its data to `read`: the outer error is the
    /// transport's (the stream ends after it), `T` what `read` made of the data.
    fn poll_payload<T>(
        &mut self,
        cx: &mut Context<'_>,
        read: impl FnMut(&str) -> T,
    ) -> Poll<Option<Result<T, ModelError>>>;
}

impl Payloads for SseStream {
    fn poll_payload<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut read: impl FnMut(&str) -> T,
    ) -> Poll<Option<Result<T, ModelError>>> {
        self.poll_next_unpin(cx)
            .map(|event| event.map(|event| event.map(|event| read(&event.data))))
    }
}

impl<S, B, E> Payloads for Events<S>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    fn poll_payload<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut read: impl FnMut(&str) -> T,
    ) -> Poll<Option<Result<T, ModelError>>> {
        self.poll_with(cx, |parser: &mut Parser| {
            parser.next_data().map(|data| data.map(&mut read))
        })
    }
}

/// The stream [`decode_events`] and [`decode_sse`] return. A hand-written `poll_next` rather
/// than `futures::stream::unfold`: unfold moves its whole state (the decoder included) into a
/// new future and back out for every item, and a `ModelPart` is over 200 bytes, so those moves
/// and a queue in between were a large share of the decoding time.
struct Decode<P, D> {
    events: P,
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

impl<P, D> Decode<P, D> {
    fn new(events: P, decoder: D, warnings: Vec<String>) -> Self {
        Decode {
            events,
            decoder: Box::new(decoder),
            parts: vec![ModelPart::StreamStart { warnings }],
            error: None,
            finished: false,
        }
    }
}

impl<P: Payloads, D: StreamDecoder> Stream for Decode<P, D> {
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
            let decoder = &mut this.decoder;
            let result = match ready!(
                this.events
                    .poll_payload(cx, |data| decoder.push(data, parts))
            ) {
                Some(Ok(pushed)) => pushed,
                Some(Err(error)) => decoder.finish(parts).map_err(|_| error),
                None => {
                    this.finished = true;
                    decoder.finish(parts)
                }
            };
            parts.reverse();
            match result {
                Err(error) => {
                    this.error = Some(error);
                    this.finished = true;
                }
                Ok(()) if decoder.is_done() => this.finished = true,
                Ok(()) => {}
            }
        }
    }
}
