//! [`Workspace`]: what the file and process tools share: the confined root and the policy.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolsmith_sandbox::{PolicyError, RootDir, SandboxPolicy};

use crate::temp_dir::private_temp_dir;

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
    temp: Option<PathBuf>,
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
    /// Commands also get a private temporary directory (mode 0700 under the system's temporary
    /// directory, removed with the workspace): it is added to the policy's writable directories
    /// and passed as `TMPDIR`, since the sandbox lets nothing else outside the root be written.
    /// A policy that already sets `TMPDIR` keeps its own.
    ///
    /// # Errors
    ///
    /// The policy's limits out of bounds, or a root that is not an openable directory.
    pub fn new(mut policy: SandboxPolicy) -> Result<Arc<Self>, WorkspaceError> {
        policy.validate().map_err(WorkspaceError::Policy)?;
        let root = RootDir::open(&policy.root).map_err(WorkspaceError::Root)?;
        policy.root = root.path().to_path_buf();
        let temp = if policy.env.set.iter().any(|(k, _)| k == "TMPDIR") {
            None
        } else {
            private_temp_dir().ok()
        };
        if let Some(temp) = &temp {
            policy.extra_writable.push(temp.clone());
            policy
                .env
                .set
                .push(("TMPDIR".into(), temp.to_string_lossy().into_owned()));
        }
        Ok(Arc::new(Workspace { root, policy, temp }))
    }

    /// The private temporary directory commands get as `TMPDIR`, if one was created.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_deref()
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

impl Drop for Workspace {
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = std::fs::remove_dir_all(temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_workspace_gets_a_private_temp_dir_removed_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(SandboxPolicy::new(dir.path())).unwrap();
        let temp = workspace.temp_dir().unwrap().to_path_buf();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&temp).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert!(workspace.policy().extra_writable.contains(&temp));
        assert!(
            workspace
                .policy()
                .env
                .set
                .contains(&("TMPDIR".to_string(), temp.to_string_lossy().into_owned()))
        );
        drop(workspace);
        assert!(!temp.exists());
    }

    #[test]
    fn a_policy_with_its_own_tmpdir_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut policy = SandboxPolicy::new(dir.path());
        policy.env.set.push(("TMPDIR".into(), "/custom".into()));
        let workspace = Workspace::new(policy).unwrap();
        assert!(workspace.temp_dir().is_none());
        assert!(workspace.policy().extra_writable.is_empty());
    }
}
