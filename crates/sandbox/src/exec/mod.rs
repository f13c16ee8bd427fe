//! The sandboxed process launcher.
//!
//! The runtime never forks itself (a fork of a large process costs ~20 ms). The helper program
//! ([`HelperCommand`]) is posix_spawned with an empty environment and one end of a Unix socket pair
//! as its **stdin**; it calls `setsid` and blocks reading its [`Plan`], one JSON document.
//! [`Launcher::run`] writes the plan to a helper started ahead of time, its *spare* (`warm.rs`),
//! which has already entered the namespaces of the launcher's policy ([`Ahead`]) and built its
//! Landlock ruleset, forked by the launcher's resident helper (`resident.rs`), or to a fresh one
//! when there is none; the helper reads it to EOF, keeps the socket as its error
//! channel (close-on-exec), reopens stdin on `/dev/null`, applies every layer to itself
//! ([`helper_main`]) and `execve`s the target. The supervisor captures stdout and stderr with
//! separate caps and kills the process group (and the pid namespace with it) on timeout.
//!
//! When the helper cannot apply a layer it writes a JSON object `{kind, message}` to the error
//! channel and exits with status 125 (127 when the target cannot be executed); the launcher
//! turns the report into an [`ExecError`]. The command never holds the channel, so nothing it
//! writes (to stderr or anywhere) can pass for a setup error, and its own exit status 125 or
//! 127 is just an exit status.
//!
//! With [`SandboxPolicy::protect_git`](crate::SandboxPolicy::protect_git), the launcher also
//! inspects the workspace's git metadata before the command ([`GitProtection`]), the helper
//! binds it (read-only where it decides what git executes), and what the command created there
//! anyway is undone once it is over: [`ExecOutput::undone`] says what.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that spawned the helper exits, so `run`'s helpers
//! are all spawned on one process-wide thread that never exits (`warm.rs`): `run` may be called
//! from any thread. Dropping the `run` future kills the whole process group.
//!
//! The helper also has a [`degrade`] mode, a testing aid that runs a command on an emulated
//! machine without Landlock, openat2 or namespaces.

mod ahead;
mod capture;
mod cgroup;
mod channel;
pub mod degrade;
mod helper;
mod landlock;
mod launcher;
mod loopback;
mod netns;
mod plan;
mod process;
mod resident;
mod rules;
mod seccomp;
mod spawn;
mod tree;
mod warm;

pub use ahead::Ahead;
pub use cgroup::{Cgroup, CgroupSupport, CgroupVersion, Hierarchy};
pub use helper::helper_main;
pub use launcher::{HelperCommand, Launcher, locate_program};
pub(crate) use plan::kernel_supports_mediation;
pub use plan::{
    InheritedRule, LandlockPlan, MountPlan, NamespacePlan, Plan, RlimitPlan, SeccompPlan,
};
pub use spawn::{Ended, GroupKiller, SandboxedChild, SpawnRequest};

use std::path::PathBuf;

use serde::Serialize;

use crate::git::GitProtection;

/// The argument that selects the helper in the `toolsmith` binary (`toolsmith __sandbox-exec`).
pub const HELPER_ARG: &str = "__sandbox-exec";

/// The exit status of the helper when it could not apply a layer.
pub const SETUP_FAILED_STATUS: i32 = 125;

/// The exit status of the helper when the target could not be executed.
pub const EXEC_FAILED_STATUS: i32 = 127;

/// Runs `work`, which may wait in the kernel (a namespace's teardown, a control group's removal),
/// off the caller's path: on a blocking thread of the tokio runtime at hand, or at once without
/// one.
pub(crate) fn off_path(work: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(work)),
        Err(_) => work(),
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The program (looked up in the sandbox's `PATH` when it has no `/`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory (already confined by the caller, e.g. `RootDir::resolve_dir`).
    pub cwd: PathBuf,
}

impl ExecRequest {
    /// A request to run `program` with `args` in `cwd`.
    pub fn new(program: impl Into<String>, args: Vec<String>, cwd: impl Into<PathBuf>) -> Self {
        ExecRequest {
            program: program.into(),
            args,
            cwd: cwd.into(),
        }
    }
}

/// What a sandboxed command did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecOutput {
    /// The exit code; 1 when the process died from a signal (as in Smithers).
    pub exit_code: i32,
    /// The signal that killed it (`SIGKILL`…), if any.
    pub signal: Option<String>,
    /// Captured stdout, at most `output_bytes`, cut at a UTF-8 boundary.
    pub stdout: String,
    /// Captured stderr, at most `output_bytes`, cut at a UTF-8 boundary.
    pub stderr: String,
    /// Whether either stream was cut.
    pub truncated: bool,
    /// Bytes emitted on both streams, kept or not.
    pub total_bytes: u64,
    /// Whether the wall-clock timeout killed it.
    pub timed_out: bool,
    /// Layers the policy asked for that were not enforced (best-effort mode only), and layers
    /// that stand in for a missing one (no private `/proc`, no pid namespace).
    pub warnings: Vec<String>,
    /// Changes to what git executes that were undone after the command (git protection): one
    /// sentence each, for the model (`commands cannot change what git runs for you (git
    /// protection); the change to .git/commondir was undone`). Empty almost always.
    pub undone: Vec<String>,
}

/// Why a command could not be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecError {
    /// A layer the policy needs is unavailable and the policy fails closed.
    Unavailable {
        /// The missing layer (`filesystem (Landlock)`…).
        layer: String,
        /// Why it is missing.
        reason: String,
    },
    /// The helper program could not be found or started.
    Helper(String),
    /// The helper could not apply a layer on this launch.
    Setup(String),
    /// The target program could not be executed.
    Spawn(String),
}

impl ExecError {
    /// The error code the tools use: `SANDBOX_UNAVAILABLE` or `PROCESS_FAILED`.
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::Unavailable { .. } | ExecError::Setup(_) | ExecError::Helper(_) => {
                "SANDBOX_UNAVAILABLE"
            }
            ExecError::Spawn(_) => "PROCESS_FAILED",
        }
    }
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::Unavailable { layer, reason } => {
                write!(f, "sandbox layer unavailable: {layer}: {reason}")
            }
            ExecError::Helper(m) => write!(f, "sandbox helper unavailable: {m}"),
            ExecError::Setup(m) => write!(f, "sandbox setup failed: {m}"),
            ExecError::Spawn(m) => write!(f, "cannot execute: {m}"),
        }
    }
}

impl std::error::Error for ExecError {}
