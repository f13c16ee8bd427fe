//! `toolsmith run --db`: a stored thread's cached results (a config's `tools.<name>.cache`)
//! outlive the process — a later run of the thread is served them, another thread is not.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{chat_call, chat_done, serve};

/// One `toolsmith run` of `thread` in `root` on a model that reads `notes.txt` and then
/// answers: the text of the read's result, and whether the run marked it as cached.
fn read_notes(root: &Path, thread: &str) -> (String, bool) {
    let (base, _) = serve(vec![
        chat_call("read", json!({"path": "notes.txt"})),
        chat_done(),
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["run", "--model", "openai:gpt-x", "--base-url", &base])
        .args(["--api-key", "sk-test-key", "--json", "--root"])
        .arg(root)
        .arg("--config")
        .arg(root.join("agent.json"))
        .arg("--db")
        .arg(format!("sqlite:{}", root.join("runs.db").display()))
        .args(["--thread", thread, "What do the notes say?"])
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parts: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let result = parts
        .iter()
        .find(|p| p["type"] == "tool-result")
        .unwrap_or_else(|| panic!("no tool result in {stdout}"));
    let cached = parts
        .iter()
        .any(|p| p["type"] == "data" && p["name"] == "cached");
    (result["output"].to_string(), cached)
}

#[test]
fn a_stored_threads_cached_result_serves_its_next_run_and_no_other_thread() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("agent.json"),
        json!({"tools": {"read": {"cache": {"ttl": 600_000}}}}).to_string(),
    )
    .unwrap();
    std::fs::write(root.join("notes.txt"), "first version\n").unwrap();
    let (first, cached) = read_notes(root, "t1");
    assert!(first.contains("first version") && !cached, "{first}");

    std::fs::write(root.join("notes.txt"), "second version\n").unwrap();
    // Another process, the same thread: the stored result, marked as cached.
    let (again, cached) = read_notes(root, "t1");
    assert!(again.contains("first version") && cached, "{again}");
    // Another thread reads the file as it is now.
    let (other, cached) = read_notes(root, "t2");
    assert!(other.contains("second version") && !cached, "{other}");
}
