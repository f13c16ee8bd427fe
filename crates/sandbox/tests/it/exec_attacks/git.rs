//! Git protection: a sandboxed command cannot change what the user's git will execute. Each
//! attack runs on a fresh repository made by the test; afterwards the host's view of
//! `.git/config`, `.git/hooks` and the `.git` entry is compared with what it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use toolsmith_sandbox::exec::Launcher;

use super::launcher;
use crate::common::{caps, require, run, sh, survivors};

/// `git`, when installed (on the test's `PATH`, as the sandbox's `PATH` is).
fn git() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED git protection: git is not installed (apt-get install git)");
    }
    ok
}

fn protected() -> bool {
    let can_ns = caps().user_namespaces || caps().running_as_root;
    require(
        "git protection (mount namespace)",
        can_ns && caps().mount_namespaces,
    )
}

/// The opening of most attacks here: when git protection can be tested, a fresh repository (in
/// a directory deleted when the first value is dropped), its root, and a launcher for it with
/// the default policy.
fn protected_repo() -> Option<(tempfile::TempDir, PathBuf, Launcher)> {
    if !git() || !protected() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let l = launcher(&root, |_| {});
    Some((dir, root, l))
}

/// A fresh repository with one commit; returns its (canonical) root.
fn repo(dir: &Path) -> PathBuf {
    let root = dir.canonicalize().unwrap();
    host_git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README"), "hello\n").unwrap();
    host_git(&root, &["add", "README"]);
    host_git(&root, &["commit", "-qm", "first"]);
    root
}

fn host_git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(root)
        .env("HOME", root)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What decides what git runs, as the host sees it: the `.git` entry's kind, the config, every
/// file under hooks (name → content).
#[derive(Debug, PartialEq, Eq)]
struct View {
    dot_git: &'static str,
    config: Option<String>,
    hooks: BTreeMap<String, Vec<u8>>,
}

fn view(root: &Path) -> View {
    let dot_git = match root.join(".git").symlink_metadata() {
        Ok(m) if m.is_dir() => "dir",
        Ok(m) if m.is_file() => "file",
        Ok(_) => "other",
        Err(_) => "absent",
    };
    let hooks = std::fs::read_dir(root.join(".git/hooks"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, std::fs::read(e.path()).unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default();
    View {
        dot_git,
        config: std::fs::read_to_string(root.join(".git/config")).ok(),
        hooks,
    }
}

#[tokio::test]
async fn config_and_hooks_cannot_be_changed() {
    if !git() || !protected() {
        return;
    }
    let attacks = [
        (
            "git config core.fsmonitor",
            "git config core.fsmonitor 'touch /tmp/pwned'",
            "error: could not write config file .git/config: Device or resource busy\n",
        ),
        (
            "git config core.hooksPath",
            "git config core.hooksPath evil-hooks",
            "error: could not write config file .git/config: Device or resource busy\n",
        ),
        (
            "append to .git/config",
            "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config",
            "sh: 1: cannot create .git/config: Read-only file system\n",
        ),
        (
            "create .git/hooks/pre-commit",
            "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit",
            "sh: 1: cannot create .git/hooks/pre-commit: Read-only file system\n",
        ),
        (
            "mv .git .git2 && mkdir .git",
            "mv .git .git2 && mkdir .git",
            "mv: cannot move '.git' to '.git2': Device or resource busy\n",
        ),
    ];
    for (name, script, stderr) in attacks {
        let dir = tempfile::tempdir().unwrap();
        let root = repo(dir.path());
        let before = view(&root);
        let l = launcher(&root, |_| {});
        let out = sh(&l, script).await;
        assert_eq!(view(&root), before, "{name}: {out:?}");
        assert_ne!(out.exit_code, 0, "{name}: {out:?}");
        assert_eq!(out.stderr, stderr, "{name}");
        assert!(out.undone.is_empty(), "{name}: {out:?}");
        assert!(!root.join(".git2").exists(), "{name}");
    }
}

/// A spare helper binds the launch before's git state ahead of its own launch. The user's git
/// rewriting `.git/config` meanwhile (a lock file renamed over it) takes that bind away in the
/// spare's namespace: the spare is not used, and the command still finds the config read-only.
#[tokio::test]
async fn a_config_the_host_replaced_after_a_spare_bound_it_is_still_protected() {
    let Some((_dir, root, l)) = protected_repo() else {
        return;
    };
    // Twice: the spare after the first launch is prepared for this workspace's binds.
    for _ in 0..2 {
        assert_eq!(sh(&l, "true").await.exit_code, 0);
    }
    assert!(l.warm_up(), "a spare is ready");
    host_git(&root, &["config", "core.pager", "less"]);
    let before = view(&root);
    let out = sh(
        &l,
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config",
    )
    .await;
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert_eq!(
        out.stderr,
        "sh: 1: cannot create .git/config: Read-only file system\n"
    );
    assert_eq!(view(&root), before);
    // And the launch after it finds a spare bound on the new config.
    assert!(l.warm_up());
    let out = sh(&l, "echo x >> .git/config").await;
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert_eq!(view(&root), before);
}

#[tokio::test]
async fn rm_rf_dot_git_keeps_what_git_runs() {
    let Some((_dir, root, l)) = protected_repo() else {
        return;
    };
    let before = view(&root);
    let out = sh(&l, "rm -rf .git").await;
    assert_ne!(out.exit_code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("rm: cannot remove '.git/config': Device or resource busy"),
        "{out:?}"
    );
    assert_eq!(view(&root), before, "{out:?}");
}

#[tokio::test]
async fn created_commondir_config_worktree_and_dot_git_are_undone() {
    let Some((_dir, root, l)) = protected_repo() else {
        return;
    };
    let evil = tempfile::tempdir().unwrap();
    let before = view(&root);
    let script = format!(
        "echo {} > .git/commondir && printf '[core]\\n\\tfsmonitor = x\\n' > .git/config.worktree",
        evil.path().display()
    );
    let out = sh(&l, &script).await;
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert_eq!(
        out.undone,
        [
            "commands cannot change what git runs for you (git protection); the change to \
             .git/config.worktree was undone",
            "commands cannot change what git runs for you (git protection); the change to \
             .git/commondir was undone"
        ],
        "{out:?}"
    );
    assert!(!root.join(".git/commondir").exists());
    assert!(!root.join(".git/config.worktree").exists());
    assert_eq!(view(&root), before);

    // `git init` where there was no repository: the new .git is removed.
    let bare = tempfile::tempdir().unwrap();
    let l = launcher(bare.path(), |_| {});
    let out = run(&l, "git", &["init", "-q"]).await;
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert_eq!(
        out.undone,
        [
            "commands cannot change what git runs for you (git protection); the change to .git \
          was undone"
        ]
    );
    assert!(!bare.path().join(".git").exists());
}

/// A `.git` file naming a git directory inside the workspace (`git init --separate-git-dir`):
/// the file and that directory's configuration and hooks are protected the same way.
#[tokio::test]
async fn a_gitdir_file_and_the_directory_it_names_are_protected() {
    if !git() || !protected() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    host_git(&root, &["init", "-q", "--separate-git-dir", "meta"]);
    let gitfile = std::fs::read_to_string(root.join(".git")).unwrap();
    let config = std::fs::read_to_string(root.join("meta/config")).unwrap();
    let l = launcher(&root, |_| {});
    let out = sh(
        &l,
        "git config core.fsmonitor x; echo 'gitdir: /tmp' > .git; touch meta/hooks/post-checkout; \
         rm -rf meta",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(root.join(".git")).unwrap(),
        gitfile,
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("meta/config")).unwrap(),
        config
    );
    assert!(!root.join("meta/hooks/post-checkout").exists());
    assert!(
        out.stderr.contains(".git: Read-only file system"),
        "{out:?}"
    );
}

#[tokio::test]
async fn git_commit_still_works_with_protection_on() {
    let Some((_dir, root, l)) = protected_repo() else {
        return;
    };
    let out = sh(
        &l,
        "echo more >> README && git add README && \
         git -c user.name=m -c user.email=m@example.com commit -qm second && git status --short",
    )
    .await;
    assert_eq!((out.exit_code, out.stdout.as_str()), (0, ""), "{out:?}");
    assert!(out.undone.is_empty());
    let log = host_git(&root, &["log", "--format=%s"]);
    assert_eq!(log, "second\nfirst\n");
}

#[tokio::test]
async fn with_protection_off_the_same_writes_succeed() {
    if !git() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let l = launcher(&root, |p| p.protect_git = false);
    let out = sh(
        &l,
        "git config core.fsmonitor 'touch pwned' && echo x > .git/hooks/pre-commit && \
         echo /elsewhere > .git/commondir",
    )
    .await;
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert!(out.undone.is_empty());
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    assert!(config.contains("fsmonitor = touch pwned"), "{config}");
    assert!(root.join(".git/hooks/pre-commit").exists());
    assert!(root.join(".git/commondir").exists());
}

/// A cancelled call (its future dropped) is undone too.
#[tokio::test]
async fn a_cancelled_command_is_undone_too() {
    let Some((_dir, root, l)) = protected_repo() else {
        return;
    };
    let request = toolsmith_sandbox::exec::ExecRequest::new(
        "sh",
        vec![
            "-c".into(),
            "echo /elsewhere > .git/commondir; sleep 331.7".into(),
        ],
        &root,
    );
    let cancelled =
        tokio::time::timeout(std::time::Duration::from_millis(500), l.run(&request)).await;
    assert!(cancelled.is_err());
    assert!(!root.join(".git/commondir").exists());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(survivors("331.7"), 0, "the cancelled command survived");
}
