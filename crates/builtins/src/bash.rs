//! The `bash` tool: runs one executable with arguments (no shell parsing) in the kernel sandbox.

mod guard;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolsmith_core::{
    ModelOutput, Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, async_trait,
};
use toolsmith_sandbox::exec::{ExecError, ExecOutput, ExecRequest, HelperCommand, Launcher};
use toolsmith_sandbox::{Capabilities, NetworkPolicy, PolicyError, SandboxPolicy};

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
/// Smithers' caps on a caller's `timeoutMs` and `maxOutputBytes`: the sandbox policy's own.
const MAX_TIMEOUT_MS: f64 = toolsmith_sandbox::MAX_TIMEOUT.as_millis() as f64;
const MAX_OUTPUT_BYTES: f64 = toolsmith_sandbox::MAX_OUTPUT_BYTES as f64;

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
///    Then the caller's own bounds, from the run's metadata ([`ToolContext::metadata`]) as a
///    Smithers caller passes them in its context: `maxOutputBytes` (`maxOutputBytes must be
///    positive.`, `maxOutputBytes exceeds 10485760.`) and `timeoutMs` (`timeoutMs must be
///    positive.`, `timeoutMs exceeds 3600000.`). They only ever lower the policy's limits: the
///    smaller of the two applies. The model cannot set them (they are not in the input).
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
    /// The policy commands run under: the workspace's, or the one given to
    /// [`with_policy`](Bash::with_policy).
    policy: SandboxPolicy,
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
            policy: workspace.policy().clone(),
            workspace,
            launcher: OnceLock::new(),
        }
    }

    /// The tool with an explicit launcher: its policy is the one enforced and the one the
    /// network guard follows; `cwd` is confined to the workspace's root.
    pub fn with_launcher(workspace: Arc<Workspace>, launcher: Launcher) -> Self {
        let mut bash = Bash::new(workspace);
        bash.policy = launcher.policy().clone();
        let _ = bash.launcher.set(Ok(launcher));
        bash
    }

    /// The tool for `workspace`, its commands run under `policy` instead of the workspace's
    /// (a config's per-tool sandbox settings: another network, other limits, more
    /// environment). The policy must keep the workspace's root and writable directories: start
    /// from a clone of [`Workspace::policy`].
    ///
    /// # Errors
    ///
    /// Limits out of bounds (Smithers' texts, as [`SandboxPolicy::validate`]); a policy whose
    /// root or writable directories are not the workspace's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolsmith_builtins::{Bash, Workspace};
    /// use toolsmith_sandbox::SandboxPolicy;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let workspace = Workspace::new(SandboxPolicy::new(dir.path())).unwrap();
    /// let mut policy = workspace.policy().clone();
    /// policy.limits.timeout = Duration::from_secs(5);
    /// assert!(Bash::with_policy(workspace.clone(), policy.clone()).is_ok());
    /// policy.limits.timeout = Duration::ZERO;
    /// let err = Bash::with_policy(workspace, policy).unwrap_err();
    /// assert_eq!(err.to_string(), "timeoutMs must be positive.");
    /// ```
    pub fn with_policy(
        workspace: Arc<Workspace>,
        policy: SandboxPolicy,
    ) -> Result<Self, PolicyError> {
        policy.validate()?;
        let own = workspace.policy();
        if policy.root != own.root || policy.extra_writable != own.extra_writable {
            return Err(PolicyError(
                "the policy's root and writable directories must be the workspace's".into(),
            ));
        }
        let mut bash = Bash::new(workspace);
        bash.policy = policy;
        Ok(bash)
    }

    /// The policy commands run under.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    fn launcher(&self) -> Result<&Launcher, ToolError> {
        self.launcher
            .get_or_init(|| {
                let helper = HelperCommand::locate()?;
                Ok(Launcher::with_capabilities(
                    helper,
                    self.policy.clone(),
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

/// The caller's own bounds (see [`Bash`]), checked in Smithers' order and with its texts.
#[derive(Debug, Default, PartialEq)]
struct CallBounds {
    timeout: Option<Duration>,
    output_bytes: Option<usize>,
}

impl CallBounds {
    fn from_metadata(metadata: &Map<String, Value>) -> Result<Self, ToolError> {
        let output_bytes = bound(metadata, "maxOutputBytes", MAX_OUTPUT_BYTES)?;
        let timeout = bound(metadata, "timeoutMs", MAX_TIMEOUT_MS)?;
        Ok(CallBounds {
            timeout: timeout.map(Duration::from_millis),
            output_bytes: output_bytes.map(|b| usize::try_from(b).expect("at most 10 MiB")),
        })
    }
}

/// `metadata[key]`, when present: a finite number above 0 and at most `max` (rounded up).
fn bound(metadata: &Map<String, Value>, key: &str, max: f64) -> Result<Option<u64>, ToolError> {
    let Some(value) = metadata.get(key) else {
        return Ok(None);
    };
    let Some(n) = value.as_f64().filter(|n| n.is_finite() && *n > 0.0) else {
        return Err(ToolError::invalid_input(format!("{key} must be positive.")));
    };
    if n > max {
        return Err(ToolError::invalid_input(format!("{key} exceeds {max}.")));
    }
    Ok(Some(n.ceil() as u64))
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
        let bounds = CallBounds::from_metadata(cx.metadata())?;
        let policy = &self.policy;
        if policy.network == NetworkPolicy::Off {
            guard::check(&cmd, &args)?;
        }
        let cwd = self
            .workspace
            .root()
            .resolve_dir(cwd_arg.as_deref().filter(|c| !c.is_empty()).unwrap_or("."))?;
        let launcher = self.launcher()?;
        let limits = &launcher.policy().limits;
        // The caller's bounds lower the policy's, never raise them.
        let timeout = bounds
            .timeout
            .map_or(limits.timeout, |t| t.min(limits.timeout));
        let limit = bounds
            .output_bytes
            .map_or(limits.output_bytes, |b| b.min(limits.output_bytes));
        let timed_out = || {
            let ms = timeout.as_millis();
            ToolError::new("PROCESS_TIMEOUT", format!("Command timed out after {ms}ms"))
                .with_details(json!({
                    "command": cmd, "args": args, "cwd": cwd, "timeoutMs": ms as u64,
                }))
        };
        let request = ExecRequest::new(cmd.clone(), args.clone(), cwd.clone());
        let run = launcher.run(&request);
        // Dropping the run future kills the command's whole process group: that is how a
        // caller's timeout shorter than the policy's stops it.
        let out = tokio::select! {
            out = run => out,
            () = tokio::time::sleep(timeout), if timeout < limits.timeout => {
                return Err(timed_out());
            }
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
        if out.timed_out {
            return Err(timed_out());
        }
        let out = cut(out, limit);
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

/// `out` with each stream cut to `limit` bytes (a caller's bound below the policy's), marked
/// truncated when that cut something.
fn cut(mut out: ExecOutput, limit: usize) -> ExecOutput {
    if out.stdout.len() > limit || out.stderr.len() > limit {
        out.truncated = true;
        out.stdout = truncate(out.stdout, limit);
        out.stderr = truncate(out.stderr, limit);
    }
    out
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
