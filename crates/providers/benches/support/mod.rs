//! What the decode bench (`benches/decode.rs`) and the comparison binary
//! (`examples/decode_throughput.rs`) share: the table of wires, the fixture loading and the
//! decode loops, so both measure exactly the same bytes through exactly the same code.
//!
//! Adding a wire is one entry in [`WIRES`]; nothing else in either target names a decoder.

pub mod synth;

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use toolsmith_core::{ModelError, ModelPart, ModelStream};
use toolsmith_providers::anthropic::MessagesStreamDecoder;
use toolsmith_providers::decode::{StreamDecoder, decode_sse};
use toolsmith_providers::google::GeminiStreamDecoder;
use toolsmith_providers::openai_chat::ChatStreamDecoder;
use toolsmith_providers::openai_responses::ResponsesStreamDecoder;

/// The recorded streams, kept in the crate (`fixtures/`: their origin and licence are in its
/// `README.md` and `MANIFEST.tsv`).
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures");

/// Synthetic broken fixtures (see the fixtures' README): they end in an error by design, so
/// they measure the error path, not decoding.
pub const BROKEN: &[&str] = &[
    "duplicate-message-start",
    "spliced-message-start",
    "parallel-tool-call-wrapper",
];

/// How a `.chunks.txt` line (a bare `data:` payload) is framed as SSE, the way the real API
/// sends it: both sides of the comparison parse the same body.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// An `event: <type>` line before each `data:` (Anthropic, Responses), taken from the
    /// payload's `"type"`.
    pub event_names: bool,
    /// A final `data: [DONE]` (Chat Completions).
    pub done: bool,
}

pub const CHAT: Framing = Framing {
    event_names: false,
    done: true,
};
pub const NAMED_EVENTS: Framing = Framing {
    event_names: true,
    done: false,
};
pub const PLAIN: Framing = Framing {
    event_names: false,
    done: false,
};

/// One wire as the benches see it.
pub struct Wire {
    /// The fixture directory under [`FIXTURES`], also the name in every report.
    pub dir: &'static str,
    /// A fresh decoder for one response. Boxed so one table can hold every wire; the virtual
    /// call per event costs nanoseconds against microseconds of JSON parsing.
    pub decoder: fn() -> Box<dyn StreamDecoder>,
    pub framing: Framing,
    /// A stream of `n` text deltas in this wire's format, for the linearity bench (`None` when
    /// another entry already measures the same decoder).
    pub text_stream: Option<synth::Generator>,
}

/// Every wire's decoder.
pub static WIRES: &[Wire] = &[
    Wire {
        dir: "openai-chat",
        decoder: || Box::new(ChatStreamDecoder::new()),
        framing: CHAT,
        text_stream: Some(synth::chat),
    },
    Wire {
        dir: "google",
        decoder: || Box::new(GeminiStreamDecoder::new()),
        framing: PLAIN,
        text_stream: Some(synth::gemini),
    },
    Wire {
        dir: "anthropic",
        decoder: || Box::new(MessagesStreamDecoder::new()),
        framing: NAMED_EVENTS,
        text_stream: Some(synth::anthropic),
    },
    Wire {
        dir: "openai-responses",
        decoder: || Box::new(ResponsesStreamDecoder::new()),
        framing: NAMED_EVENTS,
        text_stream: Some(synth::responses),
    },
    // LM Studio speaking Responses: the same decoder, measured on its own fixtures.
    Wire {
        dir: "openai-compatible-local",
        decoder: || Box::new(ResponsesStreamDecoder::new()),
        framing: NAMED_EVENTS,
        text_stream: None,
    },
];

/// One recorded response.
pub struct Fixture {
    pub name: String,
    /// The `data:` payloads in order, `[DONE]` included where the wire sends it.
    pub payloads: Vec<String>,
    /// The SSE body, one chunk per event (as a live stream arrives: the model produces events
    /// slower than the network carries them); [`Chunking`] cuts it otherwise.
    pub body: Vec<Bytes>,
}

impl Fixture {
    /// The bytes of the payloads alone (the criterion throughput).
    pub fn payload_bytes(&self) -> u64 {
        self.payloads.iter().map(|p| p.len() as u64).sum()
    }

    /// The bytes of the SSE body (the comparison's throughput).
    pub fn body_bytes(&self) -> u64 {
        self.body.iter().map(|c| c.len() as u64).sum()
    }
}

/// The usable fixtures of `wire`'s directory, sorted by name: every `*.chunks.txt` (framed per
/// [`Framing`]) and `*.sse` (taken as is), minus [`BROKEN`].
pub fn load(wire: &Wire) -> Vec<Fixture> {
    let dir = Path::new(FIXTURES).join(wire.dir);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".chunks.txt") || name.ends_with(".sse"))
        .filter(|name| !BROKEN.iter().any(|b| name.starts_with(b)))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(&name)).unwrap();
            let (payloads, body) = if name.ends_with(".sse") {
                (sse_payloads(&text), text)
            } else {
                let mut payloads: Vec<String> = text
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(str::to_owned)
                    .collect();
                if wire.framing.done {
                    payloads.push("[DONE]".into());
                }
                let body = frame(&payloads, wire.framing);
                (payloads, body)
            };
            Fixture {
                name,
                payloads,
                body: split_events(&body),
            }
        })
        .collect()
}

/// Frames bare payloads as an SSE body.
pub fn frame(payloads: &[String], framing: Framing) -> String {
    let mut body = String::new();
    for payload in payloads {
        if framing.event_names {
            let kind = serde_json::from_str::<serde_json::Value>(payload)
                .ok()
                .and_then(|v| v.get("type")?.as_str().map(str::to_owned));
            if let Some(kind) = kind {
                body.push_str("event: ");
                body.push_str(&kind);
                body.push('\n');
            }
        }
        body.push_str("data: ");
        body.push_str(payload);
        body.push_str("\n\n");
    }
    body
}

/// The `data:` payloads of a raw SSE text (multi-line data joined by `\n`), for the
/// payload-level bench; the comparison feeds the raw text to the real SSE parser instead.
fn sse_payloads(text: &str) -> Vec<String> {
    let mut payloads = Vec::new();
    let mut data: Option<String> = None;
    for line in text.lines().chain([""]) {
        if line.is_empty() {
            payloads.extend(data.take());
        } else if let Some(rest) = line.strip_prefix("data:") {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(rest);
                }
                None => data = Some(rest.to_owned()),
            }
        }
    }
    payloads
}

/// Splits an SSE body after each blank line, one chunk per event.
fn split_events(body: &str) -> Vec<Bytes> {
    let body = Bytes::copy_from_slice(body.as_bytes());
    let mut chunks = Vec::new();
    let mut start = 0;
    while let Some(at) = body[start..].windows(2).position(|w| w == b"\n\n") {
        let end = start + at + 2;
        chunks.push(body.slice(start..end));
        start = end;
    }
    if start < body.len() {
        chunks.push(body.slice(start..));
    }
    chunks
}

/// What decoding one response yielded.
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    pub parts: u64,
    pub errors: u64,
}

impl std::ops::AddAssign for Outcome {
    fn add_assign(&mut self, other: Self) {
        self.parts += other.parts;
        self.errors += other.errors;
    }
}

/// Decodes one response's payloads with a fresh decoder, the way [`decode_sse`] does (stop
/// at the first error or once the decoder is done, then finish). `out` is reused between
/// events and emptied, so dropping the parts is measured too.
pub fn decode_payloads(wire: &Wire, payloads: &[String], out: &mut Vec<ModelPart>) -> Outcome {
    let mut decoder = (wire.decoder)();
    let mut outcome = Outcome::default();
    let mut result: Result<(), ModelError> = Ok(());
    for payload in payloads {
        result = decoder.push(payload, out);
        outcome.parts += out.len() as u64;
        out.clear();
        if result.is_err() || decoder.is_done() {
            break;
        }
    }
    if result.is_ok() {
        result = decoder.finish(out);
        outcome.parts += out.len() as u64;
        out.clear();
    }
    outcome.errors = u64::from(result.is_err());
    outcome
}

/// A boxed decoder is a decoder, so [`decode_sse`] can drive any table entry.
struct Boxed(Box<dyn StreamDecoder>);

impl StreamDecoder for Boxed {
    fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        self.0.push(data, out)
    }

    fn finish(&mut self, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        self.0.finish(out)
    }

    fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

/// A decoder that decodes nothing: it counts the payloads it is lent and drops them.
struct Count(Arc<AtomicU64>);

impl StreamDecoder for Count {
    fn push(&mut self, data: &str, _out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        std::hint::black_box(data);
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// An in-memory body's chunks through [`decode_sse`] (no idle timeout) into `decoder`.
fn decode_chunks(body: &[Bytes], decoder: impl StreamDecoder) -> ModelStream {
    // `decode_sse` wants an owned stream: the chunks are `Bytes`, so this copies no data.
    let chunks: Vec<Bytes> = body.to_vec();
    decode_sse(
        futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>)),
        None,
        decoder,
        Vec::new(),
    )
}

/// Parses one response's SSE body and drops its events, decoding nothing: the SSE layer's share
/// of [`decode_body`], the same path with a decoder that only counts the payloads. Returns the
/// number of events.
pub async fn parse_body(body: &[Bytes]) -> u64 {
    let count = Arc::new(AtomicU64::new(0));
    let mut parts = decode_chunks(body, Count(count.clone()));
    while let Some(part) = parts.next().await {
        std::hint::black_box(&part);
    }
    count.load(Ordering::Relaxed)
}

/// The parts of one response's SSE body, decoded the way a live response is: the chunks
/// through [`decode_sse`] (no idle timeout) with a fresh decoder.
pub fn body_parts(wire: &Wire, body: &[Bytes]) -> ModelStream {
    decode_chunks(body, Boxed((wire.decoder)()))
}

/// Decodes one response's SSE body through [`body_parts`], every part pulled from the stream
/// (the `StreamStart` included, as the AI SDK's `stream-start` is counted on its side).
pub async fn decode_body(wire: &Wire, body: &[Bytes]) -> Outcome {
    let mut parts = body_parts(wire, body);
    let mut outcome = Outcome::default();
    while let Some(part) = parts.next().await {
        match part {
            Ok(part) => {
                std::hint::black_box(&part);
                outcome.parts += 1;
            }
            Err(_) => outcome.errors += 1,
        }
    }
    outcome
}

/// How a body is cut into the chunks the SSE layer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// One chunk per event, as a live stream arrives when the model is slower than the network.
    Event,
    /// Fixed-size chunks that split lines and UTF-8 sequences anywhere, as a buffered or fast
    /// connection delivers them.
    Bytes(usize),
}

impl Chunking {
    /// From the `CHUNK` environment variable: `event` (the default) or a size in bytes, the
    /// same variable `bench/ai-sdk/decode.mjs` reads.
    pub fn from_env() -> Self {
        match std::env::var("CHUNK") {
            Ok(size) if size != "event" => {
                Chunking::Bytes(size.parse().expect("CHUNK is `event` or a size in bytes"))
            }
            _ => Chunking::Event,
        }
    }

    /// `body` (cut per event) cut this way.
    pub fn apply(self, body: &[Bytes]) -> Vec<Bytes> {
        match self {
            Chunking::Event => body.to_vec(),
            Chunking::Bytes(size) => {
                let whole = Bytes::from(body.concat());
                (0..whole.len())
                    .step_by(size.max(1))
                    .map(|at| whole.slice(at..(at + size).min(whole.len())))
                    .collect()
            }
        }
    }

    /// For reports: `event` or the size.
    pub fn label(self) -> String {
        match self {
            Chunking::Event => "event".into(),
            Chunking::Bytes(size) => size.to_string(),
        }
    }
}
