//! [`Launcher`] and [`HelperCommand`]: posix_spawn the helper with the plan.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;

use super::capture::{self, Captured};
use super::helper::ERROR_MARKER;
use super::{ExecError, ExecOutput, ExecRequest, HELPER_ARG, Plan};
use crate::probe::NamespaceProbe;
use crate::{Capabilities, SandboxPolicy};

/// The environment variable naming the helper program explicitly.
pub const HELPER_ENV: &str = "TOOLSMITH_SANDBOX_HELPER";

/// How to start the helper: a program and the arguments before the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperCommand {
    program: PathBuf,
    prefix: Vec<String>,
}

impl HelperCommand {
    /// The dedicated helper binary at `program` (`toolsmith-sandbox-exec`).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        HelperCommand {
            program: program.into(),
            prefix: Vec::new(),
        }
    }

    /// The `toolsmith` CLI at `program`, invoked as `toolsmith __sandbox-exec …`.
    pub fn cli(program: impl Into<PathBuf>) -> Self {
        HelperCommand {
            program: program.into(),
            prefix: vec![HELPER_ARG.into()],
        }
    }

    /// The helper program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Finds the helper: `$TOOLSMITH_SANDBOX_HELPER`; else `toolsmith-sandbox-exec` next to the
    /// current executable (or one directory up when that is cargo's `deps/`); else the current
    /// executable itself when it is named `toolsmith`.
    ///
    /// # Errors
    ///
    /// [`ExecError::Helper`] saying where it looked.
    pub fn locate() -> Result<HelperCommand, ExecError> {
        if let Some(path) = std::env::var_os(HELPER_ENV) {
            let path = PathBuf::from(path);
            if path.is_file() {
                return Ok(if path.file_name().is_some_and(|n| n == "toolsmith") {
                    HelperCommand::cli(path)
                } else {
                    HelperCommand::new(path)
                });
            }
            return Err(ExecError::Helper(format!(
                "{HELPER_ENV}={} is not a file",
                path.display()
            )));
        }
        let exe = std::env::current_exe()
            .map_err(|e| ExecError::Helper(format!("cannot find the current executable: {e}")))?;
        let mut dirs: Vec<&Path> = exe.parent().into_iter().collect();
        if let Some(dir) = dirs.first().copied()
            && dir.file_name().is_some_and(|n| n == "deps")
            && let Some(up) = dir.parent()
        {
            dirs.push(up);
        }
        for dir in &dirs {
            let candidate = dir.join("toolsmith-sandbox-exec");
            if candidate.is_file() {
                return Ok(HelperCommand::new(candidate));
            }
        }
        if exe.file_name().is_some_and(|n| n == "toolsmith") {
            return Ok(HelperCommand::cli(exe));
        }
        Err(ExecError::Helper(format!(
            "toolsmith-sandbox-exec not found next to {} (set {HELPER_ENV})",
            exe.display()
        )))
    }

    pub(super) fn command(&self, mode: &str) -> std::process::Command {
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.prefix).arg(mode).env_clear();
        command
    }

    /// Runs the helper's `probe` mode (namespaces), synchronously.
    pub(crate) fn probe(&self) -> std::io::Result<NamespaceProbe> {
        let output = self.command("probe").stdin(Stdio::null()).output()?;
        serde_json::from_slice(&output.stdout).map_err(std::io::Error::other)
    }
}

/// Runs commands under a [`SandboxPolicy`] through the helper.
///
/// ```no_run
/// use toolsmith_sandbox::exec::{ExecRequest, HelperCommand, Launcher};
/// use toolsmith_sandbox::SandboxPolicy;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let launcher = Launcher::new(HelperCommand::locate()?, SandboxPolicy::new("/work/project"));
/// let out = launcher.run(&ExecRequest::new("ls", vec![], "/work/project")).await?;
/// println!("{} {}", out.exit_code, out.stdout);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Launcher {
    pub(super) helper: HelperCommand,
    policy: SandboxPolicy,
    caps: Capabilities,
}

impl Launcher {
    /// A launcher for `policy`, probing the machine through `helper` (one short spawn).
    pub fn new(helper: HelperCommand, policy: SandboxPolicy) -> Self {
        let caps = Capabilities::detect_with(Some(&helper));
        Launcher::with_capabilities(helper, policy, caps)
    }

    /// A launcher with capabilities already detected.
    pub fn with_capabilities(
        helper: HelperCommand,
        policy: SandboxPolicy,
        caps: Capabilities,
    ) -> Self {
        Launcher {
            helper,
            policy,
            caps,
        }
    }

    /// The capabilities the plans are made for.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// Runs `request` confined, with the policy's timeout and output caps.
    ///
    /// # Errors
    ///
    /// [`ExecError::Unavailable`] (fail-closed and a layer missing), [`ExecError::Helper`],
    /// [`ExecError::Setup`], [`ExecError::Spawn`]. A timeout is not an error: see
    /// [`ExecOutput::timed_out`].
    pub async fn run(&self, request: &ExecRequest) -> Result<ExecOutput, ExecError> {
        let (plan, warnings) = Plan::build(&self.policy, &self.caps, request, utf8_vars())?;
        let json = serde_json::to_vec(&plan).map_err(|e| ExecError::Setup(e.to_string()))?;
        let mut command = tokio::process::Command::from(self.helper.command("run"));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            ExecError::Helper(format!(
                "cannot start {}: {e}",
                self.helper.program.display()
            ))
        })?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        // The helper reads the plan before anything else; a failed write shows as its error.
        let _ = stdin.write_all(&json).await;
        drop(stdin);
        let limits = &self.policy.limits;
        let captured = capture::supervise(child, limits.timeout, limits.output_bytes).await?;
        into_output(captured, warnings)
    }
}

/// The runtime's environment variables that are valid UTF-8 (`std::env::vars` would panic).
pub(super) fn utf8_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

/// Turns the capture into the result, recognising the helper's own error line.
fn into_output(captured: Captured, warnings: Vec<String>) -> Result<ExecOutput, ExecError> {
    if !captured.timed_out
        && captured.signal.is_none()
        && let Some(rest) = captured.stderr.strip_prefix(ERROR_MARKER.as_bytes())
    {
        let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
        let value: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
        let kind = value["kind"].as_str().unwrap_or("setup").to_string();
        let message = value["message"].as_str().unwrap_or("unknown").to_string();
        return Err(if kind == "exec" {
            ExecError::Spawn(message)
        } else {
            ExecError::Setup(format!("{kind}: {message}"))
        });
    }
    let (stdout, cut_out) = capture::utf8_prefix(&captured.stdout, captured.cap);
    let (stderr, cut_err) = capture::utf8_prefix(&captured.stderr, captured.cap);
    Ok(ExecOutput {
        exit_code: captured.code.unwrap_or(1),
        signal: captured.signal.map(capture::signal_name),
        stdout,
        stderr,
        truncated: cut_out || cut_err,
        total_bytes: captured.total_bytes,
        timed_out: captured.timed_out,
        warnings,
    })
}
