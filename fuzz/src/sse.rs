//! The SSE layer, through the path every provider reads a streamed response by:
//! [`decode_sse`] over the body's chunks.

use std::convert::Infallible;

use futures::StreamExt;
use toolsmith_core::{ModelError, ModelErrorKind, ModelPart};
use toolsmith_providers::decode::{StreamDecoder, decode_sse};

/// A decoder that keeps every event's data as a text delta, and ends with an error (`end`) so
/// that a transport error (invalid UTF-8 here) is reported rather than closed over.
struct Record;

impl StreamDecoder for Record {
    fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        out.push(ModelPart::TextDelta {
            id: "e".into(),
            delta: data.to_owned(),
        });
        Ok(())
    }

    fn finish(&mut self, _: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        Err(ModelError::new(ModelErrorKind::Other, "end"))
    }
}

/// What a body decoded to: the events' data, then how it ended (`Err("end")` when cleanly).
type Outcome = (Vec<String>, Result<(), String>);

fn decode(chunks: Vec<Vec<u8>>) -> Outcome {
    let bytes = futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>));
    let parts: Vec<_> =
        futures::executor::block_on(decode_sse(bytes, None, Record, Vec::new()).collect());
    let mut parts = parts.into_iter();
    assert!(matches!(
        parts.next(),
        Some(Ok(ModelPart::StreamStart { .. }))
    ));
    let mut data = Vec::new();
    let mut end = None;
    for part in parts {
        assert!(end.is_none(), "a part after the stream's error");
        match part {
            Ok(ModelPart::TextDelta { delta, .. }) => data.push(delta),
            Ok(other) => panic!("a part the decoder did not make: {other:?}"),
            Err(error) if error.message == "end" => end = Some(Ok(())),
            Err(error) => {
                assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{error:?}");
                end = Some(Err(error.message));
            }
        }
    }
    (
        data,
        end.expect("the stream ends with the decoder's finish or an error"),
    )
}

/// The events' data by the WHATWG rules and the parser's documented choices (`sse/parser.rs`),
/// over the whole body at once: one leading BOM skipped; lines ended by CRLF, LF or CR (a last
/// line without one is not read); `data` lines joined by `\n` and dispatched by a blank line;
/// every other line ignored. Invalid UTF-8 in a `data` value is an error when the value is
/// read: a lone line's when its event is dispatched, the lines of a joined one as they join.
fn reference(body: &[u8]) -> Outcome {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut data = Vec::new();
    let mut pending: Option<Vec<u8>> = None;
    let mut joined = false;
    let mut pos = 0;
    let utf8 = |bytes: &[u8]| {
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| format!("The event stream is not valid UTF-8: {e}"))
    };
    while let Some(at) = body[pos..].iter().position(|&b| b == b'\n' || b == b'\r') {
        let end = pos + at;
        let line = &body[pos..end];
        pos = if body[end] == b'\r' && body.get(end + 1) == Some(&b'\n') {
            end + 2
        } else {
            end + 1
        };
        if line.is_empty() {
            if let Some(value) = pending.take() {
                match utf8(&value) {
                    Ok(text) => data.push(text),
                    Err(error) => return (data, Err(error)),
                }
            }
            joined = false;
            continue;
        }
        let value = match line.strip_prefix(b"data") {
            Some([]) => &[][..],
            Some([b':', b' ', value @ ..] | [b':', value @ ..]) => value,
            _ => continue,
        };
        match &mut pending {
            None => pending = Some(value.to_vec()),
            Some(first) => {
                if !joined {
                    if let Err(error) = utf8(first) {
                        return (data, Err(error));
                    }
                    joined = true;
                }
                if let Err(error) = utf8(value) {
                    return (data, Err(error));
                }
                first.push(b'\n');
                first.extend_from_slice(value);
            }
        }
    }
    (data, Ok(()))
}

/// The first byte picks the chunk sizes, the rest is the body. The body decoded in one chunk,
/// in chunks of those sizes, and (when short) a byte at a time must give the same events and
/// the same ending, and those of the reference.
pub fn sse(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let expected = reference(body);
    assert_eq!(decode(vec![body.to_vec()]), expected, "one chunk");
    let mut rng = fastrand::Rng::with_seed(u64::from(seed));
    let max = usize::from(seed % 32) + 1;
    let mut chunks = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let n = rng.usize(1..=max).min(rest.len());
        chunks.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    assert_eq!(decode(chunks), expected, "chunks of 1 to {max} bytes");
    if body.len() <= 2048 {
        let bytes = body.iter().map(|&b| vec![b]).collect();
        assert_eq!(decode(bytes), expected, "a byte at a time");
    }
}
