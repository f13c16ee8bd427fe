//! The directory walk shared by `grep` and `glob`: ripgrep's default filters, with every byte
//! the walk reads going through the confined root.
//!
//! # Contract
//!
//! - The filters are ripgrep's defaults as the `ignore` crate applies them with
//!   `require_git(false)`, `parents(false)` and no global excludes: `.ignore`, `.gitignore` and
//!   `.git/info/exclude` files at and below the walked directory (also outside a git
//!   repository), a deeper file's rules before a shallower one's, `.ignore` before `.gitignore`
//!   before `exclude`, whitelists (`!pattern`) included; then hidden entries (a name starting
//!   with `.`) are skipped unless a rule whitelisted them. Symlinks are listed, never followed.
//!   Entries come in name order, depth first, each directory's entries before the next sibling.
//! - Nothing is opened by a path the kernel resolves from outside the root. The walked
//!   directory is opened through [`RootDir`]; each directory below it is opened beneath its
//!   parent's handle with `O_NOFOLLOW` (`openat2(RESOLVE_BENEATH)`) and listed through that
//!   handle, so a directory swapped for a symlink mid-walk is refused, never listed.
//! - Ignore files are read the same way, beneath their directory's handle, `O_NOFOLLOW |
//!   O_NONBLOCK`, and only when `fstat` on the open handle says they are regular files of at
//!   most [`MAX_IGNORE_FILE_BYTES`]: a FIFO named `.gitignore` cannot block the walk, a symlink
//!   to `/dev/zero` or to a file outside the root is not read. A skipped ignore file leaves a
//!   [`Notes`] line instead. The rules are compiled from the bytes read (the `ignore` crate
//!   never opens a file itself), each line bounded like a model's pattern
//!   ([`crate::pattern`]): a line too complex for globset is skipped with a note.
//! - A `.git` file (a linked worktree) is followed to its common directory's `info/exclude`
//!   only while every path it names stays beneath the root.
//! - The walk checks the cancellation flag before every entry and returns
//!   [`cancelled`] once it is set.
//! - Only the first [`MAX_OPEN_DIRS`] levels keep their directory handle open while their
//!   subdirectories are walked; deeper directories are reopened from the root by path (still
//!   beneath it), so a deep tree cannot exhaust the process's file descriptors.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read as _};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use toolsmith_core::ToolError;
use toolsmith_sandbox::RootDir;

use crate::pattern;
use crate::read::display_path;

/// The largest ignore file read; a larger one is skipped with a note. Real ones are a few KiB
/// (the largest in the Linux tree is 3 KiB); the cap bounds what a hostile one costs.
pub(crate) const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// How many levels keep their directory handle open (walkdir's default is 10; handles make a
/// subdirectory's open one single-component lookup).
pub(crate) const MAX_OPEN_DIRS: usize = 32;

/// How many notes are listed; past that one line counts the rest.
const MAX_NOTES: usize = 10;

/// The longest note, in bytes (a path near `PATH_MAX` is cut).
const MAX_NOTE_BYTES: usize = 512;

/// The code of a call cancelled while it ran.
pub(crate) const TOOL_CANCELLED: &str = "TOOL_CANCELLED";

/// `TOOL_CANCELLED` `Search cancelled`: the call's cancellation token fired.
pub(crate) fn cancelled() -> ToolError {
    ToolError::new(TOOL_CANCELLED, "Search cancelled")
}

/// What kind of entry the walk found (as listed, not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

/// A non-directory entry found by [`walk`].
pub(crate) struct Entry<'a> {
    path: &'a Path,
    name: &'a OsStr,
    kind: Kind,
    parent: Option<&'a Dir>,
    root: &'a RootDir,
}

impl Entry<'_> {
    /// The entry's path, relative to the root.
    pub(crate) fn path(&self) -> &Path {
        self.path
    }

    /// Whether it was listed as a regular file (symlinks, FIFOs, sockets and devices are not).
    pub(crate) fn is_file(&self) -> bool {
        self.kind == Kind::File
    }

    /// Its modification time (of the entry itself, a symlink's own), read beneath its
    /// directory's handle.
    pub(crate) fn modified(&self) -> Option<SystemTime> {
        let metadata = match self.parent {
            Some(dir) => dir.symlink_metadata(self.name),
            None => self.root.dir().symlink_metadata(self.path),
        };
        Some(metadata.ok()?.modified().ok()?.into_std())
    }
}

/// Lines for the end of a tool's output about ignore files the walk skipped (or read in
/// part), so the model knows why files it expected hidden were searched:
/// `[ignore file skipped: <path>: <reason>]`, at most [`MAX_NOTES`] of them, each at most
/// [`MAX_NOTE_BYTES`], and then `[… and <n> more notes]`.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    lines: Vec<String>,
    more: usize,
}

impl Notes {
    /// Adds a note (kept only while there are fewer than [`MAX_NOTES`]), cut to
    /// [`MAX_NOTE_BYTES`]: notes come after the output's byte cap, so they are kept small.
    pub(crate) fn push(&mut self, mut line: String) {
        if self.lines.len() >= MAX_NOTES {
            self.more += 1;
            return;
        }
        if line.len() > MAX_NOTE_BYTES {
            line.truncate(crate::read::utf8_floor(line.as_bytes(), MAX_NOTE_BYTES - 4));
            line.push_str("…]");
        }
        self.lines.push(line);
    }

    /// Appends the notes to `text`, each on its own line (a newline first when `text` does not
    /// end with one).
    pub(crate) fn append_to(&self, text: &mut String) {
        for line in &self.lines {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(line);
            text.push('\n');
        }
        if self.more > 0 {
            text.push_str(&format!("[… and {} more notes]\n", self.more));
        }
    }

    fn skipped(&mut self, path: &Path, reason: &str) {
        self.push(format!(
            "[ignore file skipped: {}: {reason}]",
            display_path(path)
        ));
    }
}

/// The ignore rules of one directory, linked to its parent's.
struct Rules {
    ignore: Gitignore,
    git_ignore: Gitignore,
    git_exclude: Gitignore,
    parent: Option<Arc<Rules>>,
}

impl Rules {
    /// The `ignore` crate's `matched_ignore` for our options: for each kind, the nearest
    /// directory whose file has a rule for `path` decides, and `.ignore` beats `.gitignore`
    /// beats `exclude`.
    fn matched(&self, path: &Path, is_dir: bool) -> Match<()> {
        let (mut ignore, mut git_ignore, mut git_exclude) = (Match::None, Match::None, Match::None);
        let mut rules = Some(self);
        while let Some(level) = rules {
            if ignore.is_none() {
                ignore = level.ignore.matched(path, is_dir).map(|_| ());
            }
            if git_ignore.is_none() {
                git_ignore = level.git_ignore.matched(path, is_dir).map(|_| ());
            }
            if git_exclude.is_none() {
                git_exclude = level.git_exclude.matched(path, is_dir).map(|_| ());
            }
            rules = level.parent.as_deref();
        }
        ignore.or(git_ignore).or(git_exclude)
    }
}

/// One directory being walked.
struct Frame {
    /// Relative to the root.
    path: PathBuf,
    /// Its handle, for the first [`MAX_OPEN_DIRS`] levels.
    dir: Option<Dir>,
    /// The entries still to visit, in name order.
    entries: std::vec::IntoIter<(OsString, Kind)>,
    rules: Option<Arc<Rules>>,
}

/// Walks the directory `target` (a model-given path, resolved through `root`; a symlink to a
/// directory inside the root is followed there, as ripgrep follows the paths it is given),
/// calling `visit` with every non-directory entry the filters keep, until it breaks.
///
/// # Errors
///
/// Path errors for `target` (as [`RootDir::open_dir`]); [`cancelled`] once `cancelled()` is
/// true. Errors below `target` (an unreadable directory) skip what they hide, as ripgrep does.
pub(crate) fn walk(
    root: &RootDir,
    target: &str,
    cancelled: &dyn Fn() -> bool,
    visit: &mut dyn FnMut(&Entry<'_>) -> ControlFlow<()>,
) -> Result<Notes, ToolError> {
    let path = root.relative(target)?;
    let dir = root.open_dir(target)?;
    let mut walker = Walker {
        root,
        cancelled,
        notes: Notes::default(),
        stack: Vec::new(),
    };
    walker.enter(path, dir, None)?;
    walker.run(visit)?;
    Ok(walker.notes)
}

struct Walker<'a> {
    root: &'a RootDir,
    cancelled: &'a dyn Fn() -> bool,
    notes: Notes,
    stack: Vec<Frame>,
}

impl Walker<'_> {
    fn run(
        &mut self,
        visit: &mut dyn FnMut(&Entry<'_>) -> ControlFlow<()>,
    ) -> Result<(), ToolError> {
        while let Some(frame) = self.stack.last_mut() {
            if (self.cancelled)() {
                return Err(cancelled());
            }
            let Some((name, kind)) = frame.entries.next() else {
                self.stack.pop();
                continue;
            };
            let path = frame.path.join(&name);
            let is_dir = kind == Kind::Dir;
            let verdict = frame
                .rules
                .as_deref()
                .map_or(Match::None, |rules| rules.matched(&path, is_dir));
            let skip = match verdict {
                Match::Ignore(()) => true,
                Match::Whitelist(()) => false,
                Match::None => name.as_encoded_bytes().starts_with(b"."),
            };
            if skip {
                continue;
            }
            if !is_dir {
                let entry = Entry {
                    path: &path,
                    name: &name,
                    kind,
                    parent: frame.dir.as_ref(),
                    root: self.root,
                };
                if visit(&entry).is_break() {
                    return Ok(());
                }
                continue;
            }
            // Beneath the parent's handle, or from the root when the parent kept none; not
            // following a symlink swapped in since the listing.
            let opened = match &frame.dir {
                Some(parent) => RootDir::open_dir_nofollow(parent, Path::new(&name)),
                None => RootDir::open_dir_nofollow(self.root.dir(), &path),
            };
            let Ok(dir) = opened else {
                continue;
            };
            let rules = frame.rules.clone();
            self.enter(path, dir, rules)?;
        }
        Ok(())
    }

    /// Lists `dir` (at `path`, relative to the root), reads its ignore files and pushes it.
    fn enter(
        &mut self,
        path: PathBuf,
        dir: Dir,
        parent: Option<Arc<Rules>>,
    ) -> Result<(), ToolError> {
        let Ok(entries) = self.list(&dir)? else {
            return Ok(());
        };
        let rules = self.rules(&dir, &path, &entries, parent);
        let dir = (self.stack.len() < MAX_OPEN_DIRS).then_some(dir);
        self.stack.push(Frame {
            path,
            dir,
            entries: entries.into_iter(),
            rules,
        });
        Ok(())
    }

    /// The entries of `dir` in name order (`.` and `..` left out), or the listing's error; the
    /// outer error is a cancellation.
    #[allow(clippy::type_complexity)]
    fn list(&self, dir: &Dir) -> Result<io::Result<Vec<(OsString, Kind)>>, ToolError> {
        let listing = match dir.entries() {
            Ok(listing) => listing,
            Err(e) => return Ok(Err(e)),
        };
        let mut entries = Vec::new();
        for entry in listing {
            if (self.cancelled)() {
                return Err(cancelled());
            }
            // An error mid-listing ends it: what was listed is still walked.
            let Ok(entry) = entry else { break };
            let kind = match entry.file_type() {
                Ok(t) if t.is_dir() => Kind::Dir,
                Ok(t) if t.is_file() => Kind::File,
                Ok(t) if t.is_symlink() => Kind::Symlink,
                Ok(_) => Kind::Other,
                Err(_) => continue,
            };
            entries.push((entry.file_name(), kind));
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(Ok(entries))
    }

    /// The rules in force in `dir`: its parent's, with its own ignore files on top when it has
    /// any.
    fn rules(
        &mut self,
        dir: &Dir,
        path: &Path,
        entries: &[(OsString, Kind)],
        parent: Option<Arc<Rules>>,
    ) -> Option<Arc<Rules>> {
        let find = |name: &str| {
            entries
                .iter()
                .find(|(entry, _)| entry == name)
                .map(|&(_, kind)| kind)
        };
        let (ignore, git_ignore, git) = (find(".ignore"), find(".gitignore"), find(".git"));
        if ignore.is_none() && git_ignore.is_none() && git.is_none() {
            return parent;
        }
        let ignore = self.ignore_file(dir, path, ".ignore", ignore);
        let git_ignore = self.ignore_file(dir, path, ".gitignore", git_ignore);
        let git_exclude = match git {
            Some(Kind::Dir) => self.repo_exclude(dir, path),
            Some(Kind::File) => self.worktree_exclude(dir, path),
            // A symlink is not followed, even to a repository.
            Some(Kind::Symlink | Kind::Other) | None => Gitignore::empty(),
        };
        Some(Arc::new(Rules {
            ignore,
            git_ignore,
            git_exclude,
            parent,
        }))
    }

    /// The rules of the ignore file `name` beneath `dir` (at `path`), listed as `kind`; empty
    /// when it is absent, and with a note when it cannot be read.
    fn ignore_file(&mut self, dir: &Dir, path: &Path, name: &str, kind: Option<Kind>) -> Gitignore {
        let read = match kind {
            None => return Gitignore::empty(),
            Some(Kind::Symlink) => Err("a symbolic link, not followed".to_string()),
            Some(Kind::Dir | Kind::Other) => Err("not a regular file".to_string()),
            Some(Kind::File) => read_capped(dir, Path::new(name)),
        };
        self.rules_from(read, path, &path.join(name))
    }

    /// `.git/info/exclude` of the repository whose `.git` directory is in `dir` (at `path`),
    /// each component opened beneath the one before without following a symlink. A repository
    /// without one (or with a symlink on the way) has no such rules.
    fn repo_exclude(&mut self, dir: &Dir, path: &Path) -> Gitignore {
        let info = RootDir::open_dir_nofollow(dir, Path::new(".git"))
            .and_then(|git| RootDir::open_dir_nofollow(&git, Path::new("info")));
        let Ok(info) = info else {
            return Gitignore::empty();
        };
        let read = read_capped(&info, Path::new("exclude"));
        self.rules_from(read, path, &path.join(".git/info/exclude"))
    }

    /// The rules of an ignore file read for the directory `path` (shown as `shown` in a note
    /// when it could not be read).
    fn rules_from(
        &mut self,
        read: Result<Option<Vec<u8>>, String>,
        path: &Path,
        shown: &Path,
    ) -> Gitignore {
        match read {
            Ok(Some(bytes)) => compile(path, shown, &bytes, &mut self.notes),
            Ok(None) => Gitignore::empty(),
            Err(reason) => {
                self.notes.skipped(shown, &reason);
                Gitignore::empty()
            }
        }
    }

    /// `info/exclude` of a linked worktree's common directory: the `.git` file names the
    /// worktree's git directory (`gitdir: <path>`), whose `commondir` file names the common
    /// directory, as the `ignore` crate follows them, but read only beneath the root. Anything
    /// missing, malformed or outside gives no rules, silently: that is the normal state of a
    /// worktree whose repository lies outside the workspace.
    fn worktree_exclude(&mut self, dir: &Dir, path: &Path) -> Gitignore {
        let first_line = |bytes: Vec<u8>| -> Option<String> {
            let line = bytes.split(|&b| b == b'\n').next()?;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            String::from_utf8(line.to_vec()).ok()
        };
        let beneath = |from: &Path, named: &str| -> Option<PathBuf> {
            let named = Path::new(named);
            let joined = if named.is_absolute() {
                named.to_path_buf()
            } else {
                from.join(named)
            };
            self.root.relative_path(&joined).ok()
        };
        let git_dir = read_capped(dir, Path::new(".git"))
            .ok()
            .flatten()
            .and_then(first_line)
            .and_then(|line| beneath(path, line.strip_prefix("gitdir: ")?));
        let Some(git_dir) = git_dir else {
            return Gitignore::empty();
        };
        let common = read_capped(self.root.dir(), &git_dir.join("commondir"))
            .ok()
            .flatten()
            .and_then(first_line)
            .and_then(|line| {
                if line.starts_with('.') {
                    beneath(&git_dir, &line)
                } else {
                    beneath(Path::new(""), &line).filter(|_| Path::new(&line).is_absolute())
                }
            });
        let Some(common) = common else {
            return Gitignore::empty();
        };
        let exclude = common.join("info/exclude");
        let read = read_capped(self.root.dir(), &exclude);
        self.rules_from(read, path, &exclude)
    }
}

/// Compiles an ignore file's bytes into rules for the directory `path`, as
/// `GitignoreBuilder::add` reads a file: lines split at `\n` (a `\r` before it dropped), a
/// byte-order mark before the first one ignored, reading stopped at the first line that is
/// not UTF-8. A line over the pattern bounds is skipped with a note in `notes`.
pub(crate) fn compile(path: &Path, shown: &Path, bytes: &[u8], notes: &mut Notes) -> Gitignore {
    let mut builder = GitignoreBuilder::new(path);
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|line| line.is_empty()) {
        lines.pop();
    }
    for (index, line) in lines.into_iter().enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(line) = std::str::from_utf8(line) else {
            break;
        };
        let line = if index == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        if let Err(too_complex) = pattern::check(line) {
            notes.push(format!(
                "[ignore file {}: line {} skipped: {}]",
                display_path(shown),
                index + 1,
                too_complex.message()
            ));
            continue;
        }
        // An invalid line is skipped, the others kept, as ripgrep does.
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Reads the regular file `path` beneath `dir` if it is at most [`MAX_IGNORE_FILE_BYTES`]:
/// `Ok(None)` when it does not exist, `Err(reason)` when it is something else or too large.
fn read_capped(dir: &Dir, path: &Path) -> Result<Option<Vec<u8>>, String> {
    let reason = |e: io::Error| -> Result<Option<Vec<u8>>, String> {
        match e.kind() {
            io::ErrorKind::NotFound => Ok(None),
            // `a symbolic link, not followed` or `not a regular file`.
            io::ErrorKind::InvalidInput if e.raw_os_error().is_none() => Err(e.to_string()),
            _ => Err(format!("unreadable: {e}")),
        }
    };
    let file = match RootDir::open_regular_nofollow(dir, path) {
        Ok(file) => file,
        Err(e) => return reason(e),
    };
    let too_large = || Err(format!("larger than {MAX_IGNORE_FILE_BYTES} bytes"));
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_IGNORE_FILE_BYTES {
        return too_large();
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // Read to the cap and one byte past it, so a file growing meanwhile is still caught.
    if let Err(e) = file
        .into_std()
        .take(MAX_IGNORE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
    {
        return reason(e);
    }
    if bytes.len() as u64 > MAX_IGNORE_FILE_BYTES {
        return too_large();
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_few_and_short() {
        let mut notes = Notes::default();
        for n in 0..12 {
            notes.skipped(Path::new(&format!("d{n}/.gitignore")), "not a regular file");
        }
        notes.skipped(&Path::new("é").join("x".repeat(1000)), "not a regular file");
        let mut text = "a:1:b".to_string();
        notes.append_to(&mut text);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + MAX_NOTES + 1);
        assert_eq!(
            lines[1],
            "[ignore file skipped: d0/.gitignore: not a regular file]"
        );
        assert_eq!(lines[11], "[… and 3 more notes]");

        let mut notes = Notes::default();
        notes.skipped(&Path::new("é").join("x".repeat(1000)), "a symbolic link");
        let mut text = String::new();
        notes.append_to(&mut text);
        assert!(text.len() <= MAX_NOTE_BYTES + 1, "{}", text.len());
        assert!(text.ends_with("xxx…]\n"), "{text}");
    }
}
