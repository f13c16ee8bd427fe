//! Shared test helpers: fixtures, a seeded RNG, a loopback HTTP server, stream invariants.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolsmith_core::{FinishReason, ModelError, ModelPart, ModelStream, ModelToolCall, Usage};

/// The shared fixtures directory.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A fixture as the raw SSE body a server would send.
pub fn fixture_sse(dir: &str, name: &str) -> String {
    let path = fixtures_dir().join(dir).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    if name.ends_with(".sse") {
        text
    } else {
        chunks_to_sse(text.lines())
    }
}

/// `data: LINE\n\n` per line, then `data: [DONE]\n\n`.
pub fn chunks_to_sse<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        out.push_str("data: ");
        out.push_str(line);
        out.push_str("\n\n");
    }
    out.push_str("data: [DONE]\n\n");
    out
}

/// Feeds event payloads straight to `decoder` (a `StreamStart` first, as the stream adds),
/// stopping at the first error, and checks the result.
pub fn decode_with<D, S>(mut decoder: D, lines: &[S]) -> Summary
where
    D: toolsmith_providers::decode::StreamDecoder,
    S: AsRef<str>,
{
    let mut parts = vec![ModelPart::StreamStart {
        warnings: Vec::new(),
    }];
    let mut error = None;
    for line in lines {
        if let Err(e) = decoder.push(line.as_ref(), &mut parts) {
            error = Some(e);
            break;
        }
    }
    if error.is_none() {
        error = decoder.finish(&mut parts).err();
    }
    check(parts, error)
}

/// A Responses fixture's event lines split into responses (a new one at each
/// `response.created`): some fixtures hold several turns.
pub fn responses_of(dir: &str, file: &str) -> Vec<Vec<String>> {
    let path = fixtures_dir().join(dir).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut out: Vec<Vec<String>> = vec![Vec::new()];
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let created = line.contains(r#""type":"response.created""#);
        if created && !out.last().unwrap().is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().unwrap().push(line.to_string());
    }
    out
}

/// A request with one user message, `hi`.
pub fn request() -> toolsmith_core::ModelRequest {
    toolsmith_core::ModelRequest {
        messages: vec![toolsmith_core::Message::user("hi")],
        ..Default::default()
    }
}

/// The default retry policy, with 10 ms first delays so tests stay fast.
pub fn fast_retries() -> toolsmith_providers::RetryPolicy {
    toolsmith_providers::RetryPolicy {
        initial_delay: std::time::Duration::from_millis(10),
        ..Default::default()
    }
}

/// `model` with `retry` and the other HTTP settings at their defaults.
pub fn with_retry<M: toolsmith_providers::ModelBuilder>(
    model: M,
    retry: toolsmith_providers::RetryPolicy,
) -> M {
    model.with_http_settings(toolsmith_providers::HttpSettings {
        retry,
        ..Default::default()
    })
}

/// A small deterministic RNG (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `bytes` cut at random positions (pieces of 1..=max bytes), splitting lines and UTF-8.
pub fn random_split(bytes: &[u8], seed: u64, max: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let len = 1 + rng.below(max);
        let end = (at + len).min(bytes.len());
        out.push(bytes[at..end].to_vec());
        at = end;
    }
    out
}

/// What a decoded stream amounted to, after checking its invariants.
#[derive(Debug, Default)]
pub struct Summary {
    pub text: String,
    pub reasoning: String,
    pub calls: Vec<ModelToolCall>,
    pub usage: Usage,
    pub finish: Option<FinishReason>,
    pub warnings: Vec<String>,
    pub error: Option<ModelError>,
    pub parts: Vec<ModelPart>,
}

/// Collects a model stream (stopping at the first error).
pub async fn collect(mut stream: ModelStream) -> (Vec<ModelPart>, Option<ModelError>) {
    let mut parts = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(part) => parts.push(part),
            Err(error) => return (parts, Some(error)),
        }
    }
    (parts, None)
}

/// Checks the invariants of a stream's parts and summarises them:
/// every tool-input start has one end and one tool call, the deltas concatenate to the call's
/// input, ids are unique, text and reasoning blocks are balanced, and a clean stream has exactly
/// one finish, last.
pub fn check(parts: Vec<ModelPart>, error: Option<ModelError>) -> Summary {
    let mut s = Summary::default();
    let mut inputs: HashMap<Arc<str>, (String, String, bool)> = HashMap::new();
    let mut started_order = Vec::new();
    let mut ended: HashSet<Arc<str>> = HashSet::new();
    let mut call_ids = HashSet::new();
    let mut open_blocks = HashSet::new();
    let mut finishes = 0;
    for (i, part) in parts.iter().enumerate() {
        assert_eq!(finishes, 0, "a part after finish: {part:?}");
        match part {
            ModelPart::StreamStart { warnings } => {
                assert_eq!(i, 0, "stream start must come first");
                s.warnings = warnings.clone();
            }
            ModelPart::TextStart { id } | ModelPart::ReasoningStart { id } => {
                assert!(open_blocks.insert(id.clone()), "block {id} started twice");
            }
            ModelPart::TextDelta { id, delta } => {
                assert!(open_blocks.contains(id), "text delta for a closed block");
                s.text.push_str(delta);
            }
            ModelPart::ReasoningDelta { id, delta } => {
                assert!(
                    open_blocks.contains(id),
                    "reasoning delta for a closed block"
                );
                s.reasoning.push_str(delta);
            }
            ModelPart::TextEnd { id, .. } | ModelPart::ReasoningEnd { id, .. } => {
                assert!(open_blocks.remove(id), "block {id} ended without a start");
            }
            ModelPart::ToolInputStart { id, tool_name, .. } => {
                assert!(
                    inputs
                        .insert(id.clone(), (tool_name.clone(), String::new(), false))
                        .is_none(),
                    "tool input {id} started twice"
                );
                started_order.push(id.clone());
            }
            ModelPart::ToolInputDelta { id, delta } => {
                let input = inputs.get_mut(id).expect("delta before start");
                assert!(!ended.contains(id), "delta after end");
                input.1.push_str(delta);
            }
            ModelPart::ToolInputEnd { id } => {
                assert!(inputs.contains_key(id), "end before start");
                assert!(ended.insert(id.clone()), "tool input {id} ended twice");
            }
            ModelPart::ToolCall(call) => {
                assert!(
                    call_ids.insert(call.tool_call_id.clone()),
                    "duplicate call id"
                );
                let input = inputs
                    .get_mut(call.tool_call_id.as_str())
                    .expect("tool call without a tool-input start");
                assert!(
                    ended.contains(call.tool_call_id.as_str()),
                    "tool call before its end"
                );
                assert_eq!(input.0, call.tool_name, "tool name changed");
                assert_eq!(input.1, call.input, "deltas != final arguments");
                input.2 = true;
                s.calls.push(call.clone());
            }
            ModelPart::Finish {
                usage,
                finish_reason,
                ..
            } => {
                finishes += 1;
                s.usage = *usage;
                s.finish = Some(finish_reason.clone());
            }
            _ => {}
        }
    }
    assert!(open_blocks.is_empty(), "blocks left open: {open_blocks:?}");
    for id in &started_order {
        assert!(ended.contains(id), "tool input {id} never ended");
        if error.is_none() {
            assert!(inputs[id].2, "tool input {id} has no tool call");
        }
    }
    if error.is_none() {
        assert_eq!(finishes, 1, "a clean stream has exactly one finish");
    } else {
        assert_eq!(finishes, 0, "a failed stream has no finish");
    }
    s.error = error;
    s.parts = parts;
    s
}

/// One canned HTTP response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Cut the body at random points (seed, max piece) and write the pieces separately.
    pub split: Option<(u64, usize)>,
    /// Chunked transfer encoding (else close-delimited).
    pub chunked: bool,
}

impl Reply {
    pub fn sse(body: impl Into<String>) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into().into_bytes(),
            split: None,
            chunked: true,
        }
    }

    pub fn json(status: u16, body: Value) -> Self {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            split: None,
            chunked: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn split(mut self, seed: u64, max: usize, chunked: bool) -> Self {
        self.split = Some((seed, max));
        self.chunked = chunked;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A loopback HTTP/1.1 server answering each connection with the next reply.
#[derive(Clone)]
pub struct Server {
    pub base_url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let log = received.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let _ = socket.set_nodelay(true);
                let log = log.clone();
                let queue = queue.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else {
                        return;
                    };
                    log.lock().unwrap().push(request);
                    let reply = queue.lock().unwrap().pop_front().unwrap_or_else(|| {
                        Reply::json(
                            500,
                            serde_json::json!({"error": {"message": "no reply left"}}),
                        )
                    });
                    let _ = write_reply(&mut socket, reply).await;
                });
            }
        });
        Server {
            base_url: format!("http://{addr}/v1"),
            received,
        }
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let header_end = loop {
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let body = serde_json::from_slice(&buf[header_end..]).unwrap_or(Value::Null);
    Some(Received {
        path,
        headers,
        body,
    })
}

async fn write_reply(socket: &mut tokio::net::TcpStream, reply: Reply) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if reply.chunked {
        head.push_str("transfer-encoding: chunked\r\n");
    } else if reply.split.is_none() {
        head.push_str(&format!("content-length: {}\r\n", reply.body.len()));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    let pieces = match reply.split {
        Some((seed, max)) => random_split(&reply.body, seed, max),
        None => vec![reply.body.clone()],
    };
    for piece in pieces {
        if reply.chunked {
            if piece.is_empty() {
                continue;
            }
            socket
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .await?;
            socket.write_all(&piece).await?;
            socket.write_all(b"\r\n").await?;
        } else {
            socket.write_all(&piece).await?;
        }
        socket.flush().await?;
        if reply.split.is_some() {
            // Let the client read this piece on its own before the next is written.
            tokio::task::yield_now().await;
        }
    }
    if reply.chunked {
        socket.write_all(b"0\r\n\r\n").await?;
    }
    socket.flush().await?;
    socket.shutdown().await
}

/// A run on `model` (built for the loopback base URL it is given) whose stream sends `event`
/// (one whole SSE event) and stalls: cancelling the run ends it promptly as cancelled, and the
/// client hangs up the connection.
pub async fn cancelling_mid_stream_closes_the_connection<M>(
    model: impl FnOnce(String) -> M,
    event: String,
) where
    M: toolsmith_core::LanguageModel + 'static,
{
    use std::time::{Duration, Instant};
    use toolsmith_agent::{Agent, RunErrorKind, RunInput};
    use toolsmith_core::CancellationToken;

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0; 65536];
        let _ = socket.read(&mut buf).await.unwrap();
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let piece = format!("{:x}\r\n{event}\r\n", event.len());
        socket.write_all(piece.as_bytes()).await.unwrap();
        // The stream stalls here; the client must hang up when the run is cancelled.
        let eof = loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break Instant::now(),
                Ok(_) => {}
            }
        };
        let _ = closed_tx.send(eof);
    });
    let agent = Agent::builder(model(base_url)).build();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let input = RunInput::from("hi").with_cancellation(cancel.clone());
        async move { agent.run(input).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancelled_at = Instant::now();
    cancel.cancel();

    let error = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("the run ends promptly")
        .unwrap()
        .unwrap_err();
    assert!(matches!(error.kind, RunErrorKind::Cancelled), "{error:?}");
    let closed = tokio::time::timeout(Duration::from_secs(5), closed_rx)
        .await
        .expect("the connection is closed")
        .unwrap();
    assert!(closed.duration_since(cancelled_at) < Duration::from_secs(5));
}
