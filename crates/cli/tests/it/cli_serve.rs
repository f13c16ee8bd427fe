//! `toolsmith serve` as a real process: accounts and agents made by the command line, a run
//! over HTTP, a replica killed with SIGKILL mid-run whose run another replica takes over at
//! once (same host: its process is known to be gone) and finishes, and one stopped with
//! SIGTERM, which hands its run back and exits without waiting for the model.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{serve_with, sse};

const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

pub(crate) fn toolsmith(dir: &std::path::Path) -> Command {
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
    let mut command = toolsmith(dir);
    command.args(["serve", "--listen", "127.0.0.1:0", "--db", db]);
    let (child, url) = spawn_serve(command);
    (child, url.unwrap_or_else(|line| panic!("{line}")))
}

/// Spawns `command` (a `toolsmith serve` on a free port): the process, and its URL — or what
/// it printed instead of saying where it listens (nothing, if it died first).
pub(crate) fn spawn_serve(command: Command) -> (Child, Result<String, String>) {
    let (child, url, _) = spawn_serve_logged(command);
    (child, url)
}

/// [`spawn_serve`], and what the process writes to its standard error from then on.
pub(crate) fn spawn_serve_logged(
    mut command: Command,
) -> (Child, Result<String, String>, Arc<std::sync::Mutex<String>>) {
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap_or_default();
    let url = line
        .trim()
        .strip_prefix("toolsmith serve: listening on ")
        .map(str::to_string)
        .ok_or(line);
    // Keep reading its stderr so that it never blocks on a full pipe.
    let log = Arc::new(std::sync::Mutex::new(String::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let mut kept = kept.lock().unwrap();
            kept.push_str(&line);
            kept.push('\n');
        }
    });
    (child, url, log)
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

/// A model whose first answer takes 30 s (long enough to stop the replica waiting for it),
/// and the others none: its base URL, and how many calls it had.
fn slow_first_model() -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let base = serve_with(move |_| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_secs(30));
        }
        answer("Taken over and done.")
    });
    (base, calls)
}

/// Account `acme` and its agent `helper` on the model at `base`, made by the command line:
/// the account's secret.
fn account_and_agent(dir: &std::path::Path, db: &str, base: &str) -> String {
    let out = toolsmith(dir)
        .args(["accounts", "create", "acme", "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secret = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(secret.starts_with("ts_acme_"), "{secret}");
    let config = dir.join("agent.json");
    let agent = json!({"model": {"provider": "openai-compatible", "name": "m", "baseUrl": base}, "tools": {}});
    std::fs::write(&config, agent.to_string()).unwrap();
    let out = toolsmith(dir)
        .args([
            "agents",
            "put",
            "helper",
            "--account",
            "acme",
            "--db",
            db,
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
    secret
}

/// Starts run `e1` in the background on the replica at `url`, and waits until its model call
/// is under way.
async fn start_run(client: &reqwest::Client, url: &str, secret: &str, calls: &AtomicUsize) {
    let body = json!({"agentId": "helper", "eventId": "e1", "conversationKey": "c1",
                      "events": [{"role": "user", "content": "Hello"}]});
    let response = client
        .post(format!("{url}/async"))
        .bearer_auth(secret)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    for _ in 0..100 {
        if calls.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts another replica on `db`, waits for it to finish run `e1` and stops it; the run
/// ended as the model's second answer says, the model asked twice in all.
async fn finished_elsewhere(dir: &std::path::Path, db: &str, secret: &str, calls: &AtomicUsize) {
    let (mut second, url) = serve(dir, db);
    let done = status(&reqwest::Client::new(), &url, secret).await;
    second.kill().unwrap();
    let _ = second.wait();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], "Taken over and done.");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the model was asked again, once"
    );
}

/// A replica whose run `e1` waits for the model's slow first answer: the data folder, the
/// database, the account's secret, the model's call count and the replica.
async fn mid_run() -> (tempfile::TempDir, String, String, Arc<AtomicUsize>, Child) {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("service.db").display());
    let (base, calls) = slow_first_model();
    let secret = account_and_agent(dir.path(), &db, &base);
    let (first, url) = serve(dir.path(), &db);
    start_run(&reqwest::Client::new(), &url, &secret, &calls).await;
    (dir, db, secret, calls, first)
}

#[tokio::test]
async fn a_killed_replicas_run_is_taken_over_at_once_by_another() {
    let (dir, db, secret, calls, mut first) = mid_run().await;
    first.kill().unwrap();
    first.wait().unwrap();

    let started = std::time::Instant::now();
    finished_elsewhere(dir.path(), &db, &secret, &calls).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "taken over at once, not after the 15 s lease: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_replica_stopped_with_sigterm_hands_its_run_back_and_exits_at_once() {
    let (dir, db, secret, calls, mut first) = mid_run().await;

    // SIGTERM while the model answers: the model call is dropped (it changes nothing), the
    // run is handed back, and the process ends cleanly without waiting for the model.
    let stopping = std::time::Instant::now();
    let killed = Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let exit = first.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "{:?}",
        stopping.elapsed()
    );

    // Started again on the database, the service goes on with the run at once.
    finished_elsewhere(dir.path(), &db, &secret, &calls).await;
}

/// The soft and hard open-files limits of process `pid`, from `/proc/<pid>/limits`.
fn open_files_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let mut numbers = line["Max open files".len()..].split_whitespace();
    (
        numbers.next().unwrap().to_string(),
        numbers.next().unwrap().to_string(),
    )
}

#[test]
fn serve_raises_its_soft_open_files_limit_to_the_hard_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("service.db").display());
    // Started as many systems start a process: a soft limit far below the hard one. `exec`
    // keeps the shell's pid, so the child is the service.
    let mut command = Command::new("sh");
    command.args(["-c", "ulimit -Sn 256 && exec \"$0\" \"$@\""]);
    let inner = toolsmith(dir.path());
    command
        .arg(inner.get_program())
        .args(["serve", "--listen", "127.0.0.1:0", "--db", &db]);
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let (mut child, url) = spawn_serve(command);
    url.unwrap_or_else(|line| panic!("{line}"));
    let hard = open_files_limits(child.id()).1;
    // The line is printed before the limit is raised: wait for it (5 s at most).
    let mut soft = String::new();
    for _ in 0..500 {
        soft = open_files_limits(child.id()).0;
        if soft == hard {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(
        hard, "256",
        "the hard limit is above the soft one started with"
    );
    assert_eq!(soft, hard, "the soft limit is raised to the hard one");
}
