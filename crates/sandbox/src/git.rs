//! Git protection: the workspace's git metadata that decides what git *executes* for the user.
//!
//! A model that can write `.git/config` (`core.fsmonitor`, `core.hooksPath`, `core.pager`,
//! aliases, filter drivers…) or `.git/hooks/*` gets code run by the user's next `git status`,
//! outside any sandbox. So does one that plants a `.git` in a workspace that had none, points
//! `.git/commondir` at a directory it wrote, or adds a `config.worktree`. When
//! [`SandboxPolicy::protect_git`](crate::SandboxPolicy::protect_git) is on (the default):
//!
//! - **file tools** refuse paths for which [`is_protected`] (by name) or
//!   [`GitProtection::covers`] (by where they really are) is true;
//! - **sandboxed commands** run in a mount namespace where each git directory is bound onto
//!   itself (a mount point cannot be renamed or removed: `EBUSY`) and its
//!   [`EXECUTABLE_STATE`] entries are bound read-only (`EROFS`); a `.git` *file* (a worktree's
//!   or submodule's `gitdir:` link) is bound read-only onto itself. Mounts cannot stop files
//!   from being *created*, so the launcher takes a snapshot before the command and, once every
//!   process of it is gone, removes what appeared where nothing was (a new `.git`,
//!   `.git/commondir`, `.git/config.worktree`…) and restores symbolic links and the small
//!   files git follows (`commondir`, `config.worktree`, the `.git` file) that changed
//!   ([`GitProtection::undo`]).
//!
//! Git directories are found from the root: `<root>/.git` (a directory, a `gitdir:` file or a
//! symbolic link), the root itself when it is a bare repository, and each one's `commondir`.
//! Only those lying beneath a writable path are protected: the others are out of the command's
//! reach already (Landlock). Repositories nested deeper in the workspace are not: the user's git
//! at the root does not read their configuration.
//!
//! ```
//! use std::path::Path;
//! use toolsmith_sandbox::git;
//!
//! assert!(git::is_protected(Path::new(".git/config")));
//! assert!(git::is_protected(Path::new("sub/.git/hooks/pre-commit")));
//! assert!(git::is_protected(Path::new(".git")));
//! assert!(!git::is_protected(Path::new(".git/objects/ab/cdef")));
//! assert!(!git::is_protected(Path::new("src/config")));
//! ```

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The entries of a git directory that decide what git executes: its configuration (`config`,
/// `config.worktree`), where the shared part lives (`commondir`), the hooks, and the git
/// directories of submodules (`modules`) and linked worktrees (`worktrees`), each with its own
/// configuration and hooks.
pub const EXECUTABLE_STATE: [&str; 6] = [
    "config",
    "config.worktree",
    "commondir",
    "hooks",
    "modules",
    "worktrees",
];

/// Small files git follows whose content is restored when a command changed it (where no
/// mount could make them read-only).
const RESTORED: [&str; 2] = ["commondir", "config.worktree"];

/// The most bytes read from a `gitdir:` or `commondir` file (git itself reads a path).
const LINK_FILE_MAX: u64 = 4096;

/// How many `commondir` links are followed from the first git directory.
const COMMONDIR_DEPTH: usize = 2;

/// Whether writing `relative` (a path beneath the workspace root, as resolved: after symbolic
/// links) could change what git executes: a `.git` entry itself, or anything at or beneath one
/// of the [`EXECUTABLE_STATE`] entries of a `.git` directory, at any depth (`.git` compared
/// ASCII-case-insensitively, as case-insensitive filesystems would).
///
/// Name-based: a symbolic link (`g -> .git`, then `g/config`) defeats it unless the caller
/// resolves the path first; [`GitProtection::covers`] takes the real location instead.
pub fn is_protected(relative: &Path) -> bool {
    let names: Vec<&OsStr> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    names.iter().enumerate().any(|(i, name)| {
        is_dot_git(name)
            && names
                .get(i + 1)
                .is_none_or(|next| is_executable_state(next))
    })
}

fn is_dot_git(name: &OsStr) -> bool {
    name.as_encoded_bytes().eq_ignore_ascii_case(b".git")
}

fn is_executable_state(name: &OsStr) -> bool {
    EXECUTABLE_STATE
        .iter()
        .any(|s| name.as_encoded_bytes().eq_ignore_ascii_case(s.as_bytes()))
}

/// What one entry was before the command.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Nothing: whatever appears is removed.
    Absent,
    /// A symbolic link to this target: put back if changed.
    Symlink(PathBuf),
    /// A regular file, with its content when it is one git follows ([`RESTORED`]).
    File(Option<Vec<u8>>),
    /// A directory (or another kind of file): made read-only by a mount.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    path: PathBuf,
    state: State,
    /// Whether everything beneath the entry is protected too (not for `.git` itself, whose
    /// objects and refs stay writable).
    beneath: bool,
}

/// A bind mount the helper makes for git protection, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bind {
    /// The absolute path, bound onto itself (never followed if it is a symbolic link).
    pub path: PathBuf,
    /// Remounted read-only (also `nosuid`, `nodev`); otherwise only made a mount point.
    pub read_only: bool,
}

/// The git protection of one workspace: what was there before a command, what the helper binds,
/// what to undo afterwards. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitProtection {
    root: PathBuf,
    writable: Vec<PathBuf>,
    entries: Vec<Entry>,
    /// Git directories bound onto themselves (never the root itself).
    gitdirs: Vec<PathBuf>,
    /// Real locations of protected entries that are symbolic links.
    targets: Vec<PathBuf>,
}

impl GitProtection {
    /// Inspects `root` (the workspace) and finds its git directories beneath `writable` (the
    /// paths a command may write: the root and the extra writable directories). Never fails: what
    /// cannot be read counts as absent.
    pub fn inspect(root: &Path, writable: &[PathBuf]) -> GitProtection {
        let (root, writable) = resolve(root, writable);
        GitProtection::inspect_resolved(root, writable)
    }

    /// [`inspect`](Self::inspect) with `root` and `writable` already [`resolve`]d (the launcher
    /// resolves them once; that is most of the cost of an inspection of a workspace without
    /// `.git`, ~10 µs of ~11).
    pub(crate) fn inspect_resolved(root: PathBuf, writable: Vec<PathBuf>) -> GitProtection {
        let mut protection = GitProtection {
            writable,
            root: root.clone(),
            ..GitProtection::default()
        };
        let dot_git = root.join(".git");
        let state = state_of(&dot_git, true);
        let gitdir = match &state {
            State::Absent => is_bare_gitdir(&root).then(|| root.clone()),
            State::Symlink(_) => dot_git.canonicalize().ok().filter(|p| p.is_dir()),
            State::File(content) => content
                .as_deref()
                .and_then(|c| linked_path(&root, c, b"gitdir:")),
            State::Other => Some(dot_git.clone()),
        };
        protection.entries.push(Entry {
            path: dot_git,
            state,
            beneath: false,
        });
        if let Some(gitdir) = gitdir {
            protection.add_gitdir(gitdir, 0);
        }
        protection
    }

    fn beneath_writable(&self, path: &Path) -> bool {
        self.writable.iter().any(|w| path.starts_with(w))
    }

    fn add_gitdir(&mut self, gitdir: PathBuf, depth: usize) {
        if !self.beneath_writable(&gitdir) || self.gitdirs.contains(&gitdir) {
            return;
        }
        if gitdir != self.root {
            self.gitdirs.push(gitdir.clone());
        }
        let mut common = None;
        for name in EXECUTABLE_STATE {
            let path = gitdir.join(name);
            let state = state_of(&path, RESTORED.contains(&name));
            match &state {
                State::Symlink(_) => {
                    if let Ok(real) = path.canonicalize()
                        && self.beneath_writable(&real)
                        && !self.targets.contains(&real)
                    {
                        self.targets.push(real);
                    }
                }
                State::File(Some(content)) if name == "commondir" => {
                    common = linked_path(&gitdir, content, b"");
                }
                _ => {}
            }
            self.entries.push(Entry {
                path,
                state,
                beneath: true,
            });
        }
        if let Some(common) = common
            && depth < COMMONDIR_DEPTH
        {
            self.add_gitdir(common, depth + 1);
        }
    }

    /// Whether a write to `path` (absolute and resolved, or relative to the root) could change
    /// what git executes: [`is_protected`] by name, or the path is one of the protected entries
    /// found (or beneath one), a git directory or `.git` itself.
    pub fn covers(&self, path: &Path) -> bool {
        let absolute = self.root.join(path);
        if let Ok(relative) = absolute.strip_prefix(&self.root)
            && is_protected(relative)
        {
            return true;
        }
        self.entries.iter().any(|e| {
            if e.beneath {
                absolute.starts_with(&e.path)
            } else {
                absolute == e.path
            }
        }) || self.gitdirs.contains(&absolute)
            || self.targets.iter().any(|t| absolute.starts_with(t))
    }

    /// Every path this protection covers (see [`covers`](Self::covers)), for messages and docs.
    pub fn protected_paths(&self) -> Vec<&Path> {
        let mut paths: Vec<&Path> = self.entries.iter().map(|e| e.path.as_path()).collect();
        paths.extend(self.gitdirs.iter().map(PathBuf::as_path));
        paths.extend(self.targets.iter().map(PathBuf::as_path));
        paths
    }

    /// The bind mounts that protect what exists, shallowest first (a later, deeper mount stays
    /// visible; a bind inside a read-only one is read-only too): each git directory onto itself,
    /// then every existing [`EXECUTABLE_STATE`] entry, the `.git` file and the real locations
    /// of protected symbolic links read-only.
    pub fn binds(&self) -> Vec<Bind> {
        let mut binds: Vec<Bind> = self
            .gitdirs
            .iter()
            .map(|path| Bind {
                path: path.clone(),
                read_only: false,
            })
            .collect();
        for entry in &self.entries {
            let exists = matches!(entry.state, State::File(_) | State::Other);
            if exists && !self.gitdirs.contains(&entry.path) {
                binds.push(Bind {
                    path: entry.path.clone(),
                    read_only: true,
                });
            }
        }
        binds.extend(self.targets.iter().map(|path| Bind {
            path: path.clone(),
            read_only: true,
        }));
        binds.sort_by_key(|b| b.path.components().count());
        binds
    }

    /// After the command (every process of it gone): removes protected entries that appeared,
    /// puts back changed symbolic links and changed [`RESTORED`] files. Returns one note per
    /// change undone (or that could not be), for the command's result. Works through the
    /// writable directory holding each entry, never following a symbolic link out of it.
    pub fn undo(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for entry in &self.entries {
            let Some(result) = self.undo_entry(entry) else {
                continue;
            };
            let shown = entry
                .path
                .strip_prefix(&self.root)
                .unwrap_or(&entry.path)
                .display();
            notes.push(match result {
                Ok(()) => format!(
                    "commands cannot change what git runs for you (git protection); the change \
                     to {shown} was undone"
                ),
                Err(e) => format!(
                    "commands cannot change what git runs for you (git protection); the change \
                     to {shown} could not be undone: {e}"
                ),
            });
        }
        notes
    }

    /// `None` when `entry` is as it was; otherwise the outcome of putting it back.
    fn undo_entry(&self, entry: &Entry) -> Option<std::io::Result<()>> {
        let now = std::fs::symlink_metadata(&entry.path);
        let changed = match (&entry.state, &now) {
            (State::Absent, Err(_)) => false,
            (State::Absent, Ok(_)) => true,
            (State::Symlink(target), Ok(m)) if m.file_type().is_symlink() => {
                std::fs::read_link(&entry.path).ok().as_ref() != Some(target)
            }
            (State::Symlink(_), _) => true,
            (State::File(Some(content)), _) => {
                read_small(&entry.path, LINK_FILE_MAX).as_ref() != Some(content)
            }
            (State::File(None) | State::Other, _) => false,
        };
        if !changed {
            return None;
        }
        let base = self
            .writable
            .iter()
            .filter(|w| entry.path.starts_with(w))
            .max_by_key(|w| w.components().count())?;
        let relative = entry.path.strip_prefix(base).ok()?;
        Some((|| {
            let dir = cap_std::fs::Dir::open_ambient_dir(base, cap_std::ambient_authority())?;
            match dir.symlink_metadata(relative) {
                Ok(m) if m.is_dir() => dir.remove_dir_all(relative)?,
                Ok(_) => dir.remove_file(relative)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            match &entry.state {
                State::Symlink(target) => dir.symlink_contents(target, relative),
                State::File(Some(content)) => {
                    let mut options = cap_std::fs::OpenOptions::new();
                    options.write(true).create_new(true);
                    let mut file = dir.open_with(relative, &options)?;
                    std::io::Write::write_all(&mut file, content)
                }
                _ => Ok(()),
            }
        })())
    }
}

/// `root` and `writable` with symbolic links resolved (as given when that fails).
pub(crate) fn resolve(root: &Path, writable: &[PathBuf]) -> (PathBuf, Vec<PathBuf>) {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    (
        canonical(root),
        writable.iter().map(|p| canonical(p)).collect(),
    )
}

/// What `path` is now (`lstat`), with the content of a small regular file when `read` says so.
fn state_of(path: &Path, read: bool) -> State {
    match std::fs::symlink_metadata(path) {
        Err(_) => State::Absent,
        Ok(m) if m.file_type().is_symlink() => {
            State::Symlink(std::fs::read_link(path).unwrap_or_default())
        }
        Ok(m) if m.is_file() => State::File(if read {
            read_small(path, LINK_FILE_MAX)
        } else {
            None
        }),
        Ok(_) => State::Other,
    }
}

/// The content of the regular file `path` if it has at most `max` bytes. Opened without
/// following a symbolic link and without blocking (a FIFO swapped in cannot hang the caller).
fn read_small(path: &Path, max: u64) -> Option<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    let mut content = Vec::new();
    file.take(max).read_to_end(&mut content).ok()?;
    Some(content)
}

/// The directory a `gitdir: PATH` or `commondir` file names (after `prefix`), relative to `base`
/// when not absolute, resolved.
fn linked_path(base: &Path, content: &[u8], prefix: &[u8]) -> Option<PathBuf> {
    let text = std::str::from_utf8(content.strip_prefix(prefix)?).ok()?;
    let named = Path::new(text.trim());
    if named.as_os_str().is_empty() {
        return None;
    }
    base.join(named).canonicalize().ok().filter(|p| p.is_dir())
}

/// Whether `dir` looks like a git directory (git's own test: `HEAD`, `objects/`, `refs/`).
fn is_bare_gitdir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_decide_what_git_runs() {
        for path in [
            ".git",
            ".git/config",
            ".git/config.worktree",
            ".git/commondir",
            ".git/hooks",
            ".git/hooks/pre-commit",
            ".git/modules/sub/config",
            ".git/worktrees/w/commondir",
            "./.git/config",
            "vendor/lib/.git/hooks/post-checkout",
            ".GIT/CONFIG",
            "a/../.git/config",
        ] {
            assert!(is_protected(Path::new(path)), "{path}");
        }
        for path in [
            ".git/objects/ab/cd",
            ".git/refs/heads/main",
            ".git/index",
            ".git/HEAD",
            ".gitignore",
            ".github/config",
            "config",
            "hooks/pre-commit",
            "",
        ] {
            assert!(!is_protected(Path::new(path)), "{path}");
        }
    }

    fn init(dir: &Path) {
        for d in ["objects", "refs", "hooks"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(dir.join("config"), "[core]\n").unwrap();
    }

    /// The protection's binds as (path relative to `root`, read-only).
    fn relative_binds(p: &GitProtection, root: &Path) -> Vec<(PathBuf, bool)> {
        p.binds()
            .into_iter()
            .map(|b| {
                (
                    b.path.strip_prefix(root).unwrap().to_path_buf(),
                    b.read_only,
                )
            })
            .collect()
    }

    #[test]
    fn a_git_directory_is_bound_onto_itself_and_its_state_read_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        init(&root.join(".git"));
        let p = GitProtection::inspect(&root, std::slice::from_ref(&root));
        let binds = relative_binds(&p, &root);
        assert_eq!(
            binds,
            [
                (PathBuf::from(".git"), false),
                (".git/config".into(), true),
                (".git/hooks".into(), true)
            ]
        );
        assert!(p.covers(&root.join(".git/config")));
        assert!(p.covers(Path::new(".git/hooks/x")));
        assert!(p.covers(&root.join(".git")));
        assert!(!p.covers(&root.join(".git/objects/x")));
        assert!(p.undo().is_empty());
    }

    #[test]
    fn a_gitdir_file_protects_the_directory_it_names_when_writable() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        init(&root.join("meta"));
        std::fs::write(root.join(".git"), "gitdir: meta\n").unwrap();
        let p = GitProtection::inspect(&root, std::slice::from_ref(&root));
        let binds = relative_binds(&p, &root);
        assert_eq!(
            binds,
            [
                (PathBuf::from("meta"), false),
                (".git".into(), true),
                ("meta/config".into(), true),
                ("meta/hooks".into(), true)
            ]
        );
        assert!(p.covers(Path::new("meta/config")));
        // Not writable: nothing to bind beyond the `.git` file.
        let p = GitProtection::inspect(&root, &[root.join("elsewhere")]);
        assert!(p.binds().iter().all(|b| b.path == root.join(".git")));
    }

    #[test]
    fn created_entries_are_removed_and_changed_links_restored() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let writable = [root.clone()];
        // No .git: whatever appears is removed.
        let p = GitProtection::inspect(&root, &writable);
        init(&root.join(".git"));
        let notes = p.undo();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].ends_with("the change to .git was undone"),
            "{notes:?}"
        );
        assert!(!root.join(".git").exists());

        // commondir created, config.worktree changed: removed and restored.
        init(&root.join(".git"));
        std::fs::write(root.join(".git/config.worktree"), "[core]\n").unwrap();
        let p = GitProtection::inspect(&root, &writable);
        std::fs::write(root.join(".git/commondir"), "/tmp\n").unwrap();
        std::fs::write(root.join(".git/config.worktree"), "[core]\nfsmonitor=x\n").unwrap();
        let notes = p.undo();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(!root.join(".git/commondir").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config.worktree")).unwrap(),
            "[core]\n"
        );

        // A symbolic link `hooks -> myhooks` replaced by a directory: put back.
        std::fs::create_dir(root.join("myhooks")).unwrap();
        std::fs::remove_dir(root.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink("../myhooks", root.join(".git/hooks")).unwrap();
        let p = GitProtection::inspect(&root, &writable);
        assert!(p.binds().iter().any(|b| b.path == root.join("myhooks")));
        std::fs::remove_file(root.join(".git/hooks")).unwrap();
        std::fs::create_dir(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil").unwrap();
        assert_eq!(p.undo().len(), 1);
        assert_eq!(
            std::fs::read_link(root.join(".git/hooks")).unwrap(),
            PathBuf::from("../myhooks")
        );
    }

    #[test]
    fn a_bare_root_protects_its_own_state() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        init(&root);
        let p = GitProtection::inspect(&root, std::slice::from_ref(&root));
        let binds: Vec<PathBuf> = p.binds().into_iter().map(|b| b.path).collect();
        assert_eq!(binds, [root.join("config"), root.join("hooks")]);
        assert!(p.covers(Path::new("hooks/pre-commit")));
        assert!(!p.covers(Path::new("objects/x")));
    }
}
