//! Faults during a durable run: a provider answering 429 and 500 (retried), a provider stream
//! cut in the middle of a tool call, SQLite on a full disk, PostgreSQL crashing mid-run. Each
//! fails the run with a clear error or is got over, `--resume` finishes what failed — and
//! through all of it the side-effecting tool (`bash` appending a line to a file: not
//! idempotent) runs exactly once.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::cli_crash::{pg_server, sqlite_in, workspace};
use crate::common::{serve_raw, sse};

/// A whole HTTP response with `status`, `headers` and `body`.
fn response(status: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The head of a streamed 200 and `body`, the connection closed after it.
fn streamed(body: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}")
        .into_bytes()
}

/// A step that calls `bash` to append `token` to `count.txt`: its events.
fn count_call(token: &str) -> Vec<Value> {
    let arguments = json!({"cmd": "sh", "args": ["-c", format!("echo {token} >> count.txt")]});
    let call = json!({"index": 0, "id": format!("call_{token}"), "type": "function",
                      "function": {"name": "bash", "arguments": arguments.to_string()}});
    vec![
        json!({"id": "c", "model": "m", "choices": [{"index": 0,
            "delta": {"role": "assistant", "tool_calls": [call]}}]}),
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]
}

/// The first event of a tool call and half of its arguments: a stream cut mid-call.
fn cut_call() -> String {
    let call = json!({"index": 0, "id": "call_cut", "type": "function",
                      "function": {"name": "bash", "arguments": "{\"cmd\": \"sh\", \"ar"}});
    sse(
        &[json!({"id": "c", "model": "m", "choices": [{"index": 0,
            "delta": {"role": "assistant", "tool_calls": [call]}}]})],
        false,
        false,
    )
}

fn answer(text: &str) -> String {
    sse(
        &[
            json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}),
            json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        false,
        true,
    )
}

/// Whether the request comes after the tool's result (the run's second step).
fn after_tool(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
}

/// `toolsmith run` (or `--resume`) of thread `t` on `db`, `bash` allowed.
fn run(base: &str, db: &str, root: &Path, resume: bool) -> Output {
    let config = root.join("../agent.json");
    let agent = json!({"tools": {"bash": {"enabled": true, "needsApproval": false}}});
    std::fs::write(&config, agent.to_string()).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    command
        .args(["run", "--model", "openai:gpt-x", "--base-url", base])
        .args(["--json", "--db", db, "--thread", "t"])
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(root)
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .env("OPENAI_API_KEY", "sk-test")
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .stdin(Stdio::null());
    if resume {
        command.arg("--resume");
    } else {
        command.arg("Count once, then say so.");
    }
    command.output().unwrap()
}

fn lines(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("count.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn rate_limits_and_server_errors_are_retried_and_the_tool_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = workspace(dir.path(), "ws");
    let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let base = serve_raw(move |n, request| {
        log.lock().unwrap().push(after_tool(&request.body));
        match n {
            0 => response(
                "429 Too Many Requests",
                "retry-after: 0\r\n",
                r#"{"error":{"message":"slow down"}}"#,
            ),
            1 => response(
                "500 Internal Server Error",
                "",
                r#"{"error":{"message":"oops"}}"#,
            ),
            2 => streamed(&sse(&count_call("one"), false, true)),
            _ => streamed(&answer("Counted once.")),
        }
    });
    let out = run(&base, &sqlite_in(dir.path()), &root, false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lines(&root), ["one"]);
    assert_eq!(
        *seen.lock().unwrap(),
        [false, false, false, true],
        "three tries of the first step"
    );
}

#[test]
fn a_stream_cut_mid_tool_call_fails_the_run_and_resuming_runs_the_tool_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = workspace(dir.path(), "ws");
    let db = sqlite_in(dir.path());
    // The first step's stream is cut once, the second step's once.
    let base = serve_raw(move |n, request| match (n, after_tool(&request.body)) {
        (0, _) => streamed(&cut_call()),
        (_, false) => streamed(&sse(&count_call("one"), false, true)),
        (2, true) => streamed(&cut_call()),
        (_, true) => streamed(&answer("Counted once.")),
    });
    let cut = |out: &Output| {
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success(), "the run fails: {stderr}");
        stderr
    };
    let first = run(&base, &db, &root, false);
    cut(&first);
    let said = String::from_utf8_lossy(&first.stdout);
    let truncated =
        "The Chat Completions stream ended without a finish reason (truncated response).";
    assert!(said.contains(truncated), "a clear error: {said}");
    assert!(lines(&root).is_empty(), "a call cut short never ran");
    let second = cut(&run(&base, &db, &root, true));
    assert_eq!(lines(&root), ["one"], "{second}");
    let third = run(&base, &db, &root, true);
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
    assert_eq!(lines(&root), ["one"], "the call that ran is not run again");
}

/// A tmpfs of `size` mounted at `path` for the test's length (root only: `None` otherwise).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(path: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then(|| Tmpfs(path.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system of `dir` with `dir/filler` until it is full.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0u8; 64 * 1024];
    while filler.write_all(&block).is_ok() {}
    // What a block could not take, a byte at a time.
    while filler.write_all(&[0]).is_ok() {}
    let _ = filler.sync_all();
}

#[test]
fn a_full_disk_fails_the_run_clearly_and_it_resumes_once_space_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&dir.path().join("disk"), "2m") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root: a tmpfs can be mounted"
        );
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let root = workspace(dir.path(), "ws");
    let db = format!("sqlite:{}", disk.0.join("runs.db").display());
    // The answer after the tool is larger than what is left once the model has filled the
    // disk (the first time it is asked for it).
    let big = "All counted. ".repeat(20_000);
    let filled = std::sync::atomic::AtomicBool::new(false);
    let disk_path = disk.0.clone();
    let reply = big.clone();
    let base = serve_raw(move |_, request| {
        if !after_tool(&request.body) {
            return streamed(&sse(&count_call("one"), false, true));
        }
        if !filled.swap(true, std::sync::atomic::Ordering::SeqCst) {
            fill(&disk_path);
        }
        streamed(&answer(&reply))
    });
    let first = run(&base, &db, &root, false);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(!first.status.success(), "the run fails: {said}");
    assert!(
        said.contains("database or disk is full"),
        "a clear error: {said}"
    );
    assert_eq!(lines(&root), ["one"]);

    std::fs::remove_file(disk.0.join("filler")).unwrap();
    let second = run(&base, &db, &root, true);
    assert!(
        second.status.success(),
        "resumed once space is freed: {}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(lines(&root), ["one"], "the call that ran is not run again");
    // The file is whole: the thread reads back, its call answered once, the answer stored.
    let shown = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["threads", "show", "t", "--json", "--db", &db])
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .output()
        .unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let thread: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let text = thread.to_string();
    assert_eq!(
        text.matches("\"tool-result\"").count(),
        1,
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(text.contains("All counted. All counted."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_crashing_mid_run_fails_the_run_cleanly_and_it_resumes_once_back() {
    let Some(server) = pg_server::PgServer::start() else {
        return;
    };
    let db = server.database().await;
    let server = std::sync::Arc::new(server);
    let dir = tempfile::tempdir().unwrap();
    let root = workspace(dir.path(), "ws");
    // While the model answers the step after the tool, the database crashes and comes back a
    // second later: the step's save finds it gone.
    let crashed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (pg, once) = (server.clone(), crashed.clone());
    let base = serve_raw(move |_, request| {
        if !after_tool(&request.body) {
            return streamed(&sse(&count_call("one"), false, true));
        }
        if !once.swap(true, std::sync::atomic::Ordering::SeqCst) {
            pg.crash();
            let pg = pg.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(1));
                pg.start_again();
            });
        }
        streamed(&answer("Counted once."))
    });
    let (base2, db2, root2) = (base.clone(), db.clone(), root.clone());
    let first = tokio::task::spawn_blocking(move || run(&base2, &db2, &root2, false))
        .await
        .unwrap();
    assert!(crashed.load(std::sync::atomic::Ordering::SeqCst));
    eprintln!(
        "PostgreSQL crashed mid-run: the run {}",
        match first.status.success() {
            true => "continued".to_string(),
            false => format!(
                "failed: {}",
                String::from_utf8_lossy(&first.stdout)
                    .lines()
                    .last()
                    .unwrap_or("")
            ),
        }
    );
    if !first.status.success() {
        let said = String::from_utf8_lossy(&first.stdout);
        let error = said.lines().last().unwrap_or_default();
        assert!(
            error.contains("\"type\":\"error\"") && error.contains("store"),
            "a clear error: {said}"
        );
        // Back up (pg_ctl -w waits for it), then resumed.
        for _ in 0..100 {
            if tokio_postgres::connect(&db, tokio_postgres::NoTls)
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let (base2, db2, root2) = (base.clone(), db.clone(), root.clone());
        let second = tokio::task::spawn_blocking(move || run(&base2, &db2, &root2, true))
            .await
            .unwrap();
        assert!(
            second.status.success(),
            "{}",
            String::from_utf8_lossy(&second.stderr)
        );
    }
    assert_eq!(lines(&root), ["one"], "the side effect ran once");
    let store = toolsmith::store::open(&db).await.unwrap();
    let messages = store.messages("t").await.unwrap();
    assert_eq!(messages.last().unwrap().text(), "Counted once.");
    let results = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|p| matches!(p, toolsmith::Part::ToolResult(_)))
        .count();
    assert_eq!(results, 1, "{messages:#?}");
}
