//! A loopback server that speaks SSE, for the CLI's wire tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

/// A request the server received: path, lower-case headers, JSON body.
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
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Serves `replies` (SSE bodies) one per connection, in order, on a loopback port.
pub fn serve(replies: Vec<String>) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = received.clone();
    thread::spawn(move || {
        for (reply, stream) in replies.into_iter().zip(listener.incoming()) {
            let mut stream = stream.unwrap();
            let request = read_request(&mut stream);
            log.lock().unwrap().push(request);
            write_sse(&mut stream, &reply);
        }
    });
    (base, received)
}

/// Serves every connection (each on its own thread) with the SSE body `respond` makes of the
/// request, for as long as the test runs; the base URL.
pub fn serve_with(respond: impl Fn(&Received) -> String + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let respond = Arc::new(respond);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let respond = respond.clone();
            thread::spawn(move || {
                let request = read_request(&mut stream);
                write_sse(&mut stream, &respond(&request));
            });
        }
    });
    base
}

/// Reads one HTTP request: its path, headers and JSON body.
fn read_request(stream: &mut TcpStream) -> Received {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap_or_default();
    let path = line.split(' ').nth(1).unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap_or_default();
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.push((name.trim().to_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    Received {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}

/// Answers with `reply` as an SSE stream, written in small pieces so that the client decodes
/// events split across reads. A client that went away (killed) is not an error.
fn write_sse(stream: &mut TcpStream, reply: &str) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    for piece in reply.as_bytes().chunks(17) {
        if stream
            .write_all(piece)
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
}

/// `data: …` events (with `event:` names when `named`), one per JSON value.
pub fn sse(events: &[Value], named: bool, done: bool) -> String {
    let mut out = String::new();
    for event in events {
        if named && let Some(kind) = event["type"].as_str() {
            out.push_str(&format!("event: {kind}\n"));
        }
        out.push_str(&format!("data: {event}\n\n"));
    }
    if done {
        out.push_str("data: [DONE]\n\n");
    }
    out
}

/// A Chat Completions turn (for [`serve`]) calling `tool` with `input`.
pub fn chat_call(tool: &str, input: Value) -> String {
    let call = json!({"index": 0, "id": "call_1", "type": "function",
                      "function": {"name": tool, "arguments": input.to_string()}});
    sse(
        &[
            json!({"id": "c", "model": "m", "choices": [{"index": 0,
                "delta": {"role": "assistant", "tool_calls": [call]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ],
        false,
        true,
    )
}

/// A Chat Completions turn answering `Done.`.
pub fn chat_done() -> String {
    sse(
        &[
            json!({"id": "c", "model": "m", "choices": [{"index": 0,
                "delta": {"role": "assistant", "content": "Done."}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        false,
        true,
    )
}

/// `toolsmith run --json --config <config>` on `openai:gpt-x` at `base`, with `args` added, the
/// prompt `What is 6 * 7?`, and no terminal.
pub fn run_config(base: &str, config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["run", "--model", "openai:gpt-x", "--base-url", base])
        .args(["--api-key", "sk-test-key", "--json"])
        .args(args)
        .arg("--config")
        .arg(config)
        .arg("What is 6 * 7?")
        .env_remove("TOOLSMITH_MODEL")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// Runs the shell `command` on a pseudo-terminal (util-linux's `script`), with `env` set and
/// the model and store variables of the caller's environment removed, answering `input` at its
/// prompts: the screen, without carriage returns.
pub fn on_a_terminal(command: &str, env: &[(&str, &str)], input: &str) -> String {
    let mut child = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .envs(env.iter().copied())
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux script runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

/// Serves every connection (each on its own thread) with the raw bytes `respond` makes of the
/// request (a whole HTTP response, or part of one: the connection is closed after them), and
/// its number from 0; the base URL.
pub fn serve_raw(respond: impl Fn(usize, &Received) -> Vec<u8> + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let respond = Arc::new(respond);
    thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let respond = respond.clone();
            thread::spawn(move || {
                let request = read_request(&mut stream);
                let _ = stream.write_all(&respond(n, &request));
            });
        }
    });
    base
}
