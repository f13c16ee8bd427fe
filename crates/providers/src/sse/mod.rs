//! Server-sent events over any byte stream, with an idle timeout (internal: the crate exports
//! only [`SseEvent`] and [`SseStream`], the types of [`crate::decode::decode_events`]).
//!
//! The contract: [`Events`] reads a body's chunks, however they split lines, CRLF pairs and
//! UTF-8 sequences, and yields its events by the WHATWG rules (`parser.rs` lists them), in time
//! linear in the bytes; a read error ends it with a `Network` error, invalid UTF-8 with an
//! `InvalidResponse`, a silence longer than the idle timeout with a `Timeout`. The providers
//! read each event in place through [`crate::decode::decode_sse`]; its [`Stream`] impl copies
//! each event out as an [`SseEvent`].
//!
//! The issue that specified the wires named `eventsource-stream` for this layer; it is not used
//! at run time. Its parser is quadratic in the chunk size: after every line it re-allocates and
//! copies the rest of its buffer (`String::split_off`), so a chunk holding k lines costs in
//! proportion to k². Measured on the Chat Completions linearity stream as one chunk, 10 000
//! deltas took 367 ms to parse and 20 000 took 1 431 ms (3.9×), and the fixtures parsed at
//! about 170 MiB/s even one chunk per event, half the time of the whole decoding path (see
//! `docs/benchmarks.md`, "Stream decoding"). A server or proxy that writes many events at once
//! delivers exactly such chunks. `sse/parser.rs` is our own incremental parser instead: linear
//! in the bytes however they are chunked (an offset into the buffer, compacted rarely, each
//! byte scanned once). A property test (`oracle_tests.rs`) checks it against
//! `eventsource-stream` itself, kept as a dev-dependency for that: random event streams cut at
//! random chunk boundaries must give exactly the events `eventsource-stream` gives. Where the
//! two differ, we follow the standard: a `\r` that is the very last byte of the body ends its
//! line (`eventsource-stream` waits for a `\n` that never comes); invalid UTF-8 is reported
//! when its line is read (it stalls until the end of the body); and a leading byte order mark
//! is skipped (0.2.3 panics on it).

mod parser;

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::{Stream, StreamExt};
use toolsmith_core::{ModelError, ModelErrorKind};

pub(crate) use parser::Parser;

/// One server-sent event: what [`decode_events`](crate::decode::decode_events) hands each
/// decoder (its `data`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name (`message`, the SSE default, when the server sent none).
    pub event: String,
    /// The `data:` payload, multi-line data joined by `\n`.
    pub data: String,
}

/// A stream of events, from any source, for [`decode_events`](crate::decode::decode_events): a
/// transport error ends it (the decoder then decides whether what arrived was complete).
pub type SseStream = Pin<Box<dyn Stream<Item = Result<SseEvent, ModelError>> + Send>>;

/// The events of a body's chunks: read in place through [`poll_with`](Events::poll_with), or
/// copied out as [`SseEvent`]s by its [`Stream`] impl. A hand-written `poll_next` rather than
/// `futures::stream::unfold`, which moves its whole state (the parser included) in and out of a
/// new future for every event.
///
/// The idle timeout (when given) runs from the first read that has to wait for the next event
/// until that event is complete, as a reader waiting on the stream sees it; events already
/// buffered, or bytes already there, start no timer. The stream ends after an error.
pub(crate) struct Events<S> {
    bytes: Pin<Box<S>>,
    parser: Parser,
    idle_timeout: Option<Duration>,
    /// The timer for the event being waited for: started at the first read that has to wait,
    /// cleared when the event is returned.
    idle: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The body ended: nothing more is read.
    ended: bool,
    /// An error was returned: the stream is over.
    failed: bool,
}

impl<S> Events<S> {
    /// The events of `bytes`, a silence longer than `idle_timeout` (when given) ending them.
    pub(crate) fn new(bytes: S, idle_timeout: Option<Duration>) -> Self {
        Events {
            bytes: Box::pin(bytes),
            parser: Parser::new(),
            idle_timeout,
            idle: None,
            ended: false,
            failed: false,
        }
    }
}

impl<S, B, E> Events<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Display,
{
    /// Polls for the next event, read from the parser by `take` (which returns `None` when the
    /// parser needs more bytes). Reading, the idle timer and the end of the stream are the same
    /// whether the event is copied out ([`SseEvent`]) or decoded in place
    /// ([`crate::decode::decode_sse`]).
    pub(crate) fn poll_with<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut take: impl FnMut(&mut Parser) -> Option<Result<T, ModelError>>,
    ) -> Poll<Option<Result<T, ModelError>>> {
        loop {
            if self.failed {
                return Poll::Ready(None);
            }
            if let Some(event) = take(&mut self.parser) {
                self.failed = event.is_err();
                self.idle = None;
                return Poll::Ready(Some(event));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            let next = match self.bytes.poll_next_unpin(cx) {
                Poll::Ready(next) => next,
                Poll::Pending => {
                    let Some(limit) = self.idle_timeout else {
                        return Poll::Pending;
                    };
                    let idle = self
                        .idle
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                    ready!(idle.as_mut().poll(cx));
                    self.failed = true;
                    return Poll::Ready(Some(Err(ModelError::new(
                        ModelErrorKind::Timeout,
                        format!("The stream was idle for more than {limit:?}."),
                    ))));
                }
            };
            match next {
                Some(Ok(chunk)) => self.parser.push(chunk.as_ref()),
                Some(Err(error)) => {
                    self.failed = true;
                    return Poll::Ready(Some(Err(ModelError::new(
                        ModelErrorKind::Network,
                        format!("The connection failed mid-stream: {error}"),
                    ))));
                }
                // An event not ended by a blank line is dropped (the standard's rule).
                None => self.ended = true,
            }
        }
    }
}

impl<S, B, E> Stream for Events<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
    E: Display,
{
    type Item = Result<SseEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.poll_with(cx, Parser::next_event)
    }
}

#[cfg(test)]
mod oracle_tests;
#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_times_out_and_ends() {
        let bytes = futures::stream::iter([Ok::<_, Infallible>(b"data: a\n\nda".to_vec())])
            .chain(futures::stream::pending());
        let mut events = Events::new(bytes, Some(Duration::from_secs(5)));
        assert_eq!(events.next().await.unwrap().unwrap().data, "a");
        let error = events.next().await.unwrap().unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::Timeout);
        assert!(events.next().await.is_none());
    }

    #[tokio::test]
    async fn multi_line_data_and_event_names() {
        let body = "event: delta\ndata: one\ndata: two\n\n: comment\n\ndata:three\r\n\r\n";
        let bytes = futures::stream::iter(body.bytes().map(|b| Ok::<_, Infallible>(vec![b])));
        let events: Vec<_> = Events::new(bytes, None).collect().await;
        let events: Vec<SseEvent> = events.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            events,
            [
                SseEvent {
                    event: "delta".into(),
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: "message".into(),
                    data: "three".into()
                },
            ]
        );
    }
}
