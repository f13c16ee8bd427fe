//! `toolsmith mcp serve` as a real process, driven by the official MCP Python SDK's client
//! (`tests/it/mcp/py_client.py`, on the SDK `scripts/mcp-peers.sh` installs): over stdio and
//! over streamable HTTP, it lists the built-ins with their schemas, reads and globs files in
//! the root, is refused a path outside it, writes a file once it approves the call when asked
//! (elicitation), and is refused a write as a client that cannot be asked. Plus the command's
//! usage errors.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolsmith_builtins::Workspace;
use toolsmith_sandbox::SandboxPolicy;

/// The Python the peers' virtual environment runs, with the MCP SDK installed.
fn python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/peers/.venv/bin/python");
    assert!(
        python.exists(),
        "the MCP Python SDK is not installed ({} is missing): run scripts/mcp-peers.sh",
        python.display()
    );
    python
}

/// A folder holding the root (`notes/a.txt`, `notes/b.txt`) and `outside.txt` beside it.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/a.txt"), "alpha\n").unwrap();
    std::fs::write(root.join("notes/b.txt"), "beta\n").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "secret\n").unwrap();
    (dir, root)
}

/// Runs the Python client with `args`: what it saw.
fn drive(args: &[&str]) -> Value {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp/py_client.py");
    let output = Command::new(python())
        .arg(driver)
        .args(args)
        .env_remove("TOOLSMITH_MCP_TOKEN")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python client failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// What the client must have seen of a server of the built-ins rooted at `root`.
fn check(seen: &Value, root: &Path) {
    assert_eq!(seen["protocol"], "2025-11-25");
    assert_eq!(seen["server"], "toolsmith");
    let builtins = toolsmith_builtins::all(&Workspace::new(SandboxPolicy::new(root)).unwrap());
    assert_eq!(seen["tools"], json!(builtins.names().collect::<Vec<_>>()));
    let read = builtins.get("read").unwrap();
    assert_eq!(&seen["read_schema"], read.spec().input_schema().as_ref());

    assert_eq!(seen["read"]["isError"], false, "{seen}");
    assert!(
        seen["read"]["text"].as_str().unwrap().contains("alpha"),
        "{seen}"
    );
    let found = seen["glob"]["text"].as_str().unwrap();
    assert!(
        found.contains("notes/a.txt") && found.contains("notes/b.txt"),
        "{found}"
    );

    let outside = &seen["outside"];
    assert_eq!(outside["isError"], true);
    assert_eq!(
        outside["text"],
        "TOOL_PATH_ESCAPE: Path escapes sandbox root"
    );
    assert_eq!(outside["structured"]["code"], "TOOL_PATH_ESCAPE");
    assert!(
        !seen.to_string().contains("secret"),
        "nothing of outside.txt"
    );

    assert_eq!(seen["write"]["isError"], false, "{seen}");
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt")).unwrap(),
        "made over MCP"
    );
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{seen}");
    let question = asked[0].as_str().unwrap();
    assert!(
        question.contains("\"write\"") && question.contains("made.txt"),
        "{question}"
    );

    assert_eq!(seen["unasked"]["isError"], true);
    assert!(
        seen["unasked"]["text"]
            .as_str()
            .unwrap()
            .starts_with("APPROVAL_REQUIRED: the tool \"write\" needs approval"),
        "{seen}"
    );
    assert!(
        !root.join("refused.txt").exists(),
        "an unapproved write never runs"
    );
}

#[test]
fn the_python_sdk_client_uses_the_builtins_over_stdio() {
    let (_dir, root) = workspace();
    let toolsmith = env!("CARGO_BIN_EXE_toolsmith");
    let root_arg = root.to_str().unwrap();
    let seen = drive(&["stdio", toolsmith, "mcp", "serve", "--root", root_arg]);
    check(&seen, &root);
}

#[test]
fn the_python_sdk_client_uses_the_builtins_over_http() {
    let (_dir, root) = workspace();
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["mcp", "serve", "--http", "127.0.0.1:0", "--root"])
        .arg(&root)
        .env_remove("TOOLSMITH_MCP_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let url = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("toolsmith mcp serve ended before it listened");
        }
        if let Some(url) = line
            .trim()
            .strip_prefix("toolsmith mcp serve: listening on ")
        {
            break url.to_string();
        }
    };
    // Keep reading its stderr so that it never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );

    let seen = drive(&["http", &url]);
    check(&seen, &root);

    let stopped = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let status = server.wait().unwrap();
    assert!(
        status.success(),
        "SIGTERM ends the server cleanly: {status}"
    );
}

#[test]
fn usage_errors_exit_2_with_a_precise_message() {
    let (_dir, root) = workspace();
    let serve = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .args(["mcp", "serve", "--root"])
            .arg(&root)
            .args(args)
            .env_remove("TOOLSMITH_MCP_TOKEN")
            .env_remove("TOOLSMITH_MODEL")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(output.stdout.is_empty(), "stdout is the protocol's alone");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        )
    };
    let (code, message) = serve(&["--tools", "read,nope"]);
    assert_eq!(code, Some(2));
    assert!(
        message.ends_with(
            "error: unknown tool \"nope\" in --tools; available: read, write, edit, grep, glob, \
             bash, run_code, calculator"
        ),
        "{message}"
    );
    let (code, message) = serve(&["--http", "0.0.0.0:0"]);
    assert_eq!(code, Some(2));
    assert!(
        message.contains(
            "--http 0.0.0.0:0 is not a loopback address: set TOOLSMITH_MCP_TOKEN to a bearer \
             token every request must carry, or listen on 127.0.0.1"
        ),
        "{message}"
    );
    let (code, message) = serve(&["--http", "localhost:80"]);
    assert_eq!(code, Some(2));
    assert!(
        message.contains("--http localhost:80: expected IP:PORT"),
        "{message}"
    );

    let config = root.join("agent.json");
    std::fs::write(
        &config,
        r#"{"subagents": [{"name": "helper", "description": "Helps.", "config": {"instructions": "Help."}}]}"#,
    )
    .unwrap();
    let (code, message) = serve(&["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(
        message.contains("its sub-agents and prompts need a model: pass --model PROVIDER:MODEL"),
        "{message}"
    );
}
