//! [`Workspace`]: what the file and process tools share: the confined root and the policy.

use std::io;
use std::sync::Arc;

use toolsmith_sandbox::{PolicyError, RootDir, SandboxPolicy};

/// The confined root and the user's sandbox policy, shared by every workspace tool.
///
/// ```
/// use toolsmith_builtins::Workspace;
/// use toolsmith_sandbox::SandboxPolicy;
///
/// let dir = tempfile::tempdir().unwrap();
/// let workspace = Workspace::new(SandboxPolicy::new(dir.path())).unwrap();
/// assert_eq!(workspace.root().path(), dir.path().canonicalize().unwrap());
/// ```
#[derive(Debug)]
pub struct Workspace {
    root: RootDir,
    policy: SandboxPolicy,
}

/// Why a workspace could not be opened.
#[derive(Debug)]
pub enum WorkspaceError {
    /// The policy is out of bounds.
    Policy(PolicyError),
    /// The root cannot be opened.
    Root(io::Error),
}

impl std::fmt::Display for WorkspaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkspaceError::Policy(e) => write!(f, "invalid sandbox policy: {e}"),
            WorkspaceError::Root(e) => write!(f, "cannot open the workspace root: {e}"),
        }
    }
}

impl std::error::Error for WorkspaceError {}

impl Workspace {
    /// Opens the policy's root. The policy's root is replaced by its canonical path.
    ///
    /// # Errors
    ///
    /// The policy's limits out of bounds, or a root that is not an openable directory.
    pub fn new(mut policy: SandboxPolicy) -> Result<Arc<Self>, WorkspaceError> {
        policy.validate().map_err(WorkspaceError::Policy)?;
        let root = RootDir::open(&policy.root).map_err(WorkspaceError::Root)?;
        policy.root = root.path().to_path_buf();
        Ok(Arc::new(Workspace { root, policy }))
    }

    /// The confined root.
    pub fn root(&self) -> &RootDir {
        &self.root
    }

    /// The sandbox policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }
}
