//! `toolsmith run --approve`: which calls ask by default, and how each approval is answered.
//!
//! Contract:
//!
//! - The built-ins that change the workspace or run commands — [`CHANGING_TOOLS`](toolsmith_builtins::CHANGING_TOOLS): `write`,
//!   `edit`, `bash` — need approval in `toolsmith run` unless `--approve auto` is given, the
//!   way the agent harness's workspaces in `ask` mode treat them. A tool whose approval was
//!   already set keeps it, and a config's `needsApproval` (`true` or `false`) on the tool
//!   overrides the default, the sub-agents' and prompts' tools included. `run_code` is
//!   exempt: it has no file system, network or process, so it changes nothing outside its own
//!   call.
//! - A config with a `workspace` block replaces that default: its `permissionMode` decides
//!   which built-ins ask ([`WorkspaceConfig::builtins`](toolsmith_config::WorkspaceConfig::builtins)),
//!   `--approve auto` included, and `--approve` answers them.
//! - `--approve ask` (the default) asks on the terminal when standard input is one; when it is
//!   not, the call is denied with [`NO_TERMINAL`], said on standard error too, and the model
//!   sees the denial as the call's error result. The run goes on and exits 0 when it finishes.
//!   (A stored run, `--db`, that has nobody to ask ends paused instead, to be resumed with
//!   `--approve auto|deny`.)
//! - `--approve auto` approves every call that asks, `--approve deny` denies it
//!   ([`DENIED_BY_FLAG`]).

use std::io::IsTerminal;

use clap::ValueEnum;
use toolsmith_core::{Pause, ToolApprovalResponse, Toolset};

use super::run::ask_line;

/// `--approve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ApproveMode {
    /// Ask on the terminal.
    Ask,
    /// Approve every call.
    Auto,
    /// Deny every call.
    Deny,
}

/// The reason a call is denied when `--approve ask` has no terminal to ask on.
pub(crate) const NO_TERMINAL: &str =
    "Denied: no terminal to ask for approval; run toolsmith with --approve auto to allow it.";

/// The reason of a denial by `--approve deny`.
pub(crate) const DENIED_BY_FLAG: &str = "Denied by --approve deny.";

/// The reason of a denial typed at the terminal.
pub(crate) const DENIED_AT_TERMINAL: &str = "Denied at the terminal.";

/// `builtins` with approval required on every call of the [`CHANGING_TOOLS`](toolsmith_builtins::CHANGING_TOOLS) tools whose
/// approval is not set (`Approval::Policy`), unless `mode` approves everything anyway.
pub(crate) fn ask_by_default(builtins: Toolset, mode: ApproveMode) -> Toolset {
    if mode == ApproveMode::Auto {
        return builtins;
    }
    toolsmith_builtins::ask_before_changes(builtins)
}

/// The answer to one approval under `mode`: asked on the terminal (`y`, `n` or `a` for always),
/// or given at once.
pub(crate) async fn answer(pause: &Pause, mode: ApproveMode) -> ToolApprovalResponse {
    let id = pause.approval_id().unwrap_or_default().to_string();
    match mode {
        ApproveMode::Auto => return ToolApprovalResponse::approve(id),
        ApproveMode::Deny => return ToolApprovalResponse::deny(id, DENIED_BY_FLAG),
        ApproveMode::Ask => {}
    }
    if !std::io::stdin().is_terminal() {
        return no_terminal(pause, id);
    }
    let question = format!(
        "approve {} {}? [y]es, [n]o, [a]lways for this tool: ",
        pause.tool_name, pause.input
    );
    loop {
        let Some(line) = ask_line(question.clone()).await else {
            return no_terminal(pause, id);
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return ToolApprovalResponse::approve(id),
            "n" | "no" => return ToolApprovalResponse::deny(id, DENIED_AT_TERMINAL),
            "a" | "always" => return ToolApprovalResponse::approve(id).always(),
            _ => {}
        }
    }
}

/// The denial of a call nobody can be asked about, said on standard error as well: the model
/// sees the reason, the user reading the output sees why nothing was written.
fn no_terminal(pause: &Pause, id: String) -> ToolApprovalResponse {
    eprintln!(
        "denied {}: no terminal to ask for approval (run with --approve auto to allow it)",
        pause.tool_name
    );
    ToolApprovalResponse::deny(id, NO_TERMINAL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use toolsmith_builtins::Workspace;
    use toolsmith_core::Approval;
    use toolsmith_sandbox::SandboxPolicy;

    fn builtins() -> (tempfile::TempDir, Toolset) {
        let dir = tempfile::tempdir().unwrap();
        let workspace: Arc<Workspace> = Workspace::new(SandboxPolicy::new(dir.path())).unwrap();
        let tools = toolsmith_builtins::all(&workspace);
        (dir, tools)
    }

    /// The list is every side-effecting built-in but `run_code`: a new built-in that writes
    /// or runs something cannot slip past the default unnoticed.
    #[test]
    fn the_default_covers_every_side_effecting_built_in_but_run_code() {
        let (_dir, tools) = builtins();
        let side_effecting: Vec<&str> = tools
            .iter()
            .filter(|t| t.meta().side_effect)
            .map(|t| t.spec().name())
            .filter(|name| *name != "run_code")
            .collect();
        let mut expected = toolsmith_builtins::CHANGING_TOOLS.to_vec();
        let mut found = side_effecting.clone();
        expected.sort_unstable();
        found.sort_unstable();
        assert_eq!(found, expected);
    }

    #[test]
    fn ask_and_deny_require_approval_of_the_default_tools_and_auto_does_not() {
        for mode in [ApproveMode::Ask, ApproveMode::Deny, ApproveMode::Auto] {
            let (_dir, tools) = builtins();
            let tools = ask_by_default(tools, mode);
            for tool in tools.iter() {
                let name = tool.spec().name();
                let asks = matches!(tool.meta().approval, Approval::Always);
                let expected =
                    mode != ApproveMode::Auto && toolsmith_builtins::CHANGING_TOOLS.contains(&name);
                assert_eq!(asks, expected, "{mode:?} {name}");
            }
        }
    }

    #[test]
    fn a_tool_whose_approval_is_set_keeps_it() {
        let (_dir, tools) = builtins();
        let tools = tools.map_meta("write", |meta| meta.approval(Approval::Never));
        let tools = ask_by_default(tools, ApproveMode::Ask);
        let write = tools.get("write").unwrap();
        assert!(matches!(write.meta().approval, Approval::Never));
    }
}
