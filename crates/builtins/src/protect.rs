//! Git protection for the file tools: with the policy's `protect_git` on (the default), `write`
//! and `edit` change nothing inside a repository's git metadata, so that no model can plant a
//! hook, a `core.fsmonitor` or an alias that the user's next `git status` runs outside any
//! sandbox.
//!
//! The rule: a path is protected when a component of it is named `.git` (any letter case, since
//! git on a case-insensitive filesystem treats `.GIT` as `.git`), at any depth (nested
//! repositories, submodules), the entry `.git` itself included (a file there points git at
//! another directory). It is checked on the path as given, normalised, and on the path the
//! existing part of it resolves to, so a symlink such as `g -> .git` does not lead around it.
//! A symlink swapped in between this check and the write is not caught: the sandboxed commands
//! that could swap it are the other layer's concern. Reading is not restricted.

use std::ffi::OsStr;
use std::path::{Component, Path};

use serde_json::json;
use toolsmith_core::ToolError;

use crate::Workspace;

/// The error code of a file tool refusing a path the policy protects.
pub const PATH_PROTECTED: &str = "TOOL_PATH_PROTECTED";

/// Refuses `path` (as the model gave it; `relative` is its normalised form beneath the root)
/// when git protection is on and it lies inside git metadata.
///
/// # Errors
///
/// [`PATH_PROTECTED`]: `Refusing to change <path>: it is git metadata, and git protection is
/// on (the sandbox policy's protect_git; the user can turn it off)`, details `{path}`.
pub(crate) fn check_git(
    workspace: &Workspace,
    path: &str,
    relative: &Path,
) -> Result<(), ToolError> {
    if !workspace.policy().protect_git {
        return Ok(());
    }
    if is_git_path(relative) || resolves_into_git(workspace.root().path(), relative) {
        return Err(ToolError::new(
            PATH_PROTECTED,
            format!(
                "Refusing to change {path}: it is git metadata, and git protection is on (the \
                 sandbox policy's protect_git; the user can turn it off)"
            ),
        )
        .with_details(json!({ "path": path })));
    }
    Ok(())
}

/// Whether a component of `path` is `.git`, in any letter case.
fn is_git_path(path: &Path) -> bool {
    path.components().any(|c| match c {
        Component::Normal(name) => is_git_name(name),
        _ => false,
    })
}

fn is_git_name(name: &OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

/// Whether the longest existing prefix of `root/relative` resolves (following symlinks) to a
/// path beneath `root` inside git metadata. `root` is canonical.
fn resolves_into_git(root: &Path, relative: &Path) -> bool {
    let mut probe = root.join(relative);
    loop {
        if let Ok(real) = std::fs::canonicalize(&probe) {
            return real.strip_prefix(root).is_ok_and(is_git_path);
        }
        if !probe.pop() || probe == root {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_components_at_any_depth_and_case() {
        for path in [
            ".git",
            ".git/config",
            "a/.git/hooks/pre-commit",
            "sub/.GIT/x",
            ".Git",
        ] {
            assert!(is_git_path(Path::new(path)), "{path}");
        }
        for path in [
            "",
            "git",
            ".github/workflows/ci.yml",
            ".gitignore",
            "a/.git2/x",
            "x.git",
        ] {
            assert!(!is_git_path(Path::new(path)), "{path}");
        }
    }
}
