//! Durability under SIGKILL: real `toolsmith run --db …` processes are killed at many
//! different points of runs that call a read-only tool (`read`), a counting side-effect tool
//! (`bash` appending the call's own token to `count.txt`: not idempotent) and a tool that needs
//! approval (`write`, left paused: nobody is at the terminal). Each thread is then resumed
//! (`--resume`, itself killed at first) until it completes. Every run completes, every call has
//! exactly one result, and no call's side effect happened twice. On SQLite and on a real
//! PostgreSQL server; and two processes resuming one thread at once: exactly one proceeds.

#[path = "../../../store/tests/it/common/pg_server.rs"]
pub(crate) mod pg_server;

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::common::{Received, serve_with, sse};
use serde_json::{Value, json};
use toolsmith::store::{Store, ThreadStatus};
use toolsmith::{Part, Role};

/// The lease the test runs use: a killed run's thread can be taken over this long after.
pub(crate) const LEASE_SECS: f64 = 0.4;

static NEXT: AtomicU64 = AtomicU64::new(1);

/// The scripted model, deciding from the conversation alone (so that it answers a resumed run
/// as it would have the first): read and count, then write, then finish.
pub(crate) fn model(request: &Received) -> String {
    // A little latency, so that kills land during model calls too.
    std::thread::sleep(Duration::from_millis(15));
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: HashMap<String, String> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| {
            Some((
                c["id"].as_str()?.into(),
                c["function"]["name"].as_str()?.into(),
            ))
        })
        .collect();
    // The tools whose calls have results; a write whose effect is unknown is made again (the
    // model checks and retries), a count whose effect is unknown is not.
    let called: HashSet<String> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| {
            let name = names.get(m["tool_call_id"].as_str()?)?;
            let unknown = m["content"].to_string().contains("interrupted");
            (!(unknown && name == "write")).then(|| name.clone())
        })
        .collect();
    let call = |index: usize, name: &str, args: Value| {
        let id = format!("call_{}", NEXT.fetch_add(1, Ordering::SeqCst));
        json!({"index": index, "id": id, "type": "function",
               "function": {"name": name, "arguments": args.to_string()}})
    };
    let chunk =
        |delta: Value| json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]});
    let finish =
        |reason: &str| json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]});
    let calls = if !called.contains("bash") {
        let token = format!("token-{}", NEXT.fetch_add(1, Ordering::SeqCst));
        vec![
            call(0, "read", json!({"path": "README.md"})),
            call(
                1,
                "bash",
                json!({"cmd": "sh", "args": ["-c", format!("echo {token} >> count.txt")]}),
            ),
        ]
    } else if !called.contains("write") {
        vec![call(
            0,
            "write",
            json!({"path": "notes.txt", "content": "done"}),
        )]
    } else {
        return sse(
            &[
                chunk(json!({"role": "assistant", "content": "All done."})),
                finish("stop"),
            ],
            false,
            true,
        );
    };
    sse(
        &[
            chunk(json!({"role": "assistant", "tool_calls": calls})),
            finish("tool_calls"),
        ],
        false,
        true,
    )
}

/// `toolsmith run` on the scripted model, storing thread `thread` in `db`.
pub(crate) fn toolsmith(base: &str, db: &str, root: &Path, thread: &str, resume: bool) -> Command {
    toolsmith_leased(base, db, root, thread, resume, LEASE_SECS)
}

/// [`toolsmith`] with a lease of `lease` seconds.
pub(crate) fn toolsmith_leased(
    base: &str,
    db: &str,
    root: &Path,
    thread: &str,
    resume: bool,
    lease: f64,
) -> Command {
    let config = root.parent().unwrap().join("agent.json");
    if !config.exists() {
        let agent = json!({
            "tools": {
                "read": {"enabled": true},
                // Runs without asking: `toolsmith run` asks about bash by default.
                "bash": {"enabled": true, "needsApproval": false},
                "write": {"needsApproval": true}
            }
        });
        std::fs::write(&config, agent.to_string()).unwrap();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    command
        .args(["run", "--model", "openai:gpt-x", "--base-url", base])
        .args([
            "--api-key",
            "sk-test-key",
            "--json",
            "--db",
            db,
            "--thread",
            thread,
        ])
        .args(["--lease", &lease.to_string()])
        .arg("--config")
        .arg(&config)
        .arg("--root")
        .arg(root)
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        // Approval ids are signed with a key derived from this one, in every process.
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if resume {
        command.args(["--resume", "--approve", "auto"]);
    } else {
        // Nobody can answer the approval: the stored run stays paused.
        command.args([
            "--approve",
            "ask",
            "Read the README, count, then write notes.",
        ]);
    }
    command
}

/// Runs `command`, killing it with SIGKILL after `kill_after` if it is still running then.
pub(crate) fn run_killed(mut command: Command, kill_after: Option<Duration>) -> Option<Output> {
    let mut child: Child = command.spawn().expect("the binary runs");
    let Some(after) = kill_after else {
        return Some(child.wait_with_output().unwrap());
    };
    let start = Instant::now();
    while start.elapsed() < after {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    None
}

/// The `i`th of `n` kill points spread over `span` (a run's length without kills), shifted
/// by `salt` so that different runs are cut at different places.
fn kill_point(i: u64, n: u64, span: Duration, salt: u64) -> Duration {
    let slot = ((i * 7 + salt * 3) % n) as f64 + 0.5;
    span.mul_f64(slot / n as f64)
}

/// A workspace folder `name` in `dir` with the README the scripted runs read.
pub(crate) fn workspace(dir: &Path, name: &str) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("README.md"), "# A workspace\n").unwrap();
    root
}

/// The URL of a SQLite store in `dir`.
pub(crate) fn sqlite_in(dir: &Path) -> String {
    format!("sqlite:{}", dir.join("runs.db").display())
}

/// Kills runs of `threads` threads at many points, resumes each to completion and checks it.
async fn crash_and_resume(db: &str, threads: u64) {
    let base = serve_with(model);
    let store = toolsmith::store::open(db).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // How long a first run (to the approval) and a resumption take without kills.
    let root = workspace(dir.path(), "ws-calibration");
    let start = Instant::now();
    run_killed(toolsmith(&base, db, &root, "calibration", false), None).unwrap();
    let first_span = start.elapsed();
    let start = Instant::now();
    run_killed(toolsmith(&base, db, &root, "calibration", true), None).unwrap();
    let resume_span = start.elapsed();
    check_thread(&*store, "calibration", &root).await;

    let mut killed = 0;
    let mut outcomes: std::collections::BTreeMap<String, u32> = Default::default();
    for i in 0..threads {
        let root = workspace(dir.path(), &format!("ws-{i}"));
        let thread = format!("crash-{i}");
        let first = toolsmith(&base, db, &root, &thread, false);
        let kill = kill_point(i, threads, first_span, 0);
        killed += u32::from(run_killed(first, Some(kill)).is_none());
        for attempt in 0..40 {
            let found = store.thread(&thread).await.unwrap();
            if found.as_ref().is_none_or(|t| t.message_count == 0) {
                // Killed before the prompt was stored (the thread may have been created):
                // nothing ran, nothing to resume; the run is started again.
                let first = toolsmith(&base, db, &root, &thread, false);
                run_killed(first, None).unwrap();
                continue;
            }
            let found = found.unwrap();
            if found.status == ThreadStatus::Idle {
                break;
            }
            assert!(attempt < 39, "thread {thread} never completed: {found:?}");
            // A killed run's thread is taken over at once (its holder is gone), unless the
            // kill came between the prompt's save and the claim: then its lease must pass.
            std::thread::sleep(Duration::from_secs_f64(LEASE_SECS + 0.05));
            // The first two resumptions are killed too, at other points.
            let kill = (attempt < 2).then(|| kill_point(i, threads, resume_span, attempt + 1));
            let out = run_killed(toolsmith(&base, db, &root, &thread, true), kill);
            if let Some(out) = out {
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(
                    out.status.success() || stderr.contains("another process"),
                    "resume failed: {stderr}"
                );
            }
        }
        check_thread(&*store, &thread, &root).await;
        for entry in store.journal(&thread).await.unwrap() {
            *outcomes
                .entry(format!("{} {}", entry.tool_name, entry.status.as_str()))
                .or_default() += 1;
            if entry.attempt > 1 {
                *outcomes
                    .entry(format!("{} retried", entry.tool_name))
                    .or_default() += 1;
            }
        }
    }
    // What the kills caught, for the log: settled calls, unknown effects, retried reads.
    eprintln!("{db}: {killed} of {threads} first runs killed; journal: {outcomes:?}");
    assert!(
        killed > threads as u32 / 2,
        "most first runs were killed mid-way"
    );
}

/// Every call answered once, the run finished, no side effect twice.
pub(crate) async fn check_thread(store: &dyn Store, thread: &str, root: &Path) {
    let messages = store.messages(thread).await.unwrap();
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    let mut results: HashMap<String, u32> = HashMap::new();
    let mut failed: HashSet<String> = HashSet::new();
    for message in &messages {
        for part in &message.content {
            match part {
                Part::ToolCall(call) => {
                    let old = calls.insert(
                        call.tool_call_id.clone(),
                        (call.tool_name.clone(), call.input.clone()),
                    );
                    assert!(old.is_none(), "call {} made twice", call.tool_call_id);
                }
                Part::ToolResult(result) => {
                    *results.entry(result.tool_call_id.clone()).or_default() += 1;
                    let output = serde_json::to_value(&result.output).unwrap();
                    let kind = output["type"].as_str().unwrap_or_default();
                    if kind.starts_with("error") || kind == "execution-denied" {
                        failed.insert(result.tool_call_id.clone());
                    }
                }
                _ => {}
            }
        }
    }
    for id in calls.keys() {
        assert_eq!(
            results.get(id),
            Some(&1),
            "call {id} has one result: {messages:#?}"
        );
    }
    assert_eq!(results.len(), calls.len(), "no result without its call");
    let last = messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.text(), "All done.", "the run finished");
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt"))
            .ok()
            .as_deref(),
        Some("done"),
        "the approved write ran: {}",
        serde_json::to_string_pretty(&messages).unwrap()
    );

    // The counter: each line is the token of the call that wrote it.
    let count = std::fs::read_to_string(root.join("count.txt")).unwrap_or_default();
    let lines: Vec<&str> = count.lines().collect();
    let unique: HashSet<&str> = lines.iter().copied().collect();
    assert_eq!(
        lines.len(),
        unique.len(),
        "a side effect ran twice: {lines:?}"
    );
    let tokens: HashMap<&str, &str> = calls
        .iter()
        .filter(|(_, (name, _))| name == "bash")
        .map(|(id, (_, input))| {
            let script = input["args"][1].as_str().unwrap();
            (script.split_whitespace().nth(1).unwrap(), id.as_str())
        })
        .collect();
    for line in &lines {
        assert!(
            tokens.contains_key(line),
            "{line} was written by a call in the thread"
        );
    }
    for (token, id) in &tokens {
        if !failed.contains(*id) {
            assert!(
                unique.contains(token),
                "the succeeded call {id} wrote {token}"
            );
        }
    }
    let journal = store.journal(thread).await.unwrap();
    for entry in journal.iter().filter(|e| e.tool_name == "bash") {
        assert_eq!(
            entry.attempt, 1,
            "a non-idempotent call is never attempted twice"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_runs_survive_sigkill_at_any_point() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_in(dir.path());
    crash_and_resume(&db, 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_runs_survive_sigkill_at_any_point() {
    let Some(server) = pg_server::PgServer::start() else {
        return;
    };
    let db = server.database().await;
    crash_and_resume(&db, 8).await;
}

/// Two processes resume one paused thread at once, three times over. The model answers
/// slowly (half a second), so that the winner still holds the thread when the other process
/// looks: exactly one proceeds, and the other is told that another process continues it (not
/// that there is nothing to resume, which is what a sequential second resumption would hear).
async fn resume_race(db: &str, dir: &Path) {
    let base = serve_with(|request| {
        std::thread::sleep(Duration::from_millis(500));
        model(request)
    });
    let store = toolsmith::store::open(db).await.unwrap();
    for i in 0..3 {
        let root = workspace(dir, &format!("ws-{i}"));
        let thread = format!("race-{i}");
        // Runs until it waits for the write's approval.
        let out = run_killed(toolsmith(&base, db, &root, &thread, false), None).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let paused = store.thread(&thread).await.unwrap().unwrap();
        assert_eq!(paused.status, ThreadStatus::Paused);

        let a = toolsmith(&base, db, &root, &thread, true).spawn().unwrap();
        let b = toolsmith(&base, db, &root, &thread, true).spawn().unwrap();
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let outcomes = [&a, &b];
        let won = outcomes.iter().filter(|o| o.status.success()).count();
        assert_eq!(won, 1, "exactly one resumption proceeds");
        let lost = outcomes.iter().find(|o| !o.status.success()).unwrap();
        let stderr = String::from_utf8_lossy(&lost.stderr);
        assert!(
            stderr.contains(&format!(
                "thread {thread} is being continued by another process"
            )),
            "the other gets a clear error: {stderr}"
        );
        check_thread(&*store, &thread, &root).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_resuming_one_thread_one_proceeds() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_in(dir.path());
    resume_race(&db, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_resuming_one_thread_one_proceeds_on_postgres() {
    let Some(server) = pg_server::PgServer::start() else {
        return;
    };
    let db = server.database().await;
    let dir = tempfile::tempdir().unwrap();
    resume_race(&db, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secret_key_comes_from_the_environment_else_a_private_key_file() {
    let base = serve_with(model);
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_in(dir.path());
    let root = workspace(dir.path(), "ws");
    let config_home = dir.path().join("config");
    let key_file = config_home.join("toolsmith/secret.key");
    let run = |thread: &str| {
        let mut command = toolsmith(&base, &db, &root, thread, false);
        command.env("XDG_CONFIG_HOME", &config_home);
        command
    };

    // With TOOLSMITH_SECRET_KEY set, no key file is made.
    let out = run_killed(run("with-env"), None).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!key_file.exists(), "the environment's key is used");

    // A malformed key is refused, naming the variable but not repeating its value.
    let mut bad = run("bad-env");
    bad.env("TOOLSMITH_SECRET_KEY", "not-a-key-but-a-secret-value");
    let out = run_killed(bad, None).unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TOOLSMITH_SECRET_KEY"), "{stderr}");
    assert!(!stderr.contains("not-a-key-but-a-secret-value"), "{stderr}");

    // Without it, a key file readable only by its owner is made, then reused.
    let mut without = run("with-file");
    without.env_remove("TOOLSMITH_SECRET_KEY");
    let out = run_killed(without, None).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let first = std::fs::read_to_string(&key_file).unwrap();
    let mut again = run("with-file-again");
    again.env_remove("TOOLSMITH_SECRET_KEY");
    assert!(run_killed(again, None).unwrap().status.success());
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), first);
}

/// `toolsmith threads …` on `db`.
fn threads(db: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .arg("threads")
        .args(args)
        .args(["--db", db])
        .env_remove("TOOLSMITH_DB")
        .output()
        .expect("the binary runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threads_list_and_show_print_a_stored_run_with_its_journal() {
    let base = serve_with(model);
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_in(dir.path());
    let root = workspace(dir.path(), "ws");
    let out = run_killed(toolsmith(&base, &db, &root, "shown", false), None).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let list = threads(&db, &["list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success());
    assert!(text.contains("shown") && text.contains("paused"), "{text}");

    let listed: Value = serde_json::from_slice(&threads(&db, &["list", "--json"]).stdout).unwrap();
    let listed = listed.as_array().expect("a JSON array of threads");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], "shown");
    assert_eq!(listed[0]["status"], "paused");
    assert_eq!(listed[0]["messageCount"], 4);

    let show = threads(&db, &["show", "shown"]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("status:   paused"), "{text}");
    assert!(text.contains("waits for: approval of write"), "{text}");
    assert!(text.contains("read (call call_"), "{text}");
    assert!(
        text.contains("bash (call ") && text.contains("succeeded [side effect, not idempotent]"),
        "{text}"
    );

    let json: Value =
        serde_json::from_slice(&threads(&db, &["show", "shown", "--json"]).stdout).unwrap();
    assert_eq!(json["thread"]["status"], "paused");
    assert_eq!(json["journal"].as_array().unwrap().len(), 2);
    assert_eq!(json["messages"].as_array().unwrap().len(), 4);

    let missing = threads(&db, &["show", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr).trim(),
        "error: thread nope does not exist"
    );
    let bad = threads("mysql://root:hunter2@db/x", &["list"]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("unsupported store URL (scheme \"mysql\")"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("hunter2"),
        "the URL's password is never printed"
    );
}
