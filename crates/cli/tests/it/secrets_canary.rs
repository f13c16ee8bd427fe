//! Canary secrets, given every way a secret reaches toolsmith — the provider's API key, a secret
//! variable, a credential in an agent config, an account's stored credential, the admin secret —
//! through whole runs with tools, a sub-agent, a durable store, debug logs and exported traces
//! with message content captured, on the command line and in the service (its console
//! included). Every output, log, database file, exported span and request to the model is then
//! scanned for each canary and its common encodings (base64 at every alignment, standard and
//! URL-safe; hex; URL-encoding): no hit.
//!
//! The webhook's worker is hostile: it answers with the config's credential it was sent and
//! with the secret variable's value, so the tool result itself carries them.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{Value, json};

use crate::cli_serve::{spawn_serve_logged, toolsmith};
use crate::common::{Received, serve_with, sse};

/// The provider's API key.
const API_KEY: &str = "sk-CANARYkey/7f3+Q=x1";
/// A secret variable's value.
const VARIABLE: &str = "tok-CANARYvar/4e1+Z=x2";
/// A credential written in an agent config (a webhook's header).
const CONFIG: &str = "cfg-CANARYhdr/9a2+W=x3";
/// An account's stored credential (the service).
const ACCOUNT_KEY: &str = "sk-CANARYacct/5b7+R=x4";
/// The service's admin secret.
const ADMIN: &str = "adm-CANARYadmin/2c8+T=x5";

/// `secret` as it would appear in text: as it is, in hex, URL-encoded, and the part of its
/// base64 (standard and URL-safe) that any base64 of a text holding it contains, whatever the
/// alignment.
fn forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string()];
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_uppercase());
    forms.push(hex);
    let url: String = secret
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    forms.push(url);
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE,
    ] {
        for pad in 0..3 {
            let encoded = engine.encode(format!("{}{secret}", "x".repeat(pad)));
            // The characters that depend only on the secret's bytes.
            forms.push(encoded[4..encoded.len() - 4].to_string());
        }
    }
    forms
}

/// Asserts that no canary, in any form, is in `bytes` (named `what`).
fn clean(what: &str, bytes: &[u8], canaries: &[&str]) {
    let text = String::from_utf8_lossy(bytes);
    for canary in canaries {
        for form in forms(canary) {
            assert!(
                !text.contains(&form),
                "{what} holds {canary} (as {form:?}): …{}…",
                context(&text, &form)
            );
        }
    }
}

fn context(text: &str, form: &str) -> String {
    let at = text.find(form).unwrap_or(0);
    let start = text.floor_char_boundary(at.saturating_sub(200));
    let end = text.floor_char_boundary((at + form.len() + 200).min(text.len()));
    text[start..end].to_string()
}

/// A loopback HTTP server that answers every request with `answer` (of the request) and keeps
/// every request's bytes: its URL and the bytes.
fn capture(
    answer: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (log, answer) = (seen.clone(), Arc::new(answer));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (log, answer) = (log.clone(), answer.clone());
            std::thread::spawn(move || {
                let request = read_all(&mut stream);
                log.lock().unwrap().extend_from_slice(&request);
                let _ = stream.write_all(&answer(&request));
            });
        }
    });
    (url, seen)
}

/// One request's bytes: its head and a `content-length` body.
fn read_all(stream: &mut std::net::TcpStream) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                break;
            }
        }
    }
    bytes
}

fn http_ok(content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The hostile worker: it answers with the headers it was sent and the variable's value.
fn worker() -> (String, Arc<Mutex<Vec<u8>>>) {
    capture(|request| {
        let text = String::from_utf8_lossy(request);
        let auth = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("authorization: ")
                    .or(l.strip_prefix("Authorization: "))
            })
            .unwrap_or("")
            .trim()
            .to_string();
        let body = json!({"sent": auth, "also": format!("the token is {VARIABLE}")});
        http_ok("application/json", &body.to_string())
    })
}

/// The OTLP receiver: every export accepted, kept as bytes (string attributes are plain UTF-8
/// in protobuf).
fn collector() -> (String, Arc<Mutex<Vec<u8>>>) {
    capture(|_| http_ok("application/x-protobuf", ""))
}

fn chunk(delta: Value) -> Value {
    json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]})
}

/// The model: the parent calls the webhook and the sub-agent, then finishes; the sub-agent
/// answers at once. Every request it receives is kept.
fn model(requests: Arc<Mutex<Vec<Received>>>) -> String {
    serve_with(move |request| {
        requests.lock().unwrap().push(request.clone());
        let body = &request.body;
        let tools = body["tools"].to_string();
        let after_tools = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let finish =
            |reason: &str| json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]});
        if !tools.contains("\"helper\"") {
            return sse(
                &[
                    chunk(json!({"role": "assistant", "content": "Checked."})),
                    finish("stop"),
                ],
                false,
                true,
            );
        }
        if after_tools {
            return sse(
                &[
                    chunk(json!({"role": "assistant", "content": "All done."})),
                    finish("stop"),
                ],
                false,
                true,
            );
        }
        let calls = json!([
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "notify", "arguments": "{\"text\":\"deploying\"}"}},
            {"index": 1, "id": "call_2", "type": "function",
             "function": {"name": "helper", "arguments": "{\"prompt\":\"Check the deploy.\"}"}},
        ]);
        sse(
            &[
                chunk(json!({"role": "assistant", "tool_calls": calls})),
                finish("tool_calls"),
            ],
            false,
            true,
        )
    })
}

/// An agent config with the webhook (its header the config's credential), the secret variable
/// and the sub-agent.
fn agent_config(worker: &str, model: Option<Value>) -> Value {
    let mut config = json!({
        "variables": [{"name": "DEPLOY_TOKEN", "required": true}],
        "tools": {"notify": {
            "type": "webhook", "url": format!("{worker}/hook"), "description": "Tells the team.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "headers": {"Authorization": format!("Bearer {CONFIG}")},
        }},
        "subagents": [{"name": "helper", "description": "Checks things.",
                       "config": {"instructions": "Check what you are asked."}}],
    });
    if let Some(model) = model {
        config["model"] = model;
    }
    config
}

/// Every file under `dir` whose name starts with `prefix` (a database and its WAL), as bytes.
fn files(dir: &Path, prefix: &str) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            all.extend(std::fs::read(entry.path()).unwrap_or_default());
        }
    }
    assert!(!all.is_empty(), "{prefix}* in {}", dir.display());
    all
}

/// A server process, killed when dropped.
struct Replica(std::process::Child);

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn no_canary_leaves_a_command_line_run() {
    let dir = tempfile::tempdir().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let base = model(requests.clone());
    let (worker_url, worker_seen) = worker();
    let (otlp, exported) = collector();
    let config = dir.path().join("agent.json");
    std::fs::write(&config, agent_config(&worker_url, None).to_string()).unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let db = format!("sqlite:{}", dir.path().join("runs.db").display());
    let out = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args([
            "run",
            "--model",
            "openai:gpt-x",
            "--base-url",
            &base,
            "--json",
        ])
        .args(["--db", &db, "--thread", "t", "--approve", "auto"])
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(&root)
        .arg("Deploy, tell the team, have it checked.")
        .env("OPENAI_API_KEY", API_KEY)
        .env("DEPLOY_TOKEN", VARIABLE)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .env("TOOLSMITH_LOG", "debug")
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The run went where the scan looks: the worker and the sub-agent ran, spans went out.
    assert!(stdout.contains("All done."), "{stdout}");
    assert!(
        stdout.contains("Checked."),
        "the sub-agent answered: {stdout}"
    );
    let exported = exported.lock().unwrap().clone();
    assert!(
        String::from_utf8_lossy(&exported).contains("execute_tool notify"),
        "the spans were exported"
    );
    assert!(
        String::from_utf8_lossy(&worker_seen.lock().unwrap()).contains(CONFIG),
        "the worker got its header (the one place it belongs)"
    );

    let all = [API_KEY, VARIABLE, CONFIG];
    clean("the --json output", &out.stdout, &all);
    clean("standard error (debug logs)", &out.stderr, &all);
    clean("the database", &files(dir.path(), "runs.db"), &all);
    clean("the exported spans and metrics", &exported, &all);
    for request in requests.lock().unwrap().iter() {
        clean(
            "a request body to the model",
            request.body.to_string().as_bytes(),
            &all,
        );
    }
    clean(
        "the workspace",
        &std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .flat_map(|e| std::fs::read(e.path()).unwrap_or_default())
            .collect::<Vec<u8>>(),
        &all,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_canary_leaves_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let base = model(requests.clone());
    let (worker_url, _) = worker();
    let (otlp, exported) = collector();
    let db = format!("sqlite:{}", dir.join("service.db").display());
    let mut command = toolsmith(dir);
    command
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--db",
            &db,
            "--allow-private-webhooks",
        ])
        .env("TOOLSMITH_ADMIN_SECRET", ADMIN)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        .env("TOOLSMITH_LOG", "debug");
    let (replica, url, log) = spawn_serve_logged(command);
    // Killed however the test ends (a panic included): no server outlives it.
    let mut replica = Replica(replica);
    let url = url.unwrap();
    let client = reqwest::Client::new();
    let admin = |path: String| client.put(format!("{url}{path}")).bearer_auth(ADMIN);
    let created: Value = client
        .post(format!("{url}/admin/accounts"))
        .bearer_auth(ADMIN)
        .json(&json!({"name": "acme"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let secret = created["secret"].as_str().unwrap().to_string();
    let put = admin("/admin/accounts/acme/credentials/OPENAI_API_KEY".into())
        .json(&json!({"value": ACCOUNT_KEY}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 204);
    // The model is OpenAI's, at the mock's URL: the account's own key is what it is sent.
    let mut config = agent_config(
        &worker_url,
        Some(json!({"provider": "openai", "name": "gpt-x", "baseUrl": base})),
    );
    // A service's variables come from the config or the thread, never the environment: the
    // worker still answers with the value, but nothing declares it a secret here.
    config.as_object_mut().unwrap().remove("variables");
    let put = client
        .put(format!("{url}/agents/ops"))
        .bearer_auth(&secret)
        .json(&config)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200, "{}", put.text().await.unwrap());

    let run = json!({"agentId": "ops", "eventId": "e1", "conversationKey": "c1",
                     "events": [{"role": "user", "content": "Deploy, tell the team, have it checked."}]});
    let streamed = client
        .post(format!("{url}/"))
        .bearer_auth(&secret)
        .json(&run)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(streamed.contains("All done."), "{streamed}");
    let mut answers = streamed.into_bytes();
    let get = |path: String| {
        let request = client.get(format!("{url}{path}")).bearer_auth(&secret);
        async move { request.send().await.unwrap().bytes().await.unwrap() }
    };
    for path in ["/status/e1?agentId=ops", "/agents", "/console/api/agents"] {
        answers.extend_from_slice(&get(path.to_string()).await);
    }
    let runs = get("/console/api/runs".to_string()).await;
    answers.extend_from_slice(&runs);
    let runs: Value = serde_json::from_slice(&runs).unwrap();
    let thread = runs["runs"][0]["threadId"].as_str().unwrap().to_string();
    let detail = get(format!("/console/api/runs/{thread}")).await;
    assert!(String::from_utf8_lossy(&detail).contains("Checked."));
    answers.extend_from_slice(&detail);
    // Stopped as an operator would: exported spans are flushed on the way out.
    let stopped = Command::new("kill")
        .args(["-TERM", &replica.0.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let _ = replica.0.wait();
    // The log thread reads to the end of the pipe.
    std::thread::sleep(std::time::Duration::from_millis(200));

    let all = [CONFIG, ACCOUNT_KEY, ADMIN];
    clean("the service's answers", &answers, &all);
    let log = log.lock().unwrap().clone();
    assert!(log.contains("DEBUG"), "debug logs were written: {log}");
    clean("standard error (debug logs)", log.as_bytes(), &all);
    clean("the database", &files(dir, "service.db"), &all);
    let exported = exported.lock().unwrap().clone();
    assert!(
        String::from_utf8_lossy(&exported).contains("invoke_agent"),
        "spans went out"
    );
    clean("the exported spans and metrics", &exported, &all);
    for request in requests.lock().unwrap().iter() {
        clean(
            "a request body to the model",
            request.body.to_string().as_bytes(),
            &all,
        );
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {ACCOUNT_KEY}").as_str()),
            "the account's key goes to its model, in its header only"
        );
    }
}
