//! `toolsmith serve` as a real process: accounts and agents made by the command line, a run
//! over HTTP, and a replica killed with SIGKILL mid-run whose run another replica takes over
//! at once (same host: its process is known to be gone) and finishes.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{serve_with, sse};

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn toolsmith(dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    command
        .env("TOOLSMITH_SECRET_KEY", KEY)
        .env("XDG_DATA_HOME", dir)
        .env_remove("TOOLSMITH_DB")
        .env_remove("OPENAI_API_KEY");
    command
}

/// Starts `toolsmith serve` on a free port: the process and its URL.
fn serve(dir: &std::path::Path, db: &str) -> (Child, String) {
    let mut child = toolsmith(dir)
        .args(["serve", "--listen", "127.0.0.1:0", "--db", db])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("toolsmith serve: listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    // Keep reading its stderr so that it never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, url)
}

/// A Chat Completions chunk stream answering `text`.
fn answer(text: &str) -> String {
    sse(
        &[
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
            json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        false,
        true,
    )
}

async fn status(client: &reqwest::Client, url: &str, secret: &str) -> Value {
    for _ in 0..300 {
        let body: Value = client
            .get(format!("{url}/status/e1?agentId=helper"))
            .bearer_auth(secret)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if body["status"] != "processing" {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("e1 still processing after 30 s");
}

#[tokio::test]
async fn a_killed_replicas_run_is_taken_over_at_once_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("service.db").display());
    // The model's first answer takes 30 s: long enough to kill the replica waiting for it.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let base = serve_with(move |_| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_secs(30));
        }
        answer("Taken over and done.")
    });
    let out = toolsmith(dir.path())
        .args(["accounts", "create", "acme", "--db", &db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secret = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(secret.starts_with("ts_acme_"), "{secret}");
    let config = dir.path().join("agent.json");
    let agent = json!({"model": {"provider": "openai-compatible", "name": "m", "baseUrl": base}, "tools": {}});
    std::fs::write(&config, agent.to_string()).unwrap();
    let out = toolsmith(dir.path())
        .args([
            "agents",
            "put",
            "helper",
            "--account",
            "acme",
            "--db",
            &db,
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let client = reqwest::Client::new();
    let (mut first, url) = serve(dir.path(), &db);
    let body = json!({"agentId": "helper", "eventId": "e1", "conversationKey": "c1",
                      "events": [{"role": "user", "content": "Hello"}]});
    let response = client
        .post(format!("{url}/async"))
        .bearer_auth(&secret)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    // Wait for the model call to be under way, then kill the replica.
    for _ in 0..100 {
        if calls.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    first.kill().unwrap();
    first.wait().unwrap();

    let started = std::time::Instant::now();
    let (mut second, url) = serve(dir.path(), &db);
    let done = status(&client, &url, &secret).await;
    second.kill().unwrap();
    let _ = second.wait();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], "Taken over and done.");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the model was asked again, once"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "taken over at once, not after the 15 s lease: {:?}",
        started.elapsed()
    );
}
