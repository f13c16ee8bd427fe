//! `toolsmith run` with MCP servers nobody here wrote — the official filesystem, memory and
//! everything servers (npm) and the time server (PyPI), installed by `scripts/mcp-peers.sh` —
//! in a real agent run on a scripted model; and the conformance suite's client scenarios.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// Where `scripts/mcp-peers.sh` installs the peers.
fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/peers")
}

fn program(relative: &str) -> String {
    let path = peers().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/mcp-peers.sh",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// The `PATH` of the pinned Node.
fn node_path() -> String {
    format!(
        "{}:/usr/bin:/bin",
        peers().join("node_modules/.bin").display()
    )
}

/// Runs `toolsmith run --json` on the scripted `turns` in `dir`, with `args`; no terminal.
fn run(dir: &Path, turns: Value, args: &[&str]) -> Output {
    let script = dir.join("script.json");
    std::fs::write(&script, turns.to_string()).unwrap();
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["run", "--json", "--root"])
        .arg(dir)
        .arg("--model")
        .arg(format!("scripted:{}", script.display()))
        .args(args)
        .arg("Use the tools.")
        .env_remove("TOOLSMITH_MODEL")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// The `tool-result` and `tool-error` parts of a run, by call id.
fn results(out: &Output) -> Vec<(String, Value)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|p| {
            matches!(
                p["type"].as_str(),
                Some("tool-result" | "tool-error" | "tool-output-denied")
            )
        })
        .map(|p| (p["toolCallId"].as_str().unwrap_or_default().to_string(), p))
        .collect()
}

fn result<'a>(results: &'a [(String, Value)], id: &str) -> &'a Value {
    &results
        .iter()
        .find(|(i, _)| i == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
        .1
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

/// The reference servers as an `mcpServers` file in `dir`.
fn servers(dir: &Path) -> PathBuf {
    let file = dir.join("mcp.json");
    let config = json!({"mcpServers": {
        "fs": {
            "command": program("node_modules/.bin/mcp-server-filesystem"),
            "args": [dir],
            "env": {"PATH": node_path()},
            "readOnly": ["read_text_file", "list_directory"],
        },
        "memory": {
            "command": program("node_modules/.bin/mcp-server-memory"),
            "env": {"PATH": node_path(), "MEMORY_FILE_PATH": dir.join("memory.jsonl")},
        },
        "time": {"command": program(".venv/bin/mcp-server-time"), "readOnly": true},
        "everything": {
            "command": program("node_modules/.bin/mcp-server-everything"),
            "env": {"PATH": node_path()},
            "readOnly": ["get-sum"],
        },
    }});
    std::fs::write(&file, config.to_string()).unwrap();
    file
}

#[test]
fn an_agent_uses_the_reference_servers_tools() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    std::fs::write(dir.join("note.txt"), "the answer is 42").unwrap();
    let mcp = servers(&dir);
    let turns = json!([
        {"tool_calls": [
            call("read", "fs__read_text_file", json!({"path": dir.join("note.txt")})),
            call("time", "time__get_current_time", json!({"timezone": "UTC"})),
            call("sum", "everything__get-sum", json!({"a": 40, "b": 2})),
            call("remember", "memory__create_entities", json!({"entities": [
                {"name": "answer", "entityType": "fact", "observations": ["42"]}
            ]})),
        ]},
        {"tool_calls": [call("graph", "memory__read_graph", json!({}))]},
        {"text": "Done."}
    ]);
    let out = run(
        &dir,
        turns,
        &["--mcp-config", mcp.to_str().unwrap(), "--approve", "auto"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = results(&out);
    let read = result(&results, "read");
    assert_eq!(read["type"], "tool-result", "{read}");
    assert!(
        read["output"].to_string().contains("the answer is 42"),
        "{read}"
    );
    let time = result(&results, "time");
    assert!(time["output"].to_string().contains("UTC"), "{time}");
    let sum = result(&results, "sum");
    assert!(sum["output"].to_string().contains("42"), "{sum}");
    let graph = result(&results, "graph");
    assert!(graph["output"].to_string().contains("answer"), "{graph}");
    // The memory server really wrote its file.
    let memory = std::fs::read_to_string(dir.join("memory.jsonl")).unwrap();
    assert!(memory.contains("\"answer\""), "{memory}");
}

#[test]
fn side_effecting_mcp_tools_ask_first_and_read_only_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    std::fs::write(dir.join("note.txt"), "hello").unwrap();
    let mcp = servers(&dir);
    let turns = json!([
        {"tool_calls": [
            call("read", "fs__read_text_file", json!({"path": dir.join("note.txt")})),
            call("write", "fs__write_file", json!({"path": dir.join("new.txt"), "content": "x"})),
        ]},
        {"text": "Done."}
    ]);
    // No terminal to ask on, and no --approve: the write is denied, the read runs.
    let out = run(&dir, turns, &["--mcp-config", mcp.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = results(&out);
    assert_eq!(result(&results, "read")["type"], "tool-result");
    let write = result(&results, "write");
    assert_eq!(write["type"], "tool-output-denied", "{write}");
    assert!(!dir.join("new.txt").exists());
}

#[test]
fn a_config_picks_mcp_tools_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    std::fs::write(dir.join("note.txt"), "picked").unwrap();
    let config = dir.join("agent.json");
    let agent = json!({
        "tools": {"mcp:fs/read_text_file": {}, "calculator": {}},
        "mcpServers": {"fs": {
            "command": program("node_modules/.bin/mcp-server-filesystem"),
            "args": [dir],
            "env": {"PATH": node_path()},
        }},
    });
    std::fs::write(&config, agent.to_string()).unwrap();
    let turns = json!([
        {"tool_calls": [
            call("read", "fs__read_text_file", json!({"path": dir.join("note.txt")})),
            call("list", "fs__list_directory", json!({"path": dir})),
        ]},
        {"text": "Done."}
    ]);
    let out = run(
        &dir,
        turns,
        &["--config", config.to_str().unwrap(), "--approve", "auto"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = results(&out);
    assert!(result(&results, "read").to_string().contains("picked"));
    // The tool the config did not pick is not the agent's.
    let list = result(&results, "list");
    assert_eq!(list["type"], "tool-error", "{list}");
    assert!(list.to_string().contains("fs__list_directory"), "{list}");
}

#[test]
fn a_server_that_cannot_start_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = dir.path().join("mcp.json");
    std::fs::write(
        &mcp,
        json!({"mcpServers": {"broken": {"command": "/nonexistent/server"}}}).to_string(),
    )
    .unwrap();
    let out = run(
        dir.path(),
        json!([{"text": "never"}]),
        &["--mcp-config", mcp.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("MCP server \"broken\": cannot start /nonexistent/server"),
        "{stderr}"
    );
    // A file that is not an MCP config names the file.
    std::fs::write(&mcp, "{\"servers\": {}}").unwrap();
    let out = run(
        dir.path(),
        json!([{"text": "never"}]),
        &["--mcp-config", mcp.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no \"mcpServers\" object"), "{stderr}");
}

/// Runs the official conformance suite with `args` in `dir`: how it ended, and its report
/// (stdout and stderr).
pub(crate) fn conformance(dir: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new(program("node_modules/.bin/conformance"))
        .args(args)
        .current_dir(dir)
        .env("PATH", node_path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, report)
}

#[test]
fn the_conformance_suite_s_client_scenarios_pass() {
    let work = tempfile::tempdir().unwrap();
    let client = format!(
        "{} {}",
        program("conformance/client.sh"),
        env!("CARGO_BIN_EXE_toolsmith")
    );
    for scenario in ["initialize", "tools_call", "sse-retry"] {
        let (out, report) = conformance(
            work.path(),
            &["client", "--command", &client, "--scenario", scenario],
        );
        assert!(
            out.status.success() && report.contains("OVERALL: PASSED"),
            "{scenario} ({:?}):\n{report}",
            out.status,
        );
    }
}
