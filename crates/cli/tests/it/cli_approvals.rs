//! `toolsmith run`'s default approvals: `write`, `edit` and `bash` ask before they run; without
//! a terminal they are denied unless `--approve auto`; a config's `needsApproval` wins. Against
//! a loopback Chat Completions server, so that what the model is told can be checked.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{Received, serve, sse};
use serde_json::{Value, json};

/// The reason a call is denied when nobody can be asked.
const NO_TERMINAL: &str =
    "Denied: no terminal to ask for approval; run toolsmith with --approve auto to allow it.";

fn chunk(delta: Value) -> Value {
    json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]})
}

/// A model turn calling `calls` (`(id, tool, input)`) in one step.
fn calls(calls: &[(&str, &str, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, input))| {
            json!({"index": i, "id": id, "type": "function",
                   "function": {"name": name, "arguments": input.to_string()}})
        })
        .collect();
    sse(
        &[
            chunk(json!({"role": "assistant", "tool_calls": calls})),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ],
        false,
        true,
    )
}

/// A model turn answering `text`.
fn text(text: &str) -> String {
    sse(
        &[
            chunk(json!({"role": "assistant", "content": text})),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        false,
        true,
    )
}

/// A workspace with `intro.md` holding its original text.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("intro.md"), "# Intro\nThe original text.\n").unwrap();
    dir
}

/// `toolsmith run --json` at `base` in `root`, `args` added, standard input closed (no
/// terminal); the key comes from the environment, so that nothing warns about it.
fn run(base: &str, root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args([
            "run",
            "--model",
            "openai:gpt-x",
            "--base-url",
            base,
            "--json",
        ])
        .arg("--root")
        .arg(root)
        .args(args)
        .arg("Print the text of intro.md")
        .env("OPENAI_API_KEY", "sk-test-key")
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

fn parts(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

fn of_type<'a>(parts: &'a [Value], kind: &str) -> Vec<&'a Value> {
    parts.iter().filter(|p| p["type"] == kind).collect()
}

/// The tool message for call `id` in the model's second request.
fn tool_message(requests: &[Received], id: &str) -> String {
    let messages = requests[1].body["messages"].as_array().unwrap();
    messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no tool message for {id}: {messages:?}"))["content"]
        .to_string()
}

fn intro(root: &Path) -> String {
    std::fs::read_to_string(root.join("intro.md")).unwrap()
}

/// The write the embedded model once chose for "Print the text of intro.md".
fn overwrite_intro() -> Vec<String> {
    vec![
        calls(&[(
            "call_1",
            "write",
            json!({"path": "intro.md", "content": "text"}),
        )]),
        text("Done."),
    ]
}

/// The same write after the model read the file, as `write` requires to replace it.
fn read_then_overwrite_intro() -> Vec<String> {
    vec![
        calls(&[("call_0", "read", json!({"path": "intro.md"}))]),
        calls(&[(
            "call_1",
            "write",
            json!({"path": "intro.md", "content": "text"}),
        )]),
        text("Done."),
    ]
}

#[test]
fn without_a_terminal_a_write_is_denied_by_default_and_the_model_is_told_why() {
    let dir = workspace();
    let (base, received) = serve(overwrite_intro());
    let out = run(&base, dir.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The run goes on after the denial and finishes: exit 0.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(intro(dir.path()), "# Intro\nThe original text.\n");
    let parts = parts(&out);
    assert_eq!(of_type(&parts, "tool-approval-request").len(), 1);
    assert!(of_type(&parts, "tool-result").is_empty());
    let denied = of_type(&parts, "tool-output-denied");
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["toolCallId"], "call_1");
    assert_eq!(denied[0]["reason"], NO_TERMINAL);
    assert_eq!(parts.last().unwrap()["type"], "finish");
    let requests = received.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert!(
        tool_message(&requests, "call_1").contains(NO_TERMINAL),
        "{requests:?}"
    );
    assert!(
        stderr.contains(
            "denied write: no terminal to ask for approval (run with --approve auto to allow it)"
        ),
        "{stderr}"
    );
}

#[test]
fn edit_and_bash_are_denied_too_and_read_only_tools_and_run_code_run() {
    let dir = workspace();
    let (base, received) = serve(vec![
        calls(&[
            (
                "call_edit",
                "edit",
                json!({"path": "intro.md", "old_string": "original", "new_string": "edited"}),
            ),
            (
                "call_bash",
                "bash",
                json!({"cmd": "touch", "args": ["ran.txt"]}),
            ),
            ("call_read", "read", json!({"path": "intro.md"})),
            ("call_code", "run_code", json!({"code": "6 * 7"})),
            ("call_glob", "glob", json!({"pattern": "*.md"})),
        ]),
        text("Done."),
    ]);
    let out = run(&base, dir.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(intro(dir.path()), "# Intro\nThe original text.\n");
    assert!(!dir.path().join("ran.txt").exists());
    let parts = parts(&out);
    let denied: Vec<&str> = of_type(&parts, "tool-output-denied")
        .iter()
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(denied, ["call_edit", "call_bash"]);
    let ran: Vec<&str> = of_type(&parts, "tool-result")
        .iter()
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ran, ["call_read", "call_code", "call_glob"]);
    let requests = received.lock().unwrap().clone();
    assert!(tool_message(&requests, "call_bash").contains(NO_TERMINAL));
}

#[test]
fn approve_auto_writes_without_asking() {
    let dir = workspace();
    let (base, _received) = serve(read_then_overwrite_intro());
    let out = run(&base, dir.path(), &["--approve", "auto"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(intro(dir.path()), "text");
    let parts = parts(&out);
    assert!(of_type(&parts, "tool-approval-request").is_empty());
    assert_eq!(of_type(&parts, "tool-result").len(), 2);
}

#[test]
fn approve_deny_denies_the_write() {
    let dir = workspace();
    let (base, received) = serve(overwrite_intro());
    let out = run(&base, dir.path(), &["--approve", "deny"]);
    assert!(out.status.success());
    assert_eq!(intro(dir.path()), "# Intro\nThe original text.\n");
    let parts = parts(&out);
    let denied = of_type(&parts, "tool-output-denied");
    assert_eq!(denied[0]["reason"], "Denied by --approve deny.");
    let requests = received.lock().unwrap().clone();
    assert!(tool_message(&requests, "call_1").contains("Denied by --approve deny."));
    // Nothing about a terminal: the user chose.
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no terminal"));
}

#[test]
fn a_config_with_needs_approval_false_lets_the_write_through_and_bash_still_asks() {
    let dir = workspace();
    let config = dir.path().join("agent.json");
    std::fs::write(
        &config,
        json!({"tools": {"write": {"needsApproval": false}, "bash": {}, "read": {}}}).to_string(),
    )
    .unwrap();
    let (base, _received) = serve(vec![
        calls(&[("call_0", "read", json!({"path": "intro.md"}))]),
        calls(&[
            (
                "call_1",
                "write",
                json!({"path": "intro.md", "content": "text"}),
            ),
            (
                "call_2",
                "bash",
                json!({"cmd": "touch", "args": ["ran.txt"]}),
            ),
        ]),
        text("Done."),
    ]);
    let out = run(&base, dir.path(), &["--config", config.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(intro(dir.path()), "text");
    assert!(!dir.path().join("ran.txt").exists());
    let parts = parts(&out);
    let requests: Vec<&str> = of_type(&parts, "tool-approval-request")
        .iter()
        .map(|p| p["toolName"].as_str().unwrap())
        .collect();
    assert_eq!(requests, ["bash"]);
    assert_eq!(
        of_type(&parts, "tool-output-denied")[0]["reason"],
        NO_TERMINAL
    );
}

#[test]
fn a_config_policy_of_none_does_not_turn_the_default_off_but_needs_approval_true_adds_to_it() {
    let dir = workspace();
    let config = dir.path().join("agent.json");
    std::fs::write(
        &config,
        json!({"approval": {"policy": "none"},
               "tools": {"write": {}, "calculator": {"needsApproval": true}}})
        .to_string(),
    )
    .unwrap();
    let (base, _received) = serve(vec![
        calls(&[
            (
                "call_1",
                "write",
                json!({"path": "intro.md", "content": "text"}),
            ),
            ("call_2", "calculator", json!({"expression": "6 * 7"})),
        ]),
        text("Done."),
    ]);
    let out = run(&base, dir.path(), &["--config", config.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(intro(dir.path()), "# Intro\nThe original text.\n");
    let parts = parts(&out);
    let denied: Vec<&str> = of_type(&parts, "tool-output-denied")
        .iter()
        .map(|p| p["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(denied, ["call_1", "call_2"]);
}

#[test]
fn a_stored_run_without_a_terminal_ends_paused_instead() {
    let dir = workspace();
    let (base, received) = serve(overwrite_intro());
    let db = format!("sqlite:{}", dir.path().join("runs.db").display());
    let out = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["run", "--model", "openai:gpt-x", "--base-url", &base])
        .args(["--db", &db, "--thread", "t1"])
        .arg("--root")
        .arg(dir.path())
        .arg("Print the text of intro.md")
        .env("OPENAI_API_KEY", "sk-test-key")
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .env_remove("TOOLSMITH_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("paused: thread t1 waits for 1 answer(s)"),
        "{stderr}"
    );
    assert_eq!(intro(dir.path()), "# Intro\nThe original text.\n");
    assert_eq!(received.lock().unwrap().len(), 1);
}

/// `toolsmith run` on a pseudo-terminal (util-linux's `script`), answering `input` at its
/// prompt: the screen.
fn on_a_terminal(root: &Path, base: &str, input: &str) -> String {
    let command = format!(
        "{} run --model openai:gpt-x --base-url {base} --json --root {} 'Print the text of intro.md'",
        env!("CARGO_BIN_EXE_toolsmith"),
        root.display()
    );
    crate::common::on_a_terminal(&command, &[("OPENAI_API_KEY", "sk-test-key")], input)
}

#[test]
fn on_a_terminal_the_write_is_asked_about_and_runs_only_when_approved() {
    for (input, written) in [("y\n", true), ("n\n", false)] {
        let dir = workspace();
        let (base, _received) = serve(read_then_overwrite_intro());
        let screen = on_a_terminal(dir.path(), &base, input);
        assert!(
            screen.contains(
                "approve write {\"path\":\"intro.md\",\"content\":\"text\"}? [y]es, [n]o, [a]lways for this tool: "
            ),
            "{input:?}: {screen}"
        );
        let expected = if written {
            "text"
        } else {
            "# Intro\nThe original text.\n"
        };
        assert_eq!(intro(dir.path()), expected, "{input:?}: {screen}");
    }
}
