//! Server-sent events over any byte stream, with an idle timeout.
//!
//! The issue that specified the wires named `eventsource-stream` for this layer; it is not used
//! at run time. Its parser is quadratic in the chunk size: after every line it re-allocates and
//! copies the rest of its buffer (`String::split_off`), so a chunk holding k lines costs in
//! proportion to k². Measured on the Chat Completions linearity stream as one chunk, 10 000
//! deltas took 367 ms to parse and 20 000 took 1 431 ms (3.9×), and the fixtures parsed at
//! about 170 MiB/s even one chunk per event, half the time of the whole decoding path (see
//! `docs/benchmarks.md`, "Stream decoding"). A server or proxy that writes many events at once
//! delivers exactly such chunks. [`parser`] is our own incremental parser instead: linear in the
//! bytes however they are chunked (an offset into the buffer, compacted rarely, each byte
//! scanned once). It follows the WHATWG rules (its module documentation lists them), and a
//! property test (`tests/sse_oracle.rs`) checks it against `eventsource-stream` itself, kept as
//! a dev-dependency for that: random event streams cut at random chunk boundaries must give
//! exactly the events `eventsource-stream` gives.

mod parser;

use std::fmt::Display;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::Instant;
use toolsmith_core::{ModelError, ModelErrorKind};

use parser::Parser;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name (`message`, the SSE default, when the server sent none).
    pub event: String,
    /// The `data:` payload, multi-line data joined by `\n`.
    pub data: String,
}

/// A stream of events.
pub type SseStream = Pin<Box<dyn Stream<Item = Result<SseEvent, ModelError>> + Send>>;

/// Decodes the server-sent events in `bytes`, however its chunks split lines and UTF-8
/// sequences. A read error becomes a `Network` error, invalid UTF-8 an `InvalidResponse`, and a
/// silence longer than `idle_timeout` (when given) a `Timeout`; the stream ends after an error.
///
/// The timeout runs from the moment the next event is asked for until it is complete, as a
/// reader waiting on the stream sees it; events already buffered come without reading the
/// clock.
pub fn sse_events<S, B, E>(bytes: S, idle_timeout: Option<Duration>) -> SseStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    struct State<S> {
        bytes: Pin<Box<S>>,
        parser: Parser,
        /// The body ended: nothing more is read.
        ended: bool,
        /// An error was returned: the stream is over.
        failed: bool,
    }
    let state = State {
        bytes: Box::pin(bytes),
        parser: Parser::default(),
        ended: false,
        failed: false,
    };
    Box::pin(futures::stream::unfold(
        state,
        move |mut state| async move {
            // Set when the first read for this event has to wait: the timeout's start.
            let mut deadline = None;
            loop {
                if state.failed {
                    return None;
                }
                if let Some(event) = state.parser.next_event() {
                    state.failed = event.is_err();
                    return Some((event, state));
                }
                if state.ended {
                    return None;
                }
                let next = match idle_timeout {
                    Some(limit) => {
                        let deadline = *deadline.get_or_insert_with(|| Instant::now() + limit);
                        match tokio::time::timeout_at(deadline, state.bytes.next()).await {
                            Ok(next) => next,
                            Err(_) => {
                                state.failed = true;
                                let error = ModelError::new(
                                    ModelErrorKind::Timeout,
                                    format!("The stream was idle for more than {limit:?}."),
                                );
                                return Some((Err(error), state));
                            }
                        }
                    }
                    None => state.bytes.next().await,
                };
                match next {
                    Some(Ok(chunk)) => state.parser.push(chunk.as_ref()),
                    Some(Err(error)) => {
                        state.failed = true;
                        let error = ModelError::new(
                            ModelErrorKind::Network,
                            format!("The connection failed mid-stream: {error}"),
                        );
                        return Some((Err(error), state));
                    }
                    // An event not ended by a blank line is dropped (the standard's rule).
                    None => state.ended = true,
                }
            }
        },
    ))
}

/// The events of a successful response's body.
pub fn response_events(response: reqwest::Response, idle_timeout: Duration) -> SseStream {
    sse_events(response.bytes_stream(), Some(idle_timeout))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_times_out_and_ends() {
        let bytes = futures::stream::iter([Ok::<_, Infallible>(b"data: a\n\nda".to_vec())])
            .chain(futures::stream::pending());
        let mut events = sse_events(bytes, Some(Duration::from_secs(5)));
        assert_eq!(events.next().await.unwrap().unwrap().data, "a");
        let error = events.next().await.unwrap().unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::Timeout);
        assert!(events.next().await.is_none());
    }

    #[tokio::test]
    async fn multi_line_data_and_event_names() {
        let body = "event: delta\ndata: one\ndata: two\n\n: comment\n\ndata:three\r\n\r\n";
        let bytes = futures::stream::iter(body.bytes().map(|b| Ok::<_, Infallible>(vec![b])));
        let events: Vec<_> = sse_events(bytes, None).collect().await;
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
