//! The service against a Node server running the AI SDK, on the same loopback model.
//!
//! ```sh
//! (cd bench/ai-sdk && npm ci)                      # the peer, once
//! cargo bench -p toolsmith-server --bench service [-- SECONDS CLIENTS]
//! ```
//!
//! One run is the AI SDK's chat request (a new chat, one user message) answered as a UI message
//! stream: the model calls `calculator`, the tool runs, the model answers — two model calls.
//! The model is a loopback server in this process speaking OpenAI's Chat Completions stream.
//! The servers run as processes of their own: toolsmith's is this binary started again as a
//! service (mimalloc, as in the `toolsmith` binary), twice — `__serve`, a SQLite store in a
//! temporary folder (every run is stored as it goes: durable, the service's default), then
//! `__serve_memory`, a store in memory (nothing durable: what the peer does, so the difference
//! between the two rows is the price of durability); the peer is `bench/ai-sdk/server.mjs`
//! (`streamText` with one tool, `pipeUIMessageStreamToResponse`). Each is driven by CLIENTS
//! concurrent clients (default 8) for SECONDS (default 10) after a 2-second warm-up; the report
//! gives runs per second, the latency of a run (p50, p99) and the server's CPU time per run,
//! read from `/proc/<pid>/stat`, which makes the comparison per core.
//!
//! Two more measures of the service alone:
//!
//! - `-- paused [N]` (default 10 000): N runs started with `POST /async`, each pausing on an
//!   approval; the service's resident memory (`VmRSS`) once they all wait.
//! - `-- completion [N]` (default 200): N runs each handing a call out (external-dispatch),
//!   then each completed through `POST /async-tools/{id}/complete`; the time from the completion
//!   request to the continuation's model request reaching the model, p50 and p99.
//!
//! And one of endurance (`docs/reliability.md`, "Load and soak"):
//!
//! - `-- soak [SECONDS] [CLIENTS]` (default 600 s, 1 000 clients): the service on SQLite, as
//!   above, under CLIENTS concurrent clients each streaming chat runs one after another for
//!   SECONDS, all starting at once. Every 30 s: runs a second, latency p50 and p99 of that
//!   window, the service's resident memory and open descriptors. At the end: runs, errors (a
//!   status other than 200, a transport error, a stream without the answer: each counted and
//!   the first few shown, never a panic), latency p50, p99 and max over the whole span, and the
//!   memory from the first window to the last. Bounded: loopback only, and every client stops
//!   at the deadline.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::routing::post;
use serde_json::{Value, json};
use toolsmith_server::{Service, ServiceOptions, admin};
use toolsmith_store::SecretKey;

// Not `benches/soak.rs`: Cargo would take that for a bench of its own.
mod soak;

/// The allocator the `toolsmith` binary uses for its commands (the service among them).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if args.get(1).map(String::as_str) == Some("__serve") {
        runtime.block_on(serve(&args[2]));
        return;
    }
    if args.get(1).map(String::as_str) == Some("__serve_memory") {
        runtime.block_on(serve_memory(&args[2]));
        return;
    }
    // cargo bench passes `--bench`; the numbers and the mode are ours.
    let numbers: Vec<u64> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    if args.iter().any(|a| a == "paused") {
        runtime.block_on(paused(numbers.first().copied().unwrap_or(10_000) as usize));
        return;
    }
    if args.iter().any(|a| a == "soak") {
        let seconds = numbers.first().copied().unwrap_or(600);
        let clients = numbers.get(1).copied().unwrap_or(1_000) as usize;
        runtime.block_on(soak::soak(Duration::from_secs(seconds), clients));
        return;
    }
    if args.iter().any(|a| a == "completion") {
        runtime.block_on(completion(numbers.first().copied().unwrap_or(200) as usize));
        return;
    }
    let seconds = numbers.first().copied().unwrap_or(10);
    let clients = numbers.get(1).copied().unwrap_or(8) as usize;
    runtime.block_on(compare(Duration::from_secs(seconds), clients));
}

/// When continuations reached the model: the result id they carry, and the instant.
static CONTINUED: std::sync::Mutex<Vec<(String, Instant)>> = std::sync::Mutex::new(Vec::new());

/// The mock model: a call of `calculator` first, the answer once a tool result (or an injected
/// one) is there.
async fn model(body: axum::body::Bytes) -> axum::response::Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned();
    let said = last
        .as_ref()
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    if let Some(at) = said.find("resultId: ") {
        let id: String = said[at + 10..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        CONTINUED.lock().unwrap().push((id, Instant::now()));
    }
    let answered = last.is_some_and(|m| m["role"] == "tool" || said.contains("resultId: "));
    let chunks = if answered {
        vec![
            json!({"id": "c", "model": "mock", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "The answer is 42."}}]}),
            json!({"id": "c", "model": "mock", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26}}),
        ]
    } else {
        vec![
            json!({"id": "c", "model": "mock", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"6 * 7\"}"}}]}}]}),
            json!({"id": "c", "model": "mock", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                   "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}}),
        ]
    };
    let mut text = String::new();
    for chunk in chunks {
        text.push_str(&format!("data: {chunk}\n\n"));
    }
    text.push_str("data: [DONE]\n\n");
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

/// Runs this binary as the service over the store at `db` (`__serve`): `sqlite:PATH` or a
/// PostgreSQL URL.
async fn serve(db: &str) {
    let store = toolsmith_store::open_service(db).await.unwrap();
    let (listener, service, url) = listening(store).await;
    println!("listening on {url}");
    toolsmith_server::serve(listener, service, std::future::pending()).await;
}

/// The service over `store` on a loopback port, the port's listener and its URL.
async fn listening(
    store: Arc<dyn toolsmith_store::ServiceStore>,
) -> (tokio::net::TcpListener, Service, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let options = ServiceOptions {
        workspaces: std::env::temp_dir().join(format!("toolsmith-bench-{}", std::process::id())),
        ..ServiceOptions::default()
    };
    let service = Service::new(store, SecretKey::from_hex(KEY).unwrap(), options, &url);
    (listener, service, url)
}

/// The command that starts this binary as a server (`mode`, `__serve` or `__serve_memory`, with
/// its argument): under the command that `SERVICE_BENCH_WRAP` names, if set (`valgrind
/// --tool=callgrind`, say, to count instructions rather than time them: exact from one build to
/// the next on a noisy machine).
fn server_command(mode: &str, arg: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    let wrap = std::env::var("SERVICE_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(exe);
            command
        }
        None => Command::new(exe),
    };
    command.args([mode, arg]);
    command
}

/// Runs this binary as the service over a store in memory (`__serve_memory`), nothing durable,
/// as the peer keeps nothing: this run's account and the agent `calc` on the model at `base`
/// made in it, the account's secret printed after the address.
async fn serve_memory(base: &str) {
    let (listener, service, url) = listening(Arc::new(toolsmith_store::MemoryStore::new())).await;
    let secret = provision(&service, base, json!({})).await;
    println!("listening on {url} {secret}");
    toolsmith_server::serve(listener, service, std::future::pending()).await;
}

/// This run's account (its secret) and the agent `calc` on the model at `base`, its
/// `calculator` entry as given, made in `service`.
async fn provision(service: &Service, base: &str, calculator: Value) -> String {
    let secret = admin::create_account(service, &account()).await.unwrap();
    let config = json!({
        "model": {"provider": "openai-compatible", "name": "mock", "baseUrl": base},
        "tools": {"calculator": calculator},
        "maxSteps": 5,
    });
    service
        .put_agent(&account(), "calc", &config)
        .await
        .unwrap();
    secret
}

/// A server process and its URL, from the `listening on …` line it prints.
fn started(mut command: Command) -> (Child, String) {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line.trim().trim_start_matches("listening on ").to_string();
    let url = if address.starts_with("http") {
        address
    } else {
        format!("http://127.0.0.1:{address}")
    };
    (child, url)
}

/// User and system CPU time of a process, from `/proc/<pid>/stat`.
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|t| t.parse::<u64>().ok()).sum())
        .unwrap_or(0);
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}

/// The `p` quantile of `latencies` (sorted here); zero when there are none.
fn quantile(latencies: &mut [Duration], p: f64) -> Duration {
    latencies.sort_unstable();
    latencies
        .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

struct Measured {
    runs: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
    cpu: Duration,
}

impl Measured {
    fn per_second(&self) -> f64 {
        self.runs as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        quantile(&mut self.latencies.clone(), p)
    }

    fn cpu_per_run(&self) -> Duration {
        self.cpu / self.runs.max(1) as u32
    }
}

/// One chat run: the request, the whole stream read; its latency.
async fn run(client: &reqwest::Client, url: &str, secret: &str, n: u64) -> Duration {
    try_run(client.post(url), secret, n)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// One chat run sent with `request` (a POST to the chat route): its latency once the whole
/// stream is read and holds the answer; else what went wrong.
async fn try_run(
    request: reqwest::RequestBuilder,
    secret: &str,
    n: u64,
) -> Result<Duration, String> {
    let body = json!({
        "id": format!("chat-{n}-{}", uuid::Uuid::new_v4().simple()),
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is 6 * 7?"}]}],
        "trigger": "submit-message",
    });
    let start = Instant::now();
    let response = request
        .bearer_auth(secret)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("sending: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status()));
    }
    let text = response
        .text()
        .await
        .map_err(|e| format!("reading the stream: {e}"))?;
    if !text.contains("The answer is 42.") {
        return Err(format!("a stream without the answer: {text}"));
    }
    Ok(start.elapsed())
}

/// Drives `url` with `clients` concurrent clients: a warm-up, then `span`.
async fn drive(url: &str, secret: &str, pid: u32, span: Duration, clients: usize) -> Measured {
    let client = reqwest::Client::new();
    let load = |span: Duration| {
        let tasks: Vec<_> = (0..clients as u64)
            .map(|c| {
                let (client, url, secret) = (client.clone(), url.to_string(), secret.to_string());
                tokio::spawn(async move {
                    let until = Instant::now() + span;
                    let mut latencies = Vec::new();
                    let mut n = c * 1_000_000;
                    while Instant::now() < until {
                        latencies.push(run(&client, &url, &secret, n).await);
                        n += 1;
                    }
                    latencies
                })
            })
            .collect();
        async move {
            let mut all = Vec::new();
            for task in tasks {
                all.extend(task.await.unwrap());
            }
            all
        }
    };
    load(Duration::from_secs(2)).await;
    let (cpu_before, start) = (cpu(pid), Instant::now());
    let latencies = load(span).await;
    Measured {
        runs: latencies.len(),
        elapsed: start.elapsed(),
        cpu: cpu(pid).saturating_sub(cpu_before),
        latencies,
    }
}

/// The store the bench's services use: `TOOLSMITH_BENCH_POSTGRES` (a PostgreSQL URL) when set,
/// else a SQLite file in `dir`.
fn store_url(dir: &std::path::Path) -> String {
    std::env::var("TOOLSMITH_BENCH_POSTGRES")
        .unwrap_or_else(|_| format!("sqlite:{}", dir.join("service.db").display()))
}

/// The account of this bench run (a database may be reused: a name of its own).
fn account() -> String {
    format!("bench-{}", std::process::id())
}

/// The mock model on a loopback port (its base URL), the store of [`store_url`] with this
/// run's account (its secret) and the agent `calc` (its `calculator` entry as given), and the
/// service started on it as a process of its own.
async fn setup(dir: &std::path::Path, calculator: Value) -> (String, String, Child, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = Router::new().route("/v1/chat/completions", post(model));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let db = store_url(dir);
    let store = toolsmith_store::open_service(&db).await.unwrap();
    let options = ServiceOptions {
        workspaces: dir.join("workspaces"),
        ..ServiceOptions::default()
    };
    let setup = Service::new(store, SecretKey::from_hex(KEY).unwrap(), options, "");
    let secret = provision(&setup, &base, calculator).await;
    drop(setup);
    let (child, url) = started(server_command("__serve", &db));
    (base, secret, child, url)
}

/// A `POST /async` body: event `event` of conversation `event`.
fn async_run(event: &str) -> Value {
    json!({"agentId": "calc", "eventId": event, "conversationKey": event,
           "events": [{"role": "user", "content": "What is 6 * 7?"}]})
}

/// Polls until `done` says so (at most 10 minutes).
async fn until(mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..60_000 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("gave up waiting");
}

/// `VmRSS` of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn paused(runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (_, secret, mut service, url) = setup(dir.path(), json!({"needsApproval": true})).await;
    let client = reqwest::Client::new();
    let idle = rss_kib(service.id());
    let started = Instant::now();
    let batch = 64;
    for first in (0..runs).step_by(batch) {
        let requests: Vec<_> = (first..(first + batch).min(runs))
            .map(|i| {
                client
                    .post(format!("{url}/async"))
                    .bearer_auth(&secret)
                    .json(&async_run(&format!("e{i}")))
                    .send()
            })
            .collect();
        for response in futures::future::join_all(requests).await {
            assert_eq!(response.unwrap().status(), 202);
        }
    }
    let last = format!("{url}/status/e{}?agentId=calc", runs - 1);
    until(async || {
        let body: Value = client
            .get(&last)
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body["status"] == "awaiting_approval"
    })
    .await;
    // Every run waits; give the last ones' tasks a moment to end.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = rss_kib(service.id());
    let _ = service.kill();
    println!(
        "{runs} runs paused on an approval in {:.1} s; the service's RSS: {:.0} MiB idle, {:.0} MiB with them waiting",
        started.elapsed().as_secs_f64(),
        idle as f64 / 1024.0,
        rss as f64 / 1024.0
    );
}

async fn completion(runs: usize) {
    let dir = tempfile::tempdir().unwrap();
    let calculator = json!({"async": true, "execution": "external-dispatch"});
    let (_, secret, mut service, url) = setup(dir.path(), calculator).await;
    let client = reqwest::Client::new();
    let db = store_url(dir.path());
    let store = toolsmith_store::open_service(&db).await.unwrap();
    // On PostgreSQL, a second replica takes the completions.
    let postgres = db.starts_with("postgres");
    let (mut second, completing) = if postgres {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.args(["__serve", &db]);
        let (child, url) = started(command);
        (Some(child), url)
    } else {
        (None, url.clone())
    };
    let mut latencies = Vec::new();
    for i in 0..runs {
        let event = format!("e{i}");
        let response = client
            .post(format!("{url}/async"))
            .bearer_auth(&secret)
            .json(&async_run(&event))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
        // Wait until the run is over and its group sealed, then complete the call.
        let key = format!("{}/calc/{event}", account());
        until(async || store.group(&key).await.unwrap().is_some_and(|g| g.sealed)).await;
        let id = {
            store.async_results_of(&key).await.unwrap()[0]
                .result_id
                .clone()
        };
        let sent = Instant::now();
        let answer = client
            .post(format!("{completing}/async-tools/{id}/complete"))
            .bearer_auth(&secret)
            .json(&json!({"status": "completed", "response": {"answer": 42}}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202);
        until(async || CONTINUED.lock().unwrap().iter().any(|(r, _)| *r == id)).await;
        let reached = CONTINUED
            .lock()
            .unwrap()
            .iter()
            .find(|(r, _)| *r == id)
            .map(|(_, at)| *at)
            .unwrap();
        latencies.push(reached - sent);
    }
    let _ = service.kill();
    if let Some(second) = second.as_mut() {
        let _ = second.kill();
    }
    let mut at = |p: f64| quantile(&mut latencies, p);
    let on = if postgres {
        "PostgreSQL, started on one replica, completed on another"
    } else {
        "SQLite"
    };
    println!(
        "completion → the continuation's model request, {runs} runs on {on}: p50 {:.2} ms, p99 {:.2} ms",
        at(0.5).as_secs_f64() * 1000.0,
        at(0.99).as_secs_f64() * 1000.0
    );
}

async fn compare(span: Duration, clients: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (base, secret, mut toolsmith, url) = setup(dir.path(), json!({})).await;
    let toolsmith_url = format!("{url}/agents/calc/chat");
    let measured = drive(&toolsmith_url, &secret, toolsmith.id(), span, clients).await;
    let _ = toolsmith.kill();
    let (mut in_memory, line) = started(server_command("__serve_memory", &base));
    let (url, secret) = line.split_once(' ').unwrap();
    let in_memory_url = format!("{url}/agents/calc/chat");
    let unstored = drive(&in_memory_url, secret, in_memory.id(), span, clients).await;
    let _ = in_memory.kill();

    let peer_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/ai-sdk");
    let node = format!("{peer_dir}/node_modules/.bin/node");
    let peer = if std::path::Path::new(&node).exists() {
        let mut command = Command::new(&node);
        command.arg(format!("{peer_dir}/server.mjs")).arg(&base);
        let (mut child, url) = started(command);
        let measured = drive(&url, "", child.id(), span, clients).await;
        let _ = child.kill();
        Some(measured)
    } else {
        eprintln!("the AI SDK peer is not installed: run `npm ci` in bench/ai-sdk");
        None
    };

    println!(
        "| server ({clients} clients, {} s) | runs/s | p50 | p99 | server CPU per run | runs per server CPU-second |",
        span.as_secs()
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let row = |name: &str, m: &Measured| {
        println!(
            "| {name} | {:.0} | {:.2} ms | {:.2} ms | {:.0} µs | {:.0} |",
            m.per_second(),
            m.percentile(0.5).as_secs_f64() * 1000.0,
            m.percentile(0.99).as_secs_f64() * 1000.0,
            m.cpu_per_run().as_secs_f64() * 1e6,
            1.0 / m.cpu_per_run().as_secs_f64().max(1e-9),
        );
    };
    row("toolsmith serve (chat route, SQLite)", &measured);
    row("toolsmith serve (chat route, in memory)", &unstored);
    if let Some(peer) = &peer {
        row("Node + AI SDK (streamText, one tool)", peer);
        let ratios = |name: &str, m: &Measured| {
            println!(
                "ratios, toolsmith ({name}) ÷ AI SDK: runs per server CPU-second {:.1}×, p99 {:.2}×",
                peer.cpu_per_run().as_secs_f64() / m.cpu_per_run().as_secs_f64().max(1e-9),
                m.percentile(0.99).as_secs_f64() / peer.percentile(0.99).as_secs_f64(),
            );
        };
        println!();
        ratios("SQLite", &measured);
        ratios("in memory", &unstored);
    }
}
