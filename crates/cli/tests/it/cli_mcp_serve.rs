//! `toolsmith mcp serve` as a real process, driven by the official MCP Python SDK's client
//! (`tests/it/mcp/py_client.py`, on the SDK `scripts/mcp-peers.sh` installs): over stdio and
//! over streamable HTTP, it lists the built-ins with their schemas, reads and globs files in
//! the root, is refused a path outside it, writes a file once it approves the call when asked
//! (elicitation), and is refused a write as a client that cannot be asked. An agent config's
//! tools, approvals and sub-agents (on a loopback Chat Completions server), driven by plain
//! JSON-RPC lines. Plus the command's usage errors.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use toolsmith_builtins::Workspace;
use toolsmith_sandbox::SandboxPolicy;

use crate::common::{serve, sse};

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

/// `toolsmith mcp serve --http 127.0.0.1:0 --root <root>`, and the URL it listens on.
pub(crate) fn serve_http(root: &Path) -> (Child, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["mcp", "serve", "--http", "127.0.0.1:0", "--root"])
        .arg(root)
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
    (server, url)
}

#[test]
fn the_python_sdk_client_uses_the_builtins_over_http() {
    let (_dir, root) = workspace();
    let (mut server, url) = serve_http(&root);
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
    let helper = json!({"name": "helper", "description": "Helps.", "config": {"tools": {}}});
    std::fs::write(&config, json!({"subagents": [helper]}).to_string()).unwrap();
    let (code, message) = serve(&["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(
        message.contains("its sub-agents and prompts need a model: pass --model PROVIDER:MODEL"),
        "{message}"
    );
}

/// `toolsmith mcp serve` on stdio, spoken to one JSON-RPC line at a time.
struct Lines {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Lines {
    fn start(command: &mut Command) -> Lines {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Lines {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
    }

    /// Sends request `id` and returns its answer (skipping notifications).
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "stdout closed"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        let answer = self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        answer["result"].clone()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Chat Completions stream that answers `text`.
fn answer(text: &str) -> String {
    sse(
        &[
            json!({"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        false,
        true,
    )
}

#[test]
fn a_config_s_tools_approvals_and_sub_agents_are_served() {
    let (dir, root) = workspace();
    let (base, received) = serve(vec![
        answer("42"),
        answer("noted: blue"),
        answer("it was blue"),
    ]);
    let config = dir.path().join("agent.json");
    let agent = json!({
        "model": {"provider": "openai", "name": "gpt-x", "baseUrl": base},
        "instructions": "Tools for the notes.",
        "tools": {"read": {}, "glob": {}, "write": {}},
        "approval": {"policy": ["read"]},
        "subagents": [
            {"name": "helper", "description": "Answers.", "initUserMessageProperty": "task",
             "config": {"instructions": "Answer.", "tools": {}}},
            {"name": "memo", "description": "Keeps notes.",
             "resumable": {"receives_messages": "side_a"},
             "config": {"instructions": "Keep notes.", "tools": {}}}
        ]
    });
    std::fs::write(&config, agent.to_string()).unwrap();
    let mut server = Lines::start(
        Command::new(env!("CARGO_BIN_EXE_toolsmith"))
            .args(["mcp", "serve", "--root"])
            .arg(&root)
            .arg("--config")
            .arg(&config)
            .env("OPENAI_API_KEY", "sk-test-key")
            .env_remove("TOOLSMITH_MODEL"),
    );
    let hello = server.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "lines", "version": "1"}}),
    );
    assert_eq!(hello["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(hello["result"]["instructions"], "Tools for the notes.");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let listed = server.request(2, "tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read",
            "glob",
            "write",
            "helper",
            "subagent_create",
            "subagent_message"
        ]
    );

    // The config's policy names `read`; `write` asks as a built-in; nobody can be asked here.
    let read = server.call(3, "read", json!({"path": "notes/a.txt"}));
    assert!(
        read["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("APPROVAL_REQUIRED: the tool \"read\""),
        "{read}"
    );
    let write = server.call(4, "write", json!({"path": "x.txt", "content": "x"}));
    assert_eq!(write["structuredContent"]["code"], "APPROVAL_REQUIRED");
    let glob = server.call(5, "glob", json!({"pattern": "**/*.txt"}));
    assert_eq!(glob["isError"], false, "{glob}");

    // A sub-agent runs on the config's model.
    let helper = server.call(6, "helper", json!({"task": "What is 6 * 7?"}));
    assert_eq!(helper["isError"], false, "{helper}");
    assert!(helper.to_string().contains("42"), "{helper}");
    // A resumable one keeps its instance from one call to the next of the session.
    let created = server.call(
        7,
        "subagent_create",
        json!({"name": "m1", "message": "remember blue"}),
    );
    assert!(created.to_string().contains("noted: blue"), "{created}");
    let asked = server.call(
        8,
        "subagent_message",
        json!({"name": "m1", "message": "which colour?"}),
    );
    assert!(asked.to_string().contains("it was blue"), "{asked}");

    let requests = received.lock().unwrap();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body["messages"][1]["content"], "What is 6 * 7?");
    let memory = requests[2].body["messages"].to_string();
    assert!(
        memory.contains("remember blue") && memory.contains("noted: blue"),
        "{memory}"
    );
    assert!(!root.join("x.txt").exists());
}
