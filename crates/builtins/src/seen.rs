//! What a run has seen of the workspace's files, so that `write` replaces only a file the run
//! has seen as it is now.
//!
//! The contract:
//!
//! - A file is named by its device and inode, and stamped with its size and modification time
//!   (seconds and nanoseconds). `read` stamps a file when it returns its content (a whole file
//!   or a window of lines: any successful read); `write` and `edit` stamp what they leave.
//! - The stamps live in the run's [`SessionState`] under [`SEEN_FILES_STATE_KEY`]: they end
//!   with the run, a sub-agent's run keeps its own, and a run resumed in another process starts
//!   with none (its model reads the file again). At most [`MAX_SEEN_FILES`] are kept per run;
//!   past that the oldest is forgotten, and a write over it asks for a new read: forgetting
//!   can only refuse a write, never allow one.
//! - [`check_overwrite`] refuses to replace a file the run has no stamp for, or whose stamp
//!   differs from the file now, with [`FILE_NOT_READ`]. Creating a file needs no stamp.
//!
//! The stamp is taken from the open file *before* `read` reads it, so a change made while the
//! file is read makes the stamp stale (the write is refused), never the reverse.

use serde_json::{Map, Value, json};
use toolsmith_core::{SessionState, ToolError};
use toolsmith_sandbox::RootDir;

/// The error code of a `write` over an existing file the run has not read, or that changed
/// since it was read.
pub const FILE_NOT_READ: &str = "TOOL_FILE_NOT_READ";

/// The [`SessionState`] key under which a run's file stamps are kept: an object from
/// `"<device>:<inode>"` to `[size, mtime seconds, mtime nanoseconds]`, oldest first.
pub const SEEN_FILES_STATE_KEY: &str = "filesSeen";

/// How many file stamps a run keeps (about 100 bytes each, so at most about 400 KB).
pub const MAX_SEEN_FILES: usize = 4096;

/// A file's identity and version: device, inode, size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    /// The stamp of the file `metadata` describes.
    pub(crate) fn of(metadata: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: metadata.dev(),
            ino: metadata.ino(),
            size: metadata.size(),
            mtime: metadata.mtime(),
            mtime_nsec: metadata.mtime_nsec(),
        }
    }

    /// The stamp of the regular file at `path` beneath `root`, opened confined; `None` when it
    /// cannot be opened (the caller's own open reports why).
    pub(crate) fn of_path(root: &RootDir, path: &str) -> Option<Stamp> {
        let file = root.open_file(path).ok()?.into_std();
        file.metadata().ok().map(|m| Stamp::of(&m))
    }

    fn key(&self) -> String {
        format!("{}:{}", self.dev, self.ino)
    }

    fn version(&self) -> Value {
        json!([self.size, self.mtime, self.mtime_nsec])
    }
}

/// Records that the run has seen the file as `stamp` says, replacing an older stamp of it.
pub(crate) fn record(state: &SessionState, stamp: Stamp) {
    state.update(|map| {
        let seen = map
            .entry(SEEN_FILES_STATE_KEY)
            .or_insert_with(|| Value::Object(Map::new()));
        if !seen.is_object() {
            *seen = Value::Object(Map::new());
        }
        let Value::Object(seen) = seen else { return };
        let key = stamp.key();
        // Removed and inserted again, so the order stays oldest first.
        if seen.shift_remove(&key).is_none() && seen.len() >= MAX_SEEN_FILES {
            let oldest = seen.keys().next().cloned();
            if let Some(oldest) = oldest {
                seen.shift_remove(&oldest);
            }
        }
        seen.insert(key, stamp.version());
    });
}

/// Whether the run may replace the existing file `path`, now as `current` says: it must have
/// seen this very file (device and inode) at this very version (size and modification time).
///
/// # Errors
///
/// [`FILE_NOT_READ`]: `Refusing to overwrite <path>: read it first (it exists and this run has
/// not read it)`, or `… (it changed since it was read)`, with details `{path, reason}`
/// (`not-read` or `changed`).
pub(crate) fn check_overwrite(
    state: &SessionState,
    path: &str,
    current: Stamp,
) -> Result<(), ToolError> {
    let seen = state.update(|map| {
        map.get(SEEN_FILES_STATE_KEY)
            .and_then(|seen| seen.get(current.key()))
            .cloned()
    });
    let (reason, why) = match seen {
        Some(version) if version == current.version() => return Ok(()),
        Some(_) => ("changed", "it changed since it was read"),
        None => ("not-read", "it exists and this run has not read it"),
    };
    Err(ToolError::new(
        FILE_NOT_READ,
        format!("Refusing to overwrite {path}: read it first ({why})"),
    )
    .with_details(json!({ "path": path, "reason": reason })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ino: u64, size: u64) -> Stamp {
        Stamp {
            dev: 1,
            ino,
            size,
            mtime: 10,
            mtime_nsec: 5,
        }
    }

    #[test]
    fn a_stamp_allows_only_its_own_version() {
        let state = SessionState::default();
        let err = check_overwrite(&state, "a.md", stamp(7, 3)).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (
                FILE_NOT_READ,
                "Refusing to overwrite a.md: read it first (it exists and this run has not read it)"
            )
        );
        record(&state, stamp(7, 3));
        assert!(check_overwrite(&state, "a.md", stamp(7, 3)).is_ok());
        let err = check_overwrite(&state, "a.md", stamp(7, 4)).unwrap_err();
        assert_eq!(
            err.message(),
            "Refusing to overwrite a.md: read it first (it changed since it was read)"
        );
        assert_eq!(
            err.details(),
            Some(&json!({"path": "a.md", "reason": "changed"}))
        );
        // Another file of the same size and time is another file.
        assert!(check_overwrite(&state, "b.md", stamp(8, 3)).is_err());
    }

    #[test]
    fn the_oldest_stamp_goes_first_when_the_run_has_seen_too_many() {
        let state = SessionState::default();
        for ino in 0..MAX_SEEN_FILES as u64 {
            record(&state, stamp(ino, 1));
        }
        // Seen again: now the newest, so it stays.
        record(&state, stamp(0, 1));
        record(&state, stamp(u64::MAX, 1));
        let seen = state.get(SEEN_FILES_STATE_KEY).unwrap();
        assert_eq!(seen.as_object().unwrap().len(), MAX_SEEN_FILES);
        assert!(check_overwrite(&state, "x", stamp(0, 1)).is_ok());
        assert!(check_overwrite(&state, "x", stamp(1, 1)).is_err());
        assert!(check_overwrite(&state, "x", stamp(u64::MAX, 1)).is_ok());
    }

    #[test]
    fn a_state_value_of_another_shape_is_replaced() {
        let state = SessionState::default();
        state.set(SEEN_FILES_STATE_KEY, json!("garbage"));
        assert!(check_overwrite(&state, "x", stamp(1, 1)).is_err());
        record(&state, stamp(1, 1));
        assert!(check_overwrite(&state, "x", stamp(1, 1)).is_ok());
    }
}
