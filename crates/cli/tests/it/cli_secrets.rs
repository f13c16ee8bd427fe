//! Secrets off the command line: the API key from a file or standard input, secret variables
//! from a file or the environment; a warning when either is given on the command line; and the
//! value nowhere in the `--json` output, the stored thread or the errors.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::{Received, serve, sse};
use serde_json::{Value, json};

/// The key the tests use; distinctive, so that finding it anywhere is no accident.
const KEY: &str = "sk-k3y-only-the-server-sees-9f1c";
/// A secret variable's value.
const SECRET: &str = "tok-deploy-secret-5e2a77";

const API_KEY_WARNING: &str = "warning: --api-key on the command line is visible to other \
     processes (ps, /proc/PID/cmdline), the agent's commands included; set the provider's \
     environment variable (such as OPENAI_API_KEY), or use --api-key-file FILE or --api-key - \
     (standard input)";

fn var_warning(name: &str) -> String {
    format!(
        "warning: --var {name}=… puts a secret on the command line, visible to other processes \
         (ps, /proc/PID/cmdline), the agent's commands included; set the environment variable \
         {name} or use --var-file {name}=FILE"
    )
}

fn chunk(delta: Value) -> Value {
    json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]})
}

/// A calculator call, then an answer: a run that reaches the model twice.
fn turns() -> Vec<String> {
    let call = json!({"index": 0, "id": "call_1", "type": "function",
                      "function": {"name": "calculator", "arguments": "{\"expression\":\"6 * 7\"}"}});
    vec![
        sse(
            &[
                chunk(json!({"role": "assistant", "tool_calls": [call]})),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ],
            false,
            true,
        ),
        sse(
            &[
                chunk(json!({"role": "assistant", "content": "42"})),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ],
            false,
            true,
        ),
    ]
}

/// A run's output and what the server received.
struct Run {
    out: Output,
    requests: Vec<Received>,
    dir: tempfile::TempDir,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// Every byte the stored thread left in the run's folder (the database, its WAL), as text.
    fn stored(&self) -> String {
        let mut all = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("runs.db") {
                all.extend(std::fs::read(entry.path()).unwrap_or_default());
            }
        }
        assert!(!all.is_empty(), "the run stored its thread");
        String::from_utf8_lossy(&all).into_owned()
    }

    /// Asserts that `secret` is in none of the output, errors and stored bytes.
    fn assert_nowhere(&self, secret: &str) {
        assert!(!self.stdout().contains(secret), "--json output");
        assert!(!self.stderr().contains(secret), "standard error");
        assert!(!self.stored().contains(secret), "the stored thread");
    }
}

/// `toolsmith run --json --db sqlite:…` with `config` (if any), `args`, `env` and `stdin`.
fn run(config: Option<Value>, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
    let (base, received) = serve(turns());
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    command
        .args([
            "run",
            "--model",
            "openai:gpt-x",
            "--base-url",
            &base,
            "--json",
        ])
        .arg("--db")
        .arg(format!("sqlite:{}", dir.path().join("runs.db").display()))
        .arg("--root")
        .arg(dir.path())
        .args(args)
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .env_remove("OPENAI_API_KEY")
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(config) = config {
        let path = dir.path().join("agent.json");
        std::fs::write(&path, config.to_string()).unwrap();
        command.arg("--config").arg(path);
    }
    command.arg("What is 6 * 7?");
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let requests = received.lock().unwrap().clone();
    Run { out, requests, dir }
}

fn key_file(dir: &Path, text: &str) -> String {
    let path = dir.join("key.txt");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// The key the server was sent, from its `authorization` header.
fn sent_key(run: &Run) -> &str {
    assert_eq!(run.requests.len(), 2, "{}", run.stderr());
    run.requests[0]
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap()
}

#[test]
fn the_api_key_from_a_file_reaches_the_provider_and_nothing_else() {
    let files = tempfile::tempdir().unwrap();
    let file = key_file(files.path(), &format!("{KEY}\n"));
    let run = run(None, &["--api-key-file", &file], &[], "");
    assert!(run.out.status.success(), "{}", run.stderr());
    assert_eq!(sent_key(&run), KEY);
    assert!(!run.stderr().contains("warning"), "{}", run.stderr());
    run.assert_nowhere(KEY);
}

#[test]
fn the_api_key_from_standard_input_reaches_the_provider_and_nothing_else() {
    let run = run(None, &["--api-key", "-"], &[], &format!("{KEY}\n"));
    assert!(run.out.status.success(), "{}", run.stderr());
    assert_eq!(sent_key(&run), KEY);
    assert!(!run.stderr().contains("warning"), "{}", run.stderr());
    run.assert_nowhere(KEY);
}

#[test]
fn the_api_key_from_the_environment_needs_no_flag() {
    let run = run(None, &[], &[("OPENAI_API_KEY", KEY)], "");
    assert!(run.out.status.success(), "{}", run.stderr());
    assert_eq!(sent_key(&run), KEY);
    assert!(!run.stderr().contains("warning"), "{}", run.stderr());
    run.assert_nowhere(KEY);
}

#[test]
fn an_api_key_on_the_command_line_works_and_warns() {
    let run = run(None, &["--api-key", KEY], &[], "");
    assert!(run.out.status.success(), "{}", run.stderr());
    assert_eq!(sent_key(&run), KEY);
    assert!(run.stderr().contains(API_KEY_WARNING), "{}", run.stderr());
    run.assert_nowhere(KEY);
}

#[test]
fn bad_key_sources_are_usage_errors_that_never_show_the_key() {
    let files = tempfile::tempdir().unwrap();
    let two_lines = key_file(files.path(), &format!("{KEY}\nsecond-line-{KEY}\n"));
    let run1 = run(None, &["--api-key-file", &two_lines], &[], "");
    assert_eq!(run1.out.status.code(), Some(2));
    assert_eq!(
        run1.stderr().trim(),
        format!(
            "error: --api-key-file {two_lines}: the key must be one line of printable text (it \
             holds a line break or another control character)"
        )
    );
    assert!(run1.requests.is_empty());

    let missing = files.path().join("missing.txt");
    let run2 = run(
        None,
        &["--api-key-file", missing.to_str().unwrap()],
        &[],
        "",
    );
    assert_eq!(run2.out.status.code(), Some(2));
    assert!(
        run2.stderr().starts_with(&format!(
            "error: --api-key-file {}: cannot read the file: ",
            missing.display()
        )),
        "{}",
        run2.stderr()
    );

    let empty = run(None, &["--api-key", "-"], &[], "");
    assert_eq!(empty.out.status.code(), Some(2));
    assert_eq!(
        empty.stderr().trim(),
        "error: --api-key -: the key is empty"
    );

    let both = run(
        None,
        &["--api-key", KEY, "--api-key-file", &two_lines],
        &[],
        "",
    );
    assert_eq!(both.out.status.code(), Some(2));
    assert!(
        both.stderr().contains("cannot be used with"),
        "{}",
        both.stderr()
    );
    for run in [&run1, &run2, &empty] {
        assert!(!run.stderr().contains(KEY), "{}", run.stderr());
        assert!(!run.stdout().contains(KEY));
    }
}

/// A config declaring the required secret `DEPLOY_TOKEN` and the text variable `REGION`.
fn with_variables() -> Option<Value> {
    Some(json!({
        "tools": {"calculator": {}},
        "variables": [
            {"name": "DEPLOY_TOKEN", "required": true, "description": "A secret by default."},
            {"name": "REGION", "type": "text"}
        ]
    }))
}

#[test]
fn a_required_secret_without_a_value_stops_the_run() {
    let run = run(
        with_variables(),
        &["--api-key", "-"],
        &[],
        &format!("{KEY}\n"),
    );
    assert_eq!(run.out.status.code(), Some(1));
    assert!(
        run.stdout().contains("VARIABLES_REQUIRED") && run.stdout().contains("DEPLOY_TOKEN"),
        "{}",
        run.stdout()
    );
}

#[test]
fn a_secret_variable_from_a_file_sets_it_without_a_warning_and_goes_nowhere() {
    let files = tempfile::tempdir().unwrap();
    let token = files.path().join("token");
    std::fs::write(&token, format!("{SECRET}\n")).unwrap();
    let run = run(
        with_variables(),
        &[
            "--api-key",
            "-",
            "--var-file",
            &format!("DEPLOY_TOKEN={}", token.display()),
            "--var",
            "REGION=eu",
        ],
        &[],
        &format!("{KEY}\n"),
    );
    assert!(run.out.status.success(), "{}", run.stderr());
    assert_eq!(run.requests.len(), 2);
    assert!(!run.stderr().contains("warning"), "{}", run.stderr());
    run.assert_nowhere(SECRET);
    run.assert_nowhere(KEY);
}

#[test]
fn a_secret_variable_from_the_environment_sets_it_without_a_warning() {
    let run = run(
        with_variables(),
        &["--api-key", "-"],
        &[("DEPLOY_TOKEN", SECRET)],
        &format!("{KEY}\n"),
    );
    assert!(run.out.status.success(), "{}", run.stderr());
    assert!(!run.stderr().contains("warning"), "{}", run.stderr());
    run.assert_nowhere(SECRET);
}

#[test]
fn a_secret_variable_on_the_command_line_works_and_warns_and_a_text_one_does_not() {
    let run = run(
        with_variables(),
        &[
            "--api-key",
            "-",
            "--var",
            &format!("DEPLOY_TOKEN={SECRET}"),
            "--var",
            "REGION=eu",
        ],
        &[],
        &format!("{KEY}\n"),
    );
    assert!(run.out.status.success(), "{}", run.stderr());
    let stderr = run.stderr();
    assert!(stderr.contains(&var_warning("DEPLOY_TOKEN")), "{stderr}");
    assert!(!stderr.contains("--var REGION"), "{stderr}");
    run.assert_nowhere(SECRET);
}

#[test]
fn bad_var_files_are_usage_errors_naming_the_file() {
    let files = tempfile::tempdir().unwrap();
    let missing = files.path().join("missing");
    let run1 = run(
        with_variables(),
        &["--var-file", &format!("DEPLOY_TOKEN={}", missing.display())],
        &[("OPENAI_API_KEY", KEY)],
        "",
    );
    assert_eq!(run1.out.status.code(), Some(2));
    assert!(
        run1.stderr().starts_with(&format!(
            "error: --var-file DEPLOY_TOKEN={}: cannot read the file: ",
            missing.display()
        )),
        "{}",
        run1.stderr()
    );
    let token = files.path().join("token");
    std::fs::write(&token, SECRET).unwrap();
    let both = run(
        with_variables(),
        &[
            "--var-file",
            &format!("DEPLOY_TOKEN={}", token.display()),
            "--var",
            &format!("DEPLOY_TOKEN={SECRET}"),
        ],
        &[("OPENAI_API_KEY", KEY)],
        "",
    );
    assert_eq!(both.out.status.code(), Some(2));
    assert_eq!(
        both.stderr().trim(),
        "error: --var and --var-file both give DEPLOY_TOKEN: give one"
    );
}

#[test]
fn on_a_terminal_the_api_key_is_asked_for_without_echo() {
    let (base, received) = serve(turns());
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "{} run --model openai:gpt-x --base-url {base} --json --approve deny --root {} --api-key - \
         'What is 6 * 7?'",
        env!("CARGO_BIN_EXE_toolsmith"),
        dir.path().display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux script runs");
    // Type the key only once the prompt shows (echo is off by then).
    let mut stdout = child.stdout.take().unwrap();
    let mut screen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&screen).contains("API key: ") {
        use std::io::Read;
        assert_eq!(stdout.read(&mut byte).unwrap(), 1, "no prompt: {screen:?}");
        screen.push(byte[0]);
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{KEY}\n").as_bytes()).unwrap();
    let rest = {
        use std::io::Read;
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).unwrap();
        rest
    };
    drop(stdin);
    assert!(child.wait().unwrap().success());
    screen.extend(rest);
    let screen = String::from_utf8_lossy(&screen).replace('\r', "");
    let requests = received.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "{screen}");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!screen.contains(KEY), "the key was echoed: {screen}");
    assert!(!screen.contains("warning"), "{screen}");
}
