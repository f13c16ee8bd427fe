//! What the service's tests share: a loopback model speaking OpenAI's Chat Completions stream,
//! a running service on a loopback port, and an HTTP client that reads its answers.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_server::{Service, ServiceOptions, admin};
use toolsmith_store::{MemoryStore, SecretKey, ServiceStore};

/// Serves Chat Completions streams on a loopback port, each made by `respond` from the
/// request's body, for as long as the test runs: the base URL.
pub fn mock_model(respond: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let respond = Arc::new(respond);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let respond = respond.clone();
            std::thread::spawn(move || {
                let body = read_body(&mut stream);
                let mut reply = String::new();
                for chunk in respond(&body) {
                    reply.push_str(&format!("data: {chunk}\n\n"));
                }
                reply.push_str("data: [DONE]\n\n");
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    base
}

fn read_body(stream: &mut TcpStream) -> Value {
    read_request(stream).1
}

/// Reads one request: its lower-case headers and JSON body.
fn read_request(stream: &mut TcpStream) -> (Vec<(String, String)>, Value) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    let mut headers = Vec::new();
    reader.read_line(&mut line).unwrap_or_default();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap_or_default();
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.push((name.trim().to_lowercase(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap_or(0));
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    (
        headers,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

/// A request an endpoint received.
#[derive(Debug, Clone)]
pub struct Hit {
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// Serves JSON answers made by `respond` (status, body, delay before answering) on a loopback
/// port: the URL, and the requests received.
pub fn endpoint(
    respond: impl Fn(&Value) -> (u16, String, Duration) + Send + Sync + 'static,
) -> (String, Arc<std::sync::Mutex<Vec<Hit>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let hits = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = hits.clone();
    let respond = Arc::new(respond);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (respond, log) = (respond.clone(), log.clone());
            std::thread::spawn(move || {
                let (headers, body) = read_request(&mut stream);
                let (status, answer, delay) = respond(&body);
                log.lock().unwrap().push(Hit { headers, body });
                std::thread::sleep(delay);
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    answer.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(answer.as_bytes());
            });
        }
    });
    (url, hits)
}

/// A streamed answer with `text`.
pub fn text(text: &str) -> Vec<Value> {
    vec![
        json!({"id": "c1", "model": "mock", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
        json!({"id": "c1", "model": "mock", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}),
    ]
}

/// A streamed call of `tool` with `args`, call id `id`.
pub fn call(id: &str, tool: &str, args: Value) -> Vec<Value> {
    vec![
        json!({"id": "c1", "model": "mock", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": tool, "arguments": args.to_string()}}
        ]}}]}),
        json!({"id": "c1", "model": "mock", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]
}

/// The messages of a Chat Completions request.
pub fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// The tool names a Chat Completions request declares.
pub fn declared(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// The last message's role and text (a tool message's content).
pub fn last(body: &Value) -> (String, String) {
    let messages = messages(body);
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let text = match &last["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    (last["role"].as_str().unwrap_or_default().to_string(), text)
}

/// A running service.
pub struct Running {
    pub url: String,
    pub service: Service,
    pub store: Arc<dyn ServiceStore>,
    pub client: reqwest::Client,
    pub workspaces: tempfile::TempDir,
    pub key: SecretKey,
    /// Shuts it down when sent (or dropped).
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<()>,
}

/// Starts a service on a memory store, with `options` (its workspaces in a temporary folder).
pub async fn start(options: ServiceOptions) -> Running {
    start_on(Arc::new(MemoryStore::new()), options).await
}

/// The stores a test runs on in turn: SQLite (a file in `dir`), then memory.
pub async fn stores(dir: &std::path::Path) -> Vec<Arc<dyn ServiceStore>> {
    let sqlite = toolsmith_store::SqliteStore::open(dir.join("service.db"))
        .await
        .unwrap();
    vec![Arc::new(sqlite), Arc::new(MemoryStore::new())]
}

/// Starts another replica of `like`'s service on `store` (the same secret key and options).
pub async fn start_like(like: &Running, store: Arc<dyn ServiceStore>) -> Running {
    start_with_key(store, like.service.options().clone(), like.key.clone()).await
}

/// Starts a service on `store`.
pub async fn start_on(store: Arc<dyn ServiceStore>, options: ServiceOptions) -> Running {
    start_with_key(store, options, SecretKey::generate()).await
}

/// Starts a service on `store` with the secret key `key`.
pub async fn start_with_key(
    store: Arc<dyn ServiceStore>,
    mut options: ServiceOptions,
    key: SecretKey,
) -> Running {
    let workspaces = tempfile::tempdir().unwrap();
    options.workspaces = workspaces.path().to_path_buf();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let service = Service::new(store.clone(), key.clone(), options, &url);
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let served = tokio::spawn(toolsmith_server::serve(listener, service.clone(), async {
        let _ = stopped.await;
    }));
    Running {
        stop,
        served,
        url,
        service,
        store,
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        workspaces,
        key,
    }
}

impl Running {
    /// Shuts the service down (as SIGTERM does) and waits until `serve` returns: how long
    /// that took.
    pub async fn shut_down(self) -> Duration {
        let begun = std::time::Instant::now();
        let _ = self.stop.send(());
        self.served.await.unwrap();
        begun.elapsed()
    }

    /// Creates an account: its secret.
    pub async fn account(&self, name: &str) -> String {
        admin::create_account(&self.service, name).await.unwrap()
    }

    /// Stores an agent config for `account`.
    pub async fn agent(&self, account: &str, id: &str, config: Value) {
        self.service.put_agent(account, id, &config).await.unwrap();
    }

    /// `POST path` with `body` and the bearer `secret`: status and body text.
    pub async fn post(&self, path: &str, secret: &str, body: &Value) -> (u16, String) {
        let response = self
            .client
            .post(format!("{}{path}", self.url))
            .bearer_auth(secret)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    /// `GET path` with the bearer `secret`: status and JSON body.
    pub async fn get(&self, path: &str, secret: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(secret)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Polls an event's status until it is not `processing` (at most 30 s).
    pub async fn settled(&self, secret: &str, agent: &str, event: &str) -> Value {
        for _ in 0..600 {
            let (status, body) = self
                .get(&format!("/status/{event}?agentId={agent}"), secret)
                .await;
            assert_eq!(status, 200, "{body}");
            if body["status"] != "processing" {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("event {event} still processing after 30 s");
    }
}

/// A run request's body.
pub fn run_body(agent: &str, event: &str, conversation: &str, text: &str) -> Value {
    json!({
        "agentId": agent,
        "eventId": event,
        "conversationKey": conversation,
        "events": [{"role": "user", "content": text}],
    })
}

/// The `data:` events of an SSE body, and its comment lines.
pub fn parse_sse(body: &str) -> (Vec<Value>, Vec<String>) {
    let mut events = Vec::new();
    let mut comments = Vec::new();
    for line in body.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            events.push(serde_json::from_str(data).unwrap());
        } else if let Some(comment) = line.strip_prefix(": ") {
            comments.push(comment.to_string());
        }
    }
    (events, comments)
}

/// The `type`s of `events`.
pub fn types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

/// An agent config on the mock model at `base`.
pub fn config(base: &str, tools: Value) -> Value {
    json!({
        "model": {"provider": "openai-compatible", "name": "mock", "baseUrl": base},
        "tools": tools,
    })
}
