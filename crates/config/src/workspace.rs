//! The `workspace` key: the agent harness's permission modes and read-only workspaces.
//!
//! Contract:
//!
//! - `workspace: {"permissionMode"?: "ask" | "bypass", "readOnly"?: bool}`; defaults `"ask"`
//!   and `false`. Only a top-level config has one: sub-agents and prompts share their parent's
//!   workspace.
//! - `ask`: [`ASKING_TOOLS`] (`write`, `edit`, `bash`) need approval on every call; `read`,
//!   `glob` and `grep` never ask because of the workspace.
//! - `bypass`: nothing asks because of the workspace. What asks for another reason still asks
//!   (fail closed): a tool's own `needsApproval: true`, the `approval` block's policy.
//! - `readOnly`: the only built-ins offered are [`READ_ONLY_TOOLS`] (`read`, `glob`); a `tools`
//!   entry naming another built-in is refused
//!   (`config.tools.write is not available in a read-only workspace`).
//! - A config without a `tools` key offers [`WORKSPACE_TOOLS`] (`read`, `write`, `edit`,
//!   `glob`, `grep`, `bash`), or [`READ_ONLY_TOOLS`] in a read-only workspace: what the agent
//!   harness gives an agent with a workspace, not every built-in.

use serde_json::Value;
use toolsmith_core::{Approval, Toolset};

use super::{BUILTIN_TOOLS, ConfigError, error};

/// The built-ins a config without a `tools` key offers: the agent harness's workspace tools.
pub const WORKSPACE_TOOLS: &[&str] = &["read", "write", "edit", "glob", "grep", "bash"];

/// The built-ins a read-only workspace offers.
pub const READ_ONLY_TOOLS: &[&str] = &["read", "glob"];

/// The built-ins that ask in `ask` mode.
pub const ASKING_TOOLS: &[&str] = &["write", "edit", "bash"];

/// Which tool calls ask because of the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermissionMode {
    /// `"ask"` (the default): [`ASKING_TOOLS`] ask on every call.
    #[default]
    Ask,
    /// `"bypass"`: nothing asks because of the workspace.
    Bypass,
}

/// The `workspace` block.
///
/// ```
/// use toolsmith_config::{AgentConfig, PermissionMode};
///
/// let config = AgentConfig::from_json(r#"{"workspace": {"readOnly": true}}"#).unwrap();
/// let workspace = config.workspace.unwrap();
/// assert_eq!(workspace.permission_mode, PermissionMode::Ask);
/// assert!(workspace.offers("glob") && !workspace.offers("grep"));
///
/// let err = AgentConfig::from_json(r#"{"workspace": {"readOnly": true}, "tools": {"write": {}}}"#)
///     .unwrap_err();
/// assert_eq!(err.to_string(), "config.tools.write is not available in a read-only workspace");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkspaceConfig {
    /// `permissionMode`.
    pub permission_mode: PermissionMode,
    /// `readOnly`: only `read` and `glob` are offered.
    pub read_only: bool,
}

impl WorkspaceConfig {
    /// Parses the block at `config.workspace`.
    pub(crate) fn parse(value: Value) -> Result<Self, ConfigError> {
        let Value::Object(mut block) = value else {
            return Err(error("config.workspace must be an object"));
        };
        let mut workspace = WorkspaceConfig::default();
        match block.remove("permissionMode") {
            None | Some(Value::Null) => {}
            Some(Value::String(mode)) if mode == "ask" => {}
            Some(Value::String(mode)) if mode == "bypass" => {
                workspace.permission_mode = PermissionMode::Bypass;
            }
            Some(_) => {
                return Err(error(
                    "config.workspace.permissionMode must be \"ask\" or \"bypass\"",
                ));
            }
        }
        match block.remove("readOnly") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(read_only)) => workspace.read_only = read_only,
            Some(_) => return Err(error("config.workspace.readOnly must be a boolean")),
        }
        if let Some(key) = block.keys().next() {
            return Err(error(format!(
                "config.workspace.{key} is not a supported setting"
            )));
        }
        Ok(workspace)
    }

    /// Whether the built-in `name` is offered: in a read-only workspace, only [`READ_ONLY_TOOLS`].
    pub fn offers(&self, name: &str) -> bool {
        !self.read_only || READ_ONLY_TOOLS.contains(&name)
    }

    /// Whether calls of the built-in `name` ask because of the workspace.
    pub fn asks(&self, name: &str) -> bool {
        self.permission_mode == PermissionMode::Ask && ASKING_TOOLS.contains(&name)
    }

    /// The built-ins of `all` this workspace offers, those that ask in `ask` mode asking on
    /// every call (unless their approval is already set): what the caller that owns the
    /// workspace passes as [`BuildContext::builtins`](crate::BuildContext::builtins), so that
    /// sub-agents and prompts get the same.
    ///
    /// ```
    /// use toolsmith_config::WorkspaceConfig;
    /// use toolsmith_core::{Approval, Toolset, from_fn};
    ///
    /// let tool = |name: &'static str| from_fn(name, "A tool.", |_: serde_json::Value, _cx| async {
    ///     Ok::<_, toolsmith_core::ToolError>("ok")
    /// });
    /// let all = Toolset::new().with(tool("read")).with(tool("write"));
    /// let tools = WorkspaceConfig::default().builtins(all.clone());
    /// assert!(matches!(tools.get("write").unwrap().meta().approval, Approval::Always));
    /// assert!(matches!(tools.get("read").unwrap().meta().approval, Approval::Policy));
    /// let read_only = WorkspaceConfig { read_only: true, ..Default::default() };
    /// assert_eq!(read_only.builtins(all).names().collect::<Vec<_>>(), ["read"]);
    /// ```
    pub fn builtins(&self, all: Toolset) -> Toolset {
        let mut tools = Toolset::new();
        for tool in all.iter() {
            let name = tool.spec().name();
            if !BUILTIN_TOOLS.contains(&name) || self.offers(name) {
                tools.add(tool.clone());
            }
        }
        for name in ASKING_TOOLS {
            let unset = tools
                .get(name)
                .is_some_and(|t| matches!(t.meta().approval, Approval::Policy));
            if self.asks(name) && unset {
                tools = tools.map_meta(name, |meta| meta.approval(Approval::Always));
            }
        }
        tools
    }
}

/// The built-ins a config without a `tools` key offers.
pub(crate) fn default_tools(workspace: Option<&WorkspaceConfig>) -> &'static [&'static str] {
    match workspace {
        Some(workspace) if workspace.read_only => READ_ONLY_TOOLS,
        _ => WORKSPACE_TOOLS,
    }
}

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
