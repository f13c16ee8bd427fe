//! Built-in tools for toolsmith agents.
//!
//! Each built-in is an ordinary [`Tool`](toolsmith_core::Tool), usable on its own or added to a
//! [`Toolset`]; [`all`] returns every built-in at once. The workspace tools (files, commands,
//! code) share a [`Workspace`]: the confined root and the user's
//! [`SandboxPolicy`](toolsmith_sandbox::SandboxPolicy).
//!
//! | Tool         | Constructor      | What it does                                       |
//! |--------------|------------------|----------------------------------------------------|
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

mod calculator;
mod workspace;

pub use calculator::{Calculator, calculator};
pub use workspace::{Workspace, WorkspaceError};

use std::sync::Arc;

use toolsmith_core::Toolset;

/// Every built-in tool, in a [`Toolset`], the workspace tools confined to `workspace`.
pub fn all(workspace: &Arc<Workspace>) -> Toolset {
    let _ = workspace;
    Toolset::new().with(calculator())
}
