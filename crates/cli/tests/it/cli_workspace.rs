//! `toolsmith run --config` with a `workspace` block (the agent harness's permission modes and
//! read-only workspaces) and sandbox settings (`sandbox`, `tools.bash.sandbox`), against a
//! loopback Chat Completions server.

use std::path::Path;
use std::process::Output;

use crate::common::{chat_call as call, chat_done as done, run_config, serve};
use serde_json::{Value, json};

/// Runs `config` in `root` on the model turns `turns`, `args` added: the run's parts and the
/// names of the tools the model was offered first.
fn run(root: &Path, config: Value, turns: Vec<String>, args: &[&str]) -> (Output, Vec<Value>) {
    let path = root.join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let (base, received) = serve(turns);
    let mut all = vec!["--root", root.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = run_config(&base, &path, &all);
    let parts = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let offered: Vec<Value> = received
        .lock()
        .unwrap()
        .first()
        .map(|r| {
            let tools = r.body["tools"].as_array().cloned().unwrap_or_default();
            tools
                .iter()
                .map(|t| t["function"]["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    let mut parts: Vec<Value> = parts;
    parts.push(json!({"type": "offered", "names": offered}));
    (out, parts)
}

fn of_type<'a>(parts: &'a [Value], kind: &str) -> Vec<&'a Value> {
    parts.iter().filter(|p| p["type"] == kind).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn a_read_only_workspace_offers_read_and_glob_and_refuses_a_write_entry() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"workspace": {"readOnly": true}});
    let (out, parts) = run(dir.path(), config, vec![done()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        of_type(&parts, "offered")[0]["names"],
        json!(["read", "glob"])
    );

    let config = json!({"workspace": {"readOnly": true}, "tools": {"write": {}}});
    let (out, _) = run(dir.path(), config, vec![], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("config.tools.write is not available in a read-only workspace"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_config_without_tools_offers_the_workspace_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (out, parts) = run(dir.path(), json!({}), vec![done()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        of_type(&parts, "offered")[0]["names"],
        json!(["read", "write", "edit", "glob", "grep", "bash"])
    );
}

#[test]
fn bypass_runs_bash_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let touch = || call("bash", json!({"cmd": "touch", "args": ["ran.txt"]}));
    let config = json!({"workspace": {"permissionMode": "bypass"}});
    // No terminal and `--approve ask`: nothing asks, so the command runs.
    let (out, parts) = run(dir.path(), config, vec![touch(), done()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(of_type(&parts, "tool-approval-request").is_empty());
    assert!(dir.path().join("ran.txt").exists());
}

#[test]
fn ask_mode_asks_and_approve_answers() {
    let dir = tempfile::tempdir().unwrap();
    let touch = || call("bash", json!({"cmd": "touch", "args": ["ran.txt"]}));
    let config = json!({"workspace": {"permissionMode": "ask"}});
    let (out, parts) = run(
        dir.path(),
        config.clone(),
        vec![touch(), done()],
        &["--approve", "deny"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(of_type(&parts, "tool-approval-request").len(), 1);
    assert!(!dir.path().join("ran.txt").exists());
    // `--approve auto` approves what the mode asks about.
    let (out, parts) = run(
        dir.path(),
        config,
        vec![touch(), done()],
        &["--approve", "auto"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(of_type(&parts, "tool-approval-request").len(), 1);
    assert!(dir.path().join("ran.txt").exists());
}

#[test]
fn a_per_tool_sandbox_timeout_and_output_limit_take_effect() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"workspace": {"permissionMode": "bypass"},
                        "sandbox": {"timeoutMs": 60_000},
                        "tools": {"bash": {"sandbox": {"timeoutMs": 300, "maxOutputBytes": 4}}}});
    let sleep = call("bash", json!({"cmd": "sleep", "args": ["30"]}));
    let (out, parts) = run(dir.path(), config.clone(), vec![sleep, done()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let error = of_type(&parts, "tool-error");
    assert_eq!(error.len(), 1, "{parts:?}");
    assert!(
        error[0]
            .to_string()
            .contains("Command timed out after 300ms"),
        "{}",
        error[0]
    );
    let print = call("bash", json!({"cmd": "printf", "args": ["0123456789"]}));
    let (out, parts) = run(dir.path(), config, vec![print, done()], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = of_type(&parts, "tool-result");
    assert_eq!(result[0]["output"]["stdout"], "0123", "{}", result[0]);
}

#[test]
fn a_sandbox_network_beyond_the_workspace_s_needs_allow_network() {
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"tools": {"bash": {"sandbox": {"network": "full"}}}});
    let (out, _) = run(dir.path(), config.clone(), vec![], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "config.tools.bash.sandbox: network \"full\" is more than the workspace gives: run \
             with --allow-network to allow it"
        ),
        "{}",
        stderr(&out)
    );
    let (out, _) = run(dir.path(), config, vec![done()], &["--allow-network"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
