//! Built-in tools for toolsmith agents.
//!
//! Each built-in is an ordinary [`Tool`](toolsmith_core::Tool), usable on its own or added to a
//! [`Toolset`]; [`all`] returns every built-in at once. The workspace tools (files, commands,
//! code) share a [`Workspace`]: the confined root and the user's
//! [`SandboxPolicy`](toolsmith_sandbox::SandboxPolicy).
//!
//! `write` replaces only a file the run has read ([`FILE_NOT_READ`] otherwise); `write` and
//! `edit` never touch git metadata while the policy protects it ([`PATH_PROTECTED`]), never
//! set a set-ID bit, and return what they replaced as a [`FileChange`] artifact, which
//! [`revert_file_change`] puts back.
//!
//! | Tool         | Constructor      | What it does                                       |
//! |--------------|------------------|----------------------------------------------------|
//! | `read`       | [`read()`]       | Reads a UTF-8 file, whole or a window of lines ([`Read`]) |
//! | `write`      | [`write()`]      | Creates or replaces a file atomically ([`Write`]) |
//! | `edit`       | [`edit()`]       | Applies a unified diff or an exact string replacement ([`Edit`]) |
//! | `grep`       | [`grep()`]       | Searches file contents with a regex, ripgrep-style ([`Grep`]) |
//! | `glob`       | [`glob()`]       | Lists files matching a glob, newest first ([`Glob`]) |
//! | `bash`       | [`bash()`]       | Runs a command in the kernel sandbox ([`Bash`])     |
//! | `run_code`   | [`run_code()`]   | Runs JavaScript in a fresh QuickJS runtime, in a sandboxed worker process killed at its deadline ([`RunCode`]) |
//! | `calculator` | [`calculator()`] | Evaluates an arithmetic expression exactly ([`Calculator`]) |
//!
//! # Example
//!
//! ```
//! use toolsmith_core::Toolset;

//!
//! let dir = tempfile::tempdir().unwrap();
//! let workspace = toolsmith_builtins::Workspace::new(
//!     toolsmith_sandbox::SandboxPolicy::new(dir.path()),
//! ).unwrap();
//! let tools = toolsmith_builtins::all(&workspace);
//! assert!(tools.contains("calculator"));
//!
//! // Or pick the tools one by one.
//! let tools = Toolset::new().with(toolsmith_builtins::calculator());
//! assert!(tools.contains("calculator"));
//! ```

mod bash;
mod calculator;
mod edit;
mod file_change;
#[doc(hidden)]
pub mod fuzzing;
mod glob;
mod grep;
mod pattern;
mod protect;
mod read;
pub mod revert;
mod run_code;
mod seen;
mod temp_dir;
mod walk;
mod workspace;
mod write;

pub use bash::{Bash, PROCESS_CANCELLED, bash, network_guard};
pub use calculator::{Calculator, calculator};
pub use edit::{Edit, edit};
pub use file_change::{FILE_CHANGE_ARTIFACT, FileAfter, FileBefore, FileChange};
pub use glob::{Glob, MAX_GLOB_ENTRIES, glob};
pub use grep::{Grep, grep};
pub use protect::PATH_PROTECTED;
pub use read::{DEFAULT_LINE_LIMIT, Read, read};
pub use revert::{REVERT_COPY_ALTERED, REVERT_FILE_CHANGED, Reverted, revert_file_change};
pub use run_code::{
    RUN_CODE_CANCELLED, RUN_CODE_ERROR, RUN_CODE_OUT_OF_MEMORY, RUN_CODE_TIMEOUT,
    RUN_CODE_WORKER_ARG, RUN_CODE_WORKER_ENV, RunCode, RunCodeLimits, RunCodeWorker, WorkerProbe,
    run_code, run_code_worker_main,
};
pub use seen::{FILE_NOT_READ, MAX_SEEN_FILES, SEEN_FILES_STATE_KEY};
pub use workspace::{Workspace, WorkspaceError};
pub use write::{Write, write};

use std::sync::Arc;

use toolsmith_core::{Approval, Toolset};

/// The built-ins that change the workspace or run commands, which ask before every call unless
/// told otherwise ([`ask_before_changes`]): `write`, `edit`, `bash`.
pub const CHANGING_TOOLS: &[&str] = &["write", "edit", "bash"];

/// `tools` with approval required on every call of the [`CHANGING_TOOLS`] whose approval is not
/// set (`Approval::Policy`): what `toolsmith run` and the service offer by default, as the agent
/// harness's `ask` permission mode does (a config's `needsApproval: false` turns it off).
///
/// ```
/// use toolsmith_builtins::{Workspace, all, ask_before_changes};
/// use toolsmith_core::Approval;
/// use toolsmith_sandbox::SandboxPolicy;
///
/// let workspace = Workspace::new(SandboxPolicy::new(std::env::temp_dir())).unwrap();
/// let tools = ask_before_changes(all(&workspace));
/// assert!(matches!(tools.get("write").unwrap().meta().approval, Approval::Always));
/// assert!(matches!(tools.get("read").unwrap().meta().approval, Approval::Policy));
/// ```
pub fn ask_before_changes(mut tools: Toolset) -> Toolset {
    for name in CHANGING_TOOLS {
        let unset = tools
            .get(name)
            .is_some_and(|t| matches!(t.meta().approval, Approval::Policy));
        if unset {
            tools = tools.map_meta(name, |meta| meta.approval(Approval::Always));
        }
    }
    tools
}

/// Every built-in tool, in a [`Toolset`], the workspace tools confined to `workspace`: `read`,
/// `write`, `edit`, `grep`, `glob`, `bash`, `run_code`, `calculator`.
pub fn all(workspace: &Arc<Workspace>) -> Toolset {
    Toolset::new()
        .with(read(workspace))
        .with(write(workspace))
        .with(edit(workspace))
        .with(grep(workspace))
        .with(glob(workspace))
        .with(bash(workspace))
        .with(run_code(workspace))
        .with(calculator())
}
