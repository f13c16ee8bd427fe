//! Server-sent events over any byte stream, with an idle timeout.

use std::fmt::Display;
use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use toolsmith_core::{ModelError, ModelErrorKind};

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
pub fn sse_events<S, B, E>(bytes: S, idle_timeout: Option<Duration>) -> SseStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    let events = bytes.eventsource().map(|item| match item {
        Ok(event) => Ok(SseEvent {
            event: event.event,
            data: event.data,
        }),
        Err(EventStreamError::Utf8(error)) => Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("The event stream is not valid UTF-8: {error}"),
        )),
        Err(EventStreamError::Parser(error)) => Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("The event stream could not be parsed: {error}"),
        )),
        Err(EventStreamError::Transport(error)) => Err(ModelError::new(
            ModelErrorKind::Network,
            format!("The connection failed mid-stream: {error}"),
        )),
    });
    let state = (Box::pin(events), false);
    Box::pin(futures::stream::unfold(
        state,
        move |(mut events, done)| async move {
            if done {
                return None;
            }
            let next = match idle_timeout {
                Some(limit) => match tokio::time::timeout(limit, events.next()).await {
                    Ok(next) => next,
                    Err(_) => Some(Err(ModelError::new(
                        ModelErrorKind::Timeout,
                        format!("The stream was idle for more than {limit:?}."),
                    ))),
                },
                None => events.next().await,
            }?;
            let failed = next.is_err();
            Some((next, (events, failed)))
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
