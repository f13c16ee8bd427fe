//! What `write` and `edit` replace: the file as it was, kept with the call (not shown to the
//! model) so that a revert can put it back, and the shared path of both tools from the target
//! to the written file.
//!
//! The contract:
//!
//! - Both tools act only on a path that is absent (`write` creates it) or a regular UTF-8 file
//!   within the policy's byte limit (`limits.output_bytes`), the files `read` can show. A
//!   symlink at the target is refused (`TOOL_NOT_A_FILE`, naming it: write the file it points
//!   to), and so are directories, FIFOs, sockets and devices; git metadata is refused while
//!   the policy protects it ([`PATH_PROTECTED`](crate::PATH_PROTECTED)).
//! - The new file's mode is the old one's permission bits (`0o777`) or the default for a new
//!   file: a file tool never sets a set-user-ID, set-group-ID or sticky bit.
//! - Each successful call returns a [`FILE_CHANGE_ARTIFACT`] artifact holding a [`FileChange`]:
//!   the root, the path, the previous content and mode (or that there was no file), and the
//!   digest of what the call left. A stored run keeps it in the thread's journal with the
//!   call's output; `toolsmith threads revert` reads it back ([`revert_file_change`](crate::revert_file_change)).
//!   It is at most the byte limit, like the file itself.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;
use toolsmith_core::{Artifact, SessionState, ToolError};

use crate::Workspace;
use crate::protect::check_git;
use crate::read::{file_too_large, not_utf8, sha256_hex};
use crate::seen::{self, Stamp};

/// The artifact type of a [`FileChange`].
pub const FILE_CHANGE_ARTIFACT: &str = "file-change";

/// What one call of `write` or `edit` changed: enough to put the file back, and to tell
/// whether it changed again since.
///
/// ```
/// use toolsmith_builtins::{FileAfter, FileBefore, FileChange};
///
/// let change = FileChange {
///     root: Some("/work".into()),
///     path: "intro.md".into(),
///     before: Some(FileBefore::new("Hello\n", 0o644)),
///     after: FileAfter::new(b"text", 0o644),
/// };
/// let artifact = change.to_artifact();
/// assert_eq!(artifact.kind, "file-change");
/// assert_eq!(FileChange::from_artifact(&artifact), Some(change));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// The workspace root the call wrote beneath (canonical); `None` when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// The file, relative to the root, normalised.
    pub path: String,
    /// What was there before: `None` when the call created the file.
    pub before: Option<FileBefore>,
    /// What the call left.
    pub after: FileAfter,
}

/// A file's previous content, as `write` or `edit` replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileBefore {
    /// The whole content (UTF-8: the tools replace only text files).
    pub content: String,
    /// Its SHA-256, lowercase hex: a kept copy altered since (a secret masked in it, say) no
    /// longer matches, and is not restored.
    pub sha256: String,
    /// Its permission bits (`0o777` at most).
    pub mode: u32,
}

impl FileBefore {
    /// The previous state `content` with `mode` (masked to `0o777`).
    pub fn new(content: impl Into<String>, mode: u32) -> Self {
        let content = content.into();
        FileBefore {
            sha256: sha256_hex(content.as_bytes()),
            content,
            mode: mode & 0o777,
        }
    }
}

/// What a call left: the digest of the file it wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileAfter {
    /// The SHA-256 of the written bytes, lowercase hex.
    pub sha256: String,
    /// How many bytes were written.
    pub bytes: u64,
    /// The file's permission bits after the write.
    pub mode: u32,
}

impl FileAfter {
    /// The digest of `bytes` written with `mode` (masked to `0o777`).
    pub fn new(bytes: &[u8], mode: u32) -> Self {
        FileAfter {
            sha256: sha256_hex(bytes),
            bytes: bytes.len() as u64,
            mode: mode & 0o777,
        }
    }

    /// Whether `bytes` are what the call wrote.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        bytes.len() as u64 == self.bytes && sha256_hex(bytes) == self.sha256
    }
}

impl FileChange {
    /// The artifact that carries this change ([`FILE_CHANGE_ARTIFACT`]).
    pub fn to_artifact(&self) -> Artifact {
        Artifact {
            kind: FILE_CHANGE_ARTIFACT.to_string(),
            data: serde_json::to_value(self).unwrap_or_default(),
            mime_type: None,
        }
    }

    /// The change an artifact carries, if it is a [`FILE_CHANGE_ARTIFACT`] of this shape.
    pub fn from_artifact(artifact: &Artifact) -> Option<FileChange> {
        if artifact.kind != FILE_CHANGE_ARTIFACT {
            return None;
        }
        serde_json::from_value(artifact.data.clone()).ok()
    }
}

/// The file a tool is about to replace: where it is, and what is there now.
pub(crate) struct Target {
    /// The path as the model gave it, for messages.
    pub(crate) path: String,
    /// The path relative to the root, normalised.
    relative: PathBuf,
    /// The regular file there now, or `None`.
    pub(crate) current: Option<Current>,
}

/// A regular file a tool is about to replace.
pub(crate) struct Current {
    pub(crate) text: String,
    pub(crate) mode: u32,
    pub(crate) stamp: Stamp,
}

impl Target {
    /// Looks at `path`: refused when git protection covers it, or when something other than a
    /// regular file is there; a regular file over the byte limit is refused, one within it is
    /// read.
    ///
    /// # Errors
    ///
    /// Path errors as the root gives them (`TOOL_PATH_ESCAPE` for a symlink that leads out);
    /// `TOOL_PATH_PROTECTED`; `TOOL_NOT_A_FILE` for a symlink within the root (`Not a regular
    /// file: <path> (a symbolic link; use the path it points to)`) or another special file; `TOOL_IS_A_DIRECTORY`; `TOOL_FILE_TOO_LARGE`; `TOOL_IO_ERROR`.
    pub(crate) fn open(workspace: &Workspace, path: &str) -> Result<Target, ToolError> {
        let root = workspace.root();
        let relative = root.relative(path)?;
        check_git(workspace, path, &relative)?;
        let entry = root.dir().symlink_metadata(or_dot(&relative));
        let current = match entry {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Ok(m) if m.is_symlink() => {
                // A link that leads out is an escape, reported as every tool reports one.
                if let Err(e) = root.open_file(path)
                    && e.code() == "TOOL_PATH_ESCAPE"
                {
                    return Err(e);
                }
                return Err(ToolError::new(
                    "TOOL_NOT_A_FILE",
                    format!(
                        "Not a regular file: {path} (a symbolic link; use the path it points to)"
                    ),
                )
                .with_details(json!({ "path": path })));
            }
            Ok(m) if m.is_file() => Some(read_current(workspace, path)?),
            // A directory, a special file, or a parent that is not a directory or leads out:
            // the root says which, as it does for a read.
            _ => {
                return Err(root.open_file(path).err().unwrap_or_else(|| {
                    ToolError::new("TOOL_IO_ERROR", format!("{path}: cannot be replaced"))
                }));
            }
        };
        Ok(Target {
            path: path.to_string(),
            relative,
            current,
        })
    }

    /// Writes `bytes` in place of the target (atomically; the mode as the module says),
    /// records in `state` that the run has seen the result, and returns the change.
    ///
    /// # Errors
    ///
    /// As [`RootDir::write_atomic`](toolsmith_sandbox::RootDir::write_atomic).
    pub(crate) fn replace(
        self,
        workspace: &Workspace,
        state: &SessionState,
        bytes: &[u8],
    ) -> Result<FileChange, ToolError> {
        let root = workspace.root();
        root.write_atomic(&self.path, bytes)?;
        let written = root.open_file(&self.path).ok().map(|f| f.into_std());
        let metadata = written.and_then(|f| f.metadata().ok());
        if let Some(metadata) = &metadata {
            seen::record(state, Stamp::of(metadata));
        }
        let mode = metadata.map_or(0o644, |m| {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode()
        });
        let before = self.current.map(|c| FileBefore::new(c.text, c.mode));
        Ok(FileChange {
            root: root.path().to_str().map(PathBuf::from),
            path: self.relative.to_string_lossy().into_owned(),
            before,
            after: FileAfter::new(bytes, mode),
        })
    }
}

/// Reads the regular file at `path`: its bytes (refused over the byte limit, and when not
/// UTF-8), mode and stamp, all from one open file.
fn read_current(workspace: &Workspace, path: &str) -> Result<Current, ToolError> {
    use std::os::unix::fs::PermissionsExt;
    let limit = workspace.policy().limits.output_bytes;
    let file = workspace.root().open_file(path)?.into_std();
    let io_err = |e: std::io::Error| ToolError::new("TOOL_IO_ERROR", format!("{path}: {e}"));
    let metadata = file.metadata().map_err(io_err)?;
    if metadata.len() > limit as u64 {
        return Err(file_too_large(metadata.len(), limit));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() > limit {
        return Err(file_too_large(bytes.len() as u64, limit));
    }
    let text = String::from_utf8(bytes).map_err(|_| not_utf8(path))?;
    Ok(Current {
        text,
        mode: metadata.permissions().mode() & 0o777,
        stamp: Stamp::of(&metadata),
    })
}

/// `.` for the root itself, which cap-std wants spelled out.
pub(crate) fn or_dot(relative: &Path) -> &Path {
    if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    }
}
