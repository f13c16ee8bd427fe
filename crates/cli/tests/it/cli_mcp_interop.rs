//! `toolsmith mcp serve` against MCP clients nobody here wrote, installed by
//! `scripts/mcp-peers.sh`: the MCP Inspector's command line over stdio and streamable HTTP,
//! and the official conformance suite's server scenarios that apply to a tool server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::cli_mcp::conformance;
use crate::cli_mcp_serve::serve_http;

fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/peers")
}

fn program(name: &str) -> PathBuf {
    let path = peers().join("node_modules/.bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/mcp-peers.sh",
        path.display()
    );
    path
}

/// The pinned Node first in `PATH`.
fn node_path() -> String {
    format!(
        "{}:/usr/bin:/bin",
        peers().join("node_modules/.bin").display()
    )
}

/// `mcp-inspector --cli <target…> <args…>`, its catalog kept in `home`.
fn inspector(home: &Path, target: &[&str], args: &[&str]) -> Output {
    Command::new(program("mcp-inspector"))
        .arg("--cli")
        .args(target)
        .args(args)
        .env("PATH", node_path())
        .env("HOME", home)
        .env("MCP_CATALOG_PATH", home.join("catalog.json"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The Inspector's JSON answer; it exits 1 when the result is an error.
fn json(out: &Output) -> Value {
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
    let is_error = answer["isError"] == true;
    assert_eq!(out.status.success(), !is_error, "{answer}");
    answer
}

/// What the Inspector sees of a served root, through `target`.
fn inspect(home: &Path, target: &[&str]) {
    let listed = json(&inspector(home, target, &["--method", "tools/list"]));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in ["read", "grep", "glob", "calculator", "write", "bash"] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    let computed = json(&inspector(
        home,
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "calculator",
            "--tool-arg",
            "expression=6*7",
        ],
    ));
    assert_eq!(computed["structuredContent"]["result"], 42, "{computed}");
    let read = json(&inspector(
        home,
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read",
            "--tool-arg",
            "path=note.txt",
        ],
    ));
    assert!(read.to_string().contains("inspected"), "{read}");
    // A change needs approval; the Inspector's command line cannot be asked.
    let write = json(&inspector(
        home,
        target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "write",
            "--tool-arg",
            "path=x.txt",
            "content=x",
        ],
    ));
    assert_eq!(write["isError"], true, "{write}");
    assert!(write.to_string().contains("APPROVAL_REQUIRED"), "{write}");
}

#[test]
fn the_inspector_uses_the_server_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("note.txt"), "inspected\n").unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let toolsmith = env!("CARGO_BIN_EXE_toolsmith");
    inspect(
        &home,
        &[toolsmith, "mcp", "serve", "--root", root.to_str().unwrap()],
    );
    assert!(!root.join("x.txt").exists());

    let (mut server, url) = serve_http(&root);
    inspect(&home, &[&url]);
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(!root.join("x.txt").exists());
}

#[test]
fn the_conformance_suite_s_server_scenarios_for_tool_servers_pass() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, url) = serve_http(dir.path());
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        let (out, report) = conformance(
            dir.path(),
            &["server", "--url", &url, "--scenario", scenario],
        );
        let passed = report
            .lines()
            .any(|l| l.starts_with("Passed: ") && l.contains(", 0 failed"));
        assert!(out.status.success() && passed, "{scenario}:\n{report}");
    }
    server.kill().unwrap();
    server.wait().unwrap();
}
