//! The `bash` tool: runs one executable with arguments (no shell parsing) in the kernel sandbox.

mod guard;

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{
    ModelOutput, Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, async_trait,
};
use toolsmith_sandbox::exec::{ExecError, ExecOutput, ExecRequest, HelperCommand, Launcher};
use toolsmith_sandbox::{Capabilities, NetworkPolicy};

use crate::Workspace;

pub use guard::check as network_guard;

const NAME: &str = "bash";

const DESCRIPTION: &str = "Run a command in the workspace: an executable and its arguments, \
    spawned directly without a shell (use `sh -c '...'` explicitly for pipes and redirects). \
    stdin is empty. Returns the exit code and the output (stdout, then stderr). The command runs \
    in a sandbox: it can write only inside the workspace, and the network is off unless the user \
    allowed it.";

/// The error code of a command stopped because the call was cancelled (the process group is
/// killed).
pub const PROCESS_CANCELLED: &str = "PROCESS_CANCELLED";

const MAX_CMD: usize = 8192;
const MAX_ARGS: usize = 128;
const MAX_CWD: usize = 1024;

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The executable to run, for example "ls" or "/usr/bin/python3".
    cmd: String,
    /// Its arguments, passed as they are (no shell expansion).
    #[serde(default)]
    args: Option<Vec<String>>,
    /// Options.
    #[serde(default)]
    opts: Option<Opts>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Opts {
    /// The working directory, relative to the workspace root (default: the root).
    #[serde(default)]
    cwd: Option<String>,
}

/// The Smithers-compatible `bash` tool: input `{cmd, args?: string[], opts?: {cwd?}}`.
///
/// 1. Validation (`INVALID_INPUT`): `cmd must be a non-empty string.`, `cmd exceeds 8192
///    characters.`, `args exceeds 128 entries.`, `args[i] exceeds 8192 characters.`, `command
///    exceeds 8192 characters.`, `opts.cwd exceeds 1024 characters.` (lengths in UTF-16 units,
///    as Smithers counts them).
/// 2. When the policy's network is off, the [network guard](network_guard)
///    (`TOOL_NETWORK_DISABLED`, `TOOL_GIT_REMOTE_DISABLED`).
/// 3. `opts.cwd` confined with `RootDir::resolve_dir` (default: the root).
/// 4. The [`Launcher`]: `PROCESS_TIMEOUT` `Command timed out after <ms>ms`, `PROCESS_FAILED`
///    `Failed to spawn <cmd>`, `SANDBOX_UNAVAILABLE` (fail-closed policy, layer missing),
///    `TOOL_COMMAND_FAILED` `Command failed with exit code <n>` (details `{cmd, args, output}`),
///    [`PROCESS_CANCELLED`] `Command cancelled` when the call's cancellation token fires.
///
/// On success the app value is `{exitCode, signal, stdout, stderr, truncated, totalBytes}` (plus
/// `warnings` when best-effort mode skipped a layer, and `undone` when git protection undid a
/// change) and the model sees stdout then stderr, then each `undone` note on its own line.
pub struct Bash {
    spec: ToolSpec,
    meta: ToolMeta,
    workspace: Arc<Workspace>,
    launcher: OnceLock<Result<Launcher, ExecError>>,
}

impl std::fmt::Debug for Bash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bash")
            .field("root", &self.workspace.root().path())
            .finish_non_exhaustive()
    }
}

impl Bash {
    /// The tool for `workspace`; the helper is located ([`HelperCommand::locate`]) and the
    /// machine probed on the first call.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Bash {
            spec: ToolSpec::for_type::<Input>(NAME).with_description(DESCRIPTION),
            meta: ToolMeta::new().side_effect(true).idempotent(false),
            workspace,
            launcher: OnceLock::new(),
        }
    }

    /// The tool with an explicit launcher (its policy is the one enforced; the guard and cwd
    /// use the workspace's).
    pub fn with_launcher(workspace: Arc<Workspace>, launcher: Launcher) -> Self {
        let bash = Bash::new(workspace);
        let _ = bash.launcher.set(Ok(launcher));
        bash
    }

    fn launcher(&self) -> Result<&Launcher, ToolError> {
        self.launcher
            .get_or_init(|| {
                let helper = HelperCommand::locate()?;
                Ok(Launcher::with_capabilities(
                    helper,
                    self.workspace.policy().clone(),
                    Capabilities::detect().clone(),
                ))
            })
            .as_ref()
            .map_err(|e| ToolError::new("SANDBOX_UNAVAILABLE", e.to_string()))
    }
}

/// The `bash` tool for `workspace` (see [`Bash`]).
pub fn bash(workspace: &Arc<Workspace>) -> Bash {
    Bash::new(workspace.clone())
}

/// String length as JavaScript counts it.
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Smithers' checks, in the same order.
fn validate(cmd: &str, args: &[String], cwd: Option<&str>) -> Result<(), ToolError> {
    if cmd.trim().is_empty() {
        return Err(ToolError::invalid_input("cmd must be a non-empty string."));
    }
    if js_len(cmd) > MAX_CMD {
        return Err(ToolError::invalid_input(format!(
            "cmd exceeds {MAX_CMD} characters."
        )));
    }
    if args.len() > MAX_ARGS {
        return Err(ToolError::invalid_input(format!(
            "args exceeds {MAX_ARGS} entries."
        )));
    }
    if let Some(i) = args.iter().position(|a| js_len(a) > MAX_CMD) {
        return Err(ToolError::invalid_input(format!(
            "args[{i}] exceeds {MAX_CMD} characters."
        )));
    }
    let joined = js_len(cmd) + args.iter().map(|a| js_len(a) + 1).sum::<usize>();
    if joined > MAX_CMD {
        return Err(ToolError::invalid_input(format!(
            "command exceeds {MAX_CMD} characters."
        )));
    }
    if cwd.is_some_and(|c| js_len(c) > MAX_CWD) {
        return Err(ToolError::invalid_input(format!(
            "opts.cwd exceeds {MAX_CWD} characters."
        )));
    }
    Ok(())
}

/// The first `max` bytes of `text`, cut back to a UTF-8 boundary.
fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[async_trait]
impl Tool for Bash {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Input { cmd, args, opts } = serde_json::from_value(input)
            .map_err(|e| ToolError::invalid_input(format!("Invalid arguments: {e}")))?;
        let args = args.unwrap_or_default();
        let cwd_arg = opts.and_then(|o| o.cwd);
        validate(&cmd, &args, cwd_arg.as_deref())?;
        let policy = self.workspace.policy();
        if policy.network == NetworkPolicy::Off {
            guard::check(&cmd, &args)?;
        }
        let cwd = self
            .workspace
            .root()
            .resolve_dir(cwd_arg.as_deref().filter(|c| !c.is_empty()).unwrap_or("."))?;
        let launcher = self.launcher()?;
        let request = ExecRequest::new(cmd.clone(), args.clone(), cwd.clone());
        let run = launcher.run(&request);
        // Dropping the run future kills the command's whole process group.
        let out = tokio::select! {
            out = run => out,
            () = cx.cancellation().cancelled() => {
                return Err(ToolError::new(PROCESS_CANCELLED, "Command cancelled")
                    .with_details(json!({ "cmd": cmd, "args": args })));
            }
        };
        let out = out.map_err(|e| match e {
            ExecError::Spawn(reason) => {
                ToolError::new("PROCESS_FAILED", format!("Failed to spawn {cmd}"))
                    .with_details(json!({ "cmd": cmd, "args": args, "reason": reason }))
            }
            other => ToolError::new("SANDBOX_UNAVAILABLE", other.to_string()),
        })?;
        let limit = launcher.policy().limits.output_bytes;
        if out.timed_out {
            let ms = launcher.policy().limits.timeout.as_millis();
            return Err(ToolError::new(
                "PROCESS_TIMEOUT",
                format!("Command timed out after {ms}ms"),
            )
            .with_details(json!({
                "command": cmd, "args": args, "cwd": cwd, "timeoutMs": ms as u64,
            })));
        }
        let mut combined = truncate(format!("{}{}", out.stdout, out.stderr), limit);
        for note in &out.undone {
            if !combined.is_empty() && !combined.ends_with('\n') {
                combined.push('\n');
            }
            combined.push_str(note);
            combined.push('\n');
        }
        if out.exit_code != 0 {
            return Err(ToolError::new(
                "TOOL_COMMAND_FAILED",
                format!("Command failed with exit code {}", out.exit_code),
            )
            .with_details(json!({ "cmd": cmd, "args": args, "output": combined })));
        }
        Ok(ToolOutput::json(app_value(&out)).with_model_output(ModelOutput::text(combined)))
    }
}

fn app_value(out: &ExecOutput) -> Value {
    let mut value = json!({
        "exitCode": out.exit_code,
        "signal": out.signal,
        "stdout": out.stdout,
        "stderr": out.stderr,
        "truncated": out.truncated,
        "totalBytes": out.total_bytes,
    });
    if !out.warnings.is_empty() {
        value["warnings"] = json!(out.warnings);
    }
    if !out.undone.is_empty() {
        value["undone"] = json!(out.undone);
    }
    value
}

#[cfg(test)]
#[path = "bash/tests.rs"]
mod tests;
