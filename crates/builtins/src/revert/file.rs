//! Putting back what a `write` or `edit` call replaced: [`revert_file_change`].
//!
//! The contract: everything goes through the confined [`RootDir`] (a path that leads out of it
//! is refused as the file tools refuse it); a file is put back only while it still holds
//! exactly what the call wrote (size and SHA-256), unless forced; the previous content is
//! written only when it still matches its own SHA-256 (a kept copy altered since, a secret
//! masked in it say, is never written); the previous mode is restored without set-ID or sticky
//! bits; a file the call created is removed. Reverting what is already as before the call does
//! nothing and says so.

use std::io::Read as _;

use serde_json::json;
use toolsmith_core::ToolError;
use toolsmith_sandbox::RootDir;

use crate::file_change::{FileBefore, FileChange, or_dot};
use crate::read::sha256_hex;

/// The error code of a revert refused because the file changed after the call wrote it.
pub const REVERT_FILE_CHANGED: &str = "REVERT_FILE_CHANGED";

/// The error code of a revert refused because the kept previous content no longer matches its
/// SHA-256.
pub const REVERT_COPY_ALTERED: &str = "REVERT_COPY_ALTERED";

/// What [`revert_file_change`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reverted {
    /// The previous content was written back, with the previous mode.
    Restored,
    /// The file the call created was removed.
    Removed,
    /// The file already was as before the call (same content, or absent): nothing was done.
    AlreadyReverted,
}

impl Reverted {
    /// `restored`, `removed` or `already-reverted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reverted::Restored => "restored",
            Reverted::Removed => "removed",
            Reverted::AlreadyReverted => "already-reverted",
        }
    }
}

/// What is at the path now.
enum Now {
    Absent,
    File(Vec<u8>),
    /// A directory, symlink or special file.
    Other,
}

/// Puts back the file `change` describes, beneath `root` (`change.root` is not read: the
/// caller chooses the root).
///
/// ```
/// use toolsmith_builtins::{FileAfter, FileBefore, FileChange, Reverted, revert_file_change};
///
/// let dir = tempfile::tempdir().unwrap();
/// let root = toolsmith_sandbox::RootDir::open(dir.path()).unwrap();
/// std::fs::write(dir.path().join("intro.md"), "text").unwrap();
/// let change = FileChange {
///     root: None,
///     path: "intro.md".into(),
///     before: Some(FileBefore::new("Hello\n", 0o644)),
///     after: FileAfter::new(b"text", 0o644),
/// };
/// assert_eq!(revert_file_change(&root, &change, false).unwrap(), Reverted::Restored);
/// assert_eq!(std::fs::read_to_string(dir.path().join("intro.md")).unwrap(), "Hello\n");
/// assert_eq!(revert_file_change(&root, &change, false).unwrap(), Reverted::AlreadyReverted);
/// ```
///
/// # Errors
///
/// Path errors as the root gives them; [`REVERT_FILE_CHANGED`] `<path> changed after the call
/// wrote it` when it holds something else and `force` is off; [`REVERT_COPY_ALTERED`] `The
/// kept copy of <path> no longer matches its SHA-256; restore it by hand`; `TOOL_IO_ERROR`.
pub fn revert_file_change(
    root: &RootDir,
    change: &FileChange,
    force: bool,
) -> Result<Reverted, ToolError> {
    let path = change.path.as_str();
    let relative = root.relative(path)?;
    let cap = change
        .after
        .bytes
        .max(change.before.as_ref().map_or(0, |b| b.content.len() as u64));
    let now = match root.dir().symlink_metadata(or_dot(&relative)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Now::Absent,
        Ok(m) if m.is_file() => {
            let mut bytes = Vec::new();
            root.open_file(path)?
                .into_std()
                .take(cap + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| io_error(path, &e))?;
            Now::File(bytes)
        }
        Ok(_) => Now::Other,
        Err(e) => return Err(root.open_file(path).err().unwrap_or(io_error(path, &e))),
    };
    let as_before = match (&now, &change.before) {
        (Now::Absent, None) => true,
        (Now::File(bytes), Some(before)) => bytes == before.content.as_bytes(),
        _ => false,
    };
    if as_before {
        return Ok(Reverted::AlreadyReverted);
    }
    let as_written = matches!(&now, Now::File(bytes) if change.after.matches(bytes));
    if !as_written && !force {
        return Err(ToolError::new(
            REVERT_FILE_CHANGED,
            format!("{path} changed after the call wrote it"),
        )
        .with_details(json!({ "path": path })));
    }
    match &change.before {
        None => match root.dir().remove_file(&relative) {
            Ok(()) => Ok(Reverted::Removed),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Reverted::AlreadyReverted),
            Err(e) => Err(io_error(path, &e)),
        },
        Some(before) => restore(root, path, before).map(|()| Reverted::Restored),
    }
}

/// Writes `before` back at `path`, with its mode.
fn restore(root: &RootDir, path: &str, before: &FileBefore) -> Result<(), ToolError> {
    if sha256_hex(before.content.as_bytes()) != before.sha256 {
        return Err(ToolError::new(
            REVERT_COPY_ALTERED,
            format!("The kept copy of {path} no longer matches its SHA-256; restore it by hand"),
        )
        .with_details(json!({ "path": path })));
    }
    root.write_atomic(path, before.content.as_bytes())?;
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::Permissions::from_mode(before.mode & 0o777);
    root.open_file(path)?
        .into_std()
        .set_permissions(mode)
        .map_err(|e| io_error(path, &e))
}

fn io_error(path: &str, e: &std::io::Error) -> ToolError {
    ToolError::new("TOOL_IO_ERROR", format!("{path}: {e}")).with_details(json!({ "path": path }))
}
