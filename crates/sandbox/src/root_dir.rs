//! [`RootDir`]: the confined filesystem of the in-process file tools.

use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, OpenOptions, OpenOptionsExt};
use toolsmith_core::ToolError;

/// The message cap-std gives every escape it stops (an `EXDEV` from `openat2(RESOLVE_BENEATH)`,
/// or its own walk meeting `..` or an absolute symlink at the root).
const CAP_STD_ESCAPE: &str = "a path led outside of the filesystem";

/// `TOOL_PATH_INVALID`: `Path must be a string` (Smithers' message), for empty and NUL-containing
/// paths.
pub fn path_invalid() -> ToolError {
    ToolError::new("TOOL_PATH_INVALID", "Path must be a string")
}

/// `TOOL_PATH_ESCAPE`: `Path escapes sandbox root`.
pub fn path_escape(path: &str) -> ToolError {
    ToolError::new("TOOL_PATH_ESCAPE", "Path escapes sandbox root")
        .with_details(serde_json::json!({ "path": path }))
}

/// `TOOL_PATH_ESCAPE`: `Path escapes sandbox root (via symlink)`.
pub fn path_escape_via_symlink(path: &str) -> ToolError {
    ToolError::new(
        "TOOL_PATH_ESCAPE",
        "Path escapes sandbox root (via symlink)",
    )
    .with_details(serde_json::json!({ "path": path }))
}

/// `TOOL_PATH_TOO_LONG`: `Path or file name too long` (a path over `PATH_MAX`, a component over
/// `NAME_MAX`).
fn path_too_long(path: &str) -> ToolError {
    ToolError::new("TOOL_PATH_TOO_LONG", "Path or file name too long")
        .with_details(serde_json::json!({ "path": path }))
}

/// `PATH_MAX`, counting the terminating NUL: paths of this many bytes or more are refused.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// The root directory of a workspace, opened once; every path the file tools touch is resolved
/// beneath it by the kernel.
///
/// Paths are model input: relative paths resolve against the root, absolute paths are accepted
/// when they lie inside the root, `..` may be used as long as it stays inside. Everything is
/// opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` relative to the root's file
/// descriptor (cap-std; a race-safe component walk where openat2 is missing), so a symlink
/// pointing outside, `/proc/self/root` tricks and symlinks swapped in mid-call are all stopped
/// by the kernel, not by a string check that could race.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let root = toolsmith_sandbox::RootDir::open(dir.path()).unwrap();
/// root.write_atomic("notes/a.txt", b"hello").unwrap();
/// assert_eq!(root.read_to_string("notes/a.txt").unwrap(), "hello");
/// assert_eq!(root.read_to_string("../etc/passwd").unwrap_err().code(), "TOOL_PATH_ESCAPE");
/// ```
#[derive(Debug)]
pub struct RootDir {
    path: PathBuf,
    dir: Dir,
}

impl RootDir {
    /// Opens `root` (which must be an existing directory), resolving it to its canonical path.
    ///
    /// # Errors
    ///
    /// The I/O error when it does not exist or cannot be opened.
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let path = std::fs::canonicalize(root.as_ref())?;
        let dir = Dir::open_ambient_dir(&path, ambient_authority())?;
        Ok(RootDir { path, dir })
    }

    /// The root's canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's directory handle.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Turns a model-given path into a normalised path relative to the root, without touching the
    /// filesystem. `""` means the root itself.
    ///
    /// # Errors
    ///
    /// `TOOL_PATH_INVALID` for an empty or NUL-containing path; `TOOL_PATH_TOO_LONG` for a path
    /// of `PATH_MAX` (4096) bytes or more, with or without openat2; `TOOL_PATH_ESCAPE` for an
    /// absolute path outside the root or a `..` that climbs out of it.
    pub fn relative(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.relative_path(Path::new(path))
    }

    /// [`relative`](Self::relative) for a path that need not be UTF-8 (a name found by a
    /// directory walk). Errors show the path lossily.
    ///
    /// # Errors
    ///
    /// As [`relative`](Self::relative).
    pub fn relative_path(&self, given: &Path) -> Result<PathBuf, ToolError> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = given.as_os_str().as_bytes();
        if bytes.is_empty() || bytes.contains(&0) {
            return Err(path_invalid());
        }
        let shown = || given.to_string_lossy().into_owned();
        if bytes.len() >= PATH_MAX {
            // openat2 would say ENAMETOOLONG; cap-std's walk without it would go on, component
            // by component (and `create_dir_all` would build the whole chain), so refuse here.
            return Err(path_too_long(&shown()));
        }
        let relative = if given.is_absolute() {
            given
                .strip_prefix(&self.path)
                .map_err(|_| path_escape(&shown()))?
        } else {
            given
        };
        let mut normal = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => normal.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(path_escape(&shown()));
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(path_escape(&shown())),
            }
        }
        Ok(normal)
    }

    /// [`relative_path`](Self::relative_path) without allocating for the common case: a relative
    /// path of plain names (the kernel resolves it beneath the root either way).
    fn normalized<'a>(&self, given: &'a Path) -> Result<Cow<'a, Path>, ToolError> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = given.as_os_str().as_bytes();
        let plain = !bytes.contains(&0)
            && !bytes.is_empty()
            && bytes.len() < PATH_MAX
            && given
                .components()
                .all(|c| matches!(c, Component::Normal(_)));
        if plain {
            return Ok(Cow::Borrowed(given));
        }
        self.relative_path(given).map(Cow::Owned)
    }

    /// Maps an I/O error from a confined operation on `path` to a tool error.
    fn io_error(&self, path: &str, error: io::Error) -> ToolError {
        if error.to_string() == CAP_STD_ESCAPE {
            // The path stayed inside lexically (`relative` checked), so a symlink led out.
            return path_escape_via_symlink(path);
        }
        let (code, message) = match error.kind() {
            io::ErrorKind::NotFound => ("TOOL_FILE_NOT_FOUND", format!("File not found: {path}")),
            io::ErrorKind::PermissionDenied => (
                "TOOL_PERMISSION_DENIED",
                format!("Permission denied: {path}"),
            ),
            io::ErrorKind::IsADirectory => {
                ("TOOL_IS_A_DIRECTORY", format!("Is a directory: {path}"))
            }
            io::ErrorKind::NotADirectory => {
                ("TOOL_NOT_A_DIRECTORY", format!("Not a directory: {path}"))
            }
            // ENAMETOOLONG: a path over PATH_MAX or a component over NAME_MAX.
            io::ErrorKind::InvalidFilename => return path_too_long(path),
            _ => ("TOOL_IO_ERROR", format!("{path}: {error}")),
        };
        ToolError::new(code, message).with_details(serde_json::json!({ "path": path }))
    }

    /// Opens an existing file beneath the root for reading.
    ///
    /// # Errors
    ///
    /// Path errors as [`relative`](Self::relative), `TOOL_PATH_ESCAPE` (via symlink),
    /// `TOOL_FILE_NOT_FOUND`, `TOOL_IS_A_DIRECTORY`, `TOOL_PATH_TOO_LONG` (`Path or file name too
    /// long`), `TOOL_NOT_A_FILE` (a FIFO, socket or device:
    /// the file is opened non-blocking, so a FIFO cannot hang the call), `TOOL_PERMISSION_DENIED`,
    /// `TOOL_IO_ERROR`.
    pub fn open_file(&self, path: &str) -> Result<File, ToolError> {
        self.open_file_path(Path::new(path))
    }

    /// [`open_file`](Self::open_file) for a path that need not be UTF-8.
    ///
    /// # Errors
    ///
    /// As [`open_file`](Self::open_file).
    pub fn open_file_path(&self, given: &Path) -> Result<File, ToolError> {
        let relative = self.normalized(given)?;
        let shown = given.to_string_lossy();
        let path: &str = &shown;
        // O_NONBLOCK so that opening a FIFO cannot hang the tool; it is refused just below.
        let mut options = OpenOptions::new();
        options
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
        let file = self
            .dir
            .open_with(or_dot(&relative), &options)
            .map_err(|e| self.io_error(path, e))?;
        // A plain fstat: cheaper than cap-std's metadata, and the type is all we need.
        let stat = rustix::fs::fstat(&file).map_err(|e| self.io_error(path, e.into()))?;
        let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
        if kind == rustix::fs::FileType::Directory {
            return Err(self.io_error(path, io::Error::from(io::ErrorKind::IsADirectory)));
        }
        if kind != rustix::fs::FileType::RegularFile {
            return Err(
                ToolError::new("TOOL_NOT_A_FILE", format!("Not a regular file: {path}"))
                    .with_details(serde_json::json!({ "path": path })),
            );
        }
        Ok(file)
    }

    /// Opens the directory `path` beneath `dir` (a handle opened beneath the root: [`dir`],
    /// [`open_dir`], or an earlier call of this function) for listing, without following a
    /// symlink at its last component, for a directory walk: the kernel resolves `path`
    /// beneath `dir` (`openat2(RESOLVE_BENEATH)`), so an entry swapped for a symlink after it
    /// was listed is refused (`ELOOP`), never followed out. (Without openat2, cap-std's
    /// component walk may follow such a symlink, but only while it stays beneath `dir`.)
    ///
    /// [`dir`]: Self::dir
    /// [`open_dir`]: Self::open_dir
    ///
    /// # Errors
    ///
    /// The I/O error: `ELOOP` for a symlink, `ENOTDIR` for anything but a directory, escapes as
    /// cap-std reports them.
    pub fn open_dir_nofollow(dir: &Dir, path: &Path) -> io::Result<Dir> {
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(
            (rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::NOFOLLOW).bits() as i32,
        );
        let file = dir.open_with(path, &options)?;
        Ok(Dir::from_std_file(file.into_std()))
    }

    /// Opens the regular file `path` beneath `dir` (a handle opened beneath the root, as for
    /// [`open_dir_nofollow`](Self::open_dir_nofollow)) for reading, without following a symlink
    /// at its last component and without blocking: anything but a regular file is refused
    /// before it is opened (a device is never opened), then it is opened `O_NOFOLLOW |
    /// O_NONBLOCK`, so a FIFO swapped in cannot hang the call, and checked again with `fstat`
    /// on the open handle, so nothing but a regular file is ever read. For files a walk finds
    /// by itself (ignore files), where a symlink is skipped rather than followed.
    ///
    /// # Errors
    ///
    /// The I/O error: [`io::ErrorKind::InvalidInput`] `a symbolic link, not followed` for a
    /// symlink and `not a regular file` for a directory, FIFO, socket or device; escapes as
    /// cap-std reports them.
    pub fn open_regular_nofollow(dir: &Dir, path: &Path) -> io::Result<File> {
        let symlink =
            || io::Error::new(io::ErrorKind::InvalidInput, "a symbolic link, not followed");
        let not_regular = || io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        // Look first: a device is then never opened (opening one can have effects), and a
        // symlink is refused the same way on every kernel (without openat2, cap-std resolves a
        // symlink at the last component itself, beneath `dir`, rather than let O_NOFOLLOW
        // refuse it). The flags and the fstat below close the race with a swap meanwhile.
        if let Ok(metadata) = dir.symlink_metadata(path) {
            if metadata.is_symlink() {
                return Err(symlink());
            }
            if !metadata.is_file() {
                return Err(not_regular());
            }
        }
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(
            (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32,
        );
        let file = dir.open_with(path, &options).map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                symlink()
            } else {
                e
            }
        })?;
        let stat = rustix::fs::fstat(&file)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(not_regular());
        }
        Ok(file)
    }

    /// Opens an existing directory beneath the root (`""` or `.` is the root).
    ///
    /// # Errors
    ///
    /// As [`open_file`](Self::open_file), with `TOOL_NOT_A_DIRECTORY` for a file.
    pub fn open_dir(&self, path: &str) -> Result<Dir, ToolError> {
        let relative = self.relative(path)?;
        self.dir
            .open_dir(or_dot(&relative))
            .map_err(|e| self.io_error(path, e))
    }

    /// The metadata of an existing entry beneath the root, following symlinks confined to the
    /// root (a symlink out is refused like any other escape).
    ///
    /// # Errors
    ///
    /// As [`open_file`](Self::open_file).
    pub fn metadata(&self, path: &str) -> Result<cap_std::fs::Metadata, ToolError> {
        let relative = self.relative(path)?;
        self.dir
            .metadata(or_dot(&relative))
            .map_err(|e| self.io_error(path, e))
    }

    /// The absolute path of an existing directory beneath the root (a command's working
    /// directory). The directory is opened confined first, so a symlink out is refused.
    ///
    /// # Errors
    ///
    /// As [`open_dir`](Self::open_dir).
    pub fn resolve_dir(&self, path: &str) -> Result<PathBuf, ToolError> {
        let relative = self.relative(path)?;
        self.open_dir(path)?;
        Ok(self.path.join(relative))
    }

    /// Reads a whole file as UTF-8.
    ///
    /// # Errors
    ///
    /// As [`open_file`](Self::open_file), and `TOOL_FILE_NOT_UTF8` for other encodings.
    pub fn read_to_string(&self, path: &str) -> Result<String, ToolError> {
        let bytes = self.read(path)?;
        String::from_utf8(bytes).map_err(|_| {
            ToolError::new(
                "TOOL_FILE_NOT_UTF8",
                format!("File is not UTF-8 text: {path}"),
            )
        })
    }

    /// Reads a whole file.
    ///
    /// # Errors
    ///
    /// As [`open_file`](Self::open_file).
    pub fn read(&self, path: &str) -> Result<Vec<u8>, ToolError> {
        use std::io::Read;
        let mut file = self.open_file(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| self.io_error(path, e))?;
        Ok(bytes)
    }

    /// Replaces (or creates) a file atomically: the bytes go to a temporary file in the same
    /// directory, which is then renamed over the target. Parent directories are created. The
    /// target's permission bits (`0o777`) are kept when it exists; set-ID and sticky bits never
    /// are. A hard link at the target is replaced, never
    /// written through, so a link to a file outside the root cannot carry a write out. A symlink
    /// at the target that leads out of the root (dangling or not) is refused; one that stays
    /// inside (or dangles inside) is replaced by the new file, not followed.
    ///
    /// # Errors
    ///
    /// Path errors, `TOOL_PATH_ESCAPE` (via symlink) for a parent that leads outside,
    /// `TOOL_IS_A_DIRECTORY` when the target is a directory, I/O errors.
    pub fn write_atomic(&self, path: &str, bytes: &[u8]) -> Result<(), ToolError> {
        let relative = self.relative(path)?;
        let Some(name) = relative.file_name() else {
            return Err(self.io_error(path, io::Error::from(io::ErrorKind::IsADirectory)));
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        let parent_dir = match self.dir.open_dir(or_dot(parent)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Create what is missing, then open again (confined, so a symlink out that
                // was there, or was swapped in, is still refused).
                self.dir
                    .create_dir_all(parent)
                    .map_err(|e| self.io_error(path, e))?;
                self.dir.open_dir(or_dot(parent))
            }
            other => other,
        }
        .map_err(|e| self.io_error(path, e))?;
        let existing = parent_dir.symlink_metadata(name).ok();
        if existing.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(self.io_error(path, io::Error::from(io::ErrorKind::IsADirectory)));
        }
        if existing.as_ref().is_some_and(|m| m.is_symlink())
            && let Err(e) = parent_dir.metadata(name)
            && e.to_string() == CAP_STD_ESCAPE
        {
            // A symlink out (even a dangling one) is refused rather than silently replaced.
            return Err(path_escape_via_symlink(path));
        }

        let temp_name = temp_name(name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let mut temp = parent_dir
            .open_with(&temp_name, &options)
            .map_err(|e| self.io_error(path, e))?;
        let written = temp
            .write_all(bytes)
            .and_then(|()| temp.sync_data())
            .and_then(|()| match existing.filter(|m| m.is_file()) {
                // The permission bits only: never a set-user-ID, set-group-ID or sticky bit,
                // whatever the replaced file had (a set-user-ID file written by a root
                // toolsmith would grant root to whoever runs it later).
                Some(metadata) => {
                    use cap_std::fs::{Permissions, PermissionsExt};
                    let mode = PermissionsExt::mode(&metadata.permissions()) & 0o777;
                    temp.set_permissions(Permissions::from_mode(mode))
                }
                None => Ok(()),
            })
            .and_then(|()| parent_dir.rename(&temp_name, &parent_dir, name));
        if let Err(e) = written {
            let _ = parent_dir.remove_file(&temp_name);
            return Err(self.io_error(path, e));
        }
        Ok(())
    }
}

/// `.` for the root itself, which cap-std wants spelled out.
fn or_dot(relative: &Path) -> &Path {
    if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    }
}

/// A fresh temporary name next to the target: `.<name>.<pid>.<n>.toolsmith-tmp`.
fn temp_name(name: &std::ffi::OsStr) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".{}.{n}.toolsmith-tmp", std::process::id()));
    PathBuf::from(temp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, RootDir) {
        let dir = tempfile::tempdir().unwrap();
        let root = RootDir::open(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn relative_paths_normalise_and_refuse_to_climb_out() {
        let (_dir, root) = root();
        assert_eq!(root.relative("a/./b/../c").unwrap(), PathBuf::from("a/c"));
        assert_eq!(root.relative(".").unwrap(), PathBuf::new());
        let inside = root.path().join("x/y");
        assert_eq!(
            root.relative(inside.to_str().unwrap()).unwrap(),
            PathBuf::from("x/y")
        );
        for bad in ["..", "../x", "a/../../x", "/etc/passwd"] {
            let err = root.relative(bad).unwrap_err();
            assert_eq!(
                (err.code(), err.message()),
                ("TOOL_PATH_ESCAPE", "Path escapes sandbox root"),
                "{bad}"
            );
        }
        for bad in ["", "a\0b"] {
            let err = root.relative(bad).unwrap_err();
            assert_eq!(
                (err.code(), err.message()),
                ("TOOL_PATH_INVALID", "Path must be a string")
            );
        }
    }

    #[test]
    fn a_sibling_sharing_the_roots_name_prefix_is_outside() {
        let (dir, root) = root();
        let sibling = format!("{}evil/secret", dir.path().display());
        assert_eq!(
            root.relative(&sibling).unwrap_err().code(),
            "TOOL_PATH_ESCAPE"
        );
    }
}
