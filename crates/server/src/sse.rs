//! A run streamed as server-sent events, as the agent harness streams it: `data: <json>\n\n`
//! per run part (the AI SDK's `fullStream` part shapes), and while async work is pending the
//! comment `: waiting for async work pending=<n>\n\n`.

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use tokio::sync::mpsc;

use crate::runs::Outgoing;

/// The bytes of one outgoing item.
pub(crate) fn encode(item: &Outgoing) -> Vec<u8> {
    match item {
        Outgoing::Part(part) => data(part),
        Outgoing::Waiting(pending) => {
            format!(": waiting for async work pending={pending}\n\n").into_bytes()
        }
    }
}

/// `data: <json>\n\n`, the JSON written straight into the event's bytes (`format!` through
/// `Display` would pass every piece through the formatter, and copy the whole once more). A
/// value that cannot be serialised (a map with keys that are not strings: none of the
/// service's) becomes an `error` event.
pub(crate) fn data(value: &impl serde::Serialize) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"data: ");
    if let Err(e) = serde_json::to_writer(&mut out, value) {
        out.truncate(6);
        let error = serde_json::json!({"type": "error", "error": {"message": e.to_string()}});
        let _ = serde_json::to_writer(&mut out, &error);
    }
    out.extend_from_slice(b"\n\n");
    out
}

/// The response streaming what `items` receives, until its sender is dropped.
pub(crate) fn response(items: mpsc::Receiver<Outgoing>) -> Response {
    response_with(items, encode, b"")
}

/// The response streaming what `items` receives, each as `encode` writes it, then `tail`.
pub(crate) fn response_with(
    items: mpsc::Receiver<Outgoing>,
    encode: impl Fn(&Outgoing) -> Vec<u8> + Send + Sync + 'static,
    tail: &'static [u8],
) -> Response {
    let encode = std::sync::Arc::new(encode);
    let body = futures::stream::unfold(Some(items), move |items| {
        let encode = encode.clone();
        async move {
            let mut items = items?;
            match items.recv().await {
                Some(item) => Some((
                    Ok::<_, std::convert::Infallible>(encode(&item)),
                    Some(items),
                )),
                None if tail.is_empty() => None,
                None => Some((Ok(tail.to_vec()), None)),
            }
        }
    });
    stream_response(Body::from_stream(body))
}

/// An event stream that ends at once (a duplicate `eventId`).
pub(crate) fn empty() -> Response {
    stream_response(Body::empty())
}

/// A response streaming `body` as server-sent events.
pub(crate) fn stream_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies that buffer (nginx) would hold the stream back.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolsmith_core::RunPart;

    #[test]
    fn parts_and_heartbeats_have_the_harness_shape() {
        let part = Outgoing::Part(Box::new(RunPart::TextDelta {
            id: "t0".into(),
            text: "Hi".into(),
        }));
        assert_eq!(
            String::from_utf8(encode(&part)).unwrap(),
            "data: {\"type\":\"text-delta\",\"id\":\"t0\",\"text\":\"Hi\"}\n\n"
        );
        assert_eq!(
            String::from_utf8(encode(&Outgoing::Waiting(2))).unwrap(),
            ": waiting for async work pending=2\n\n"
        );
    }
}
