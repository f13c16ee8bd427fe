//! Who may read the database file: only its owner.
//!
//! SQLite creates a missing database file with mode 0644 less the umask, so under the usual
//! umask 022 every local user could read the threads, their tool calls and results. The store
//! creates the file itself first, with mode 0600 set explicitly (whatever the umask), and
//! SQLite gives the `-wal` and `-shm` files it makes next to it the database file's mode. A
//! file that already exists keeps its mode — its owner may have chosen to share it with a
//! group — but a file that others than its owner can read is reported with a warning.

use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of a database file the store creates.
pub(super) const DATABASE_MODE: u32 = 0o600;

/// Makes sure the database file at `path` exists, created with [`DATABASE_MODE`] when it did
/// not; warns when an existing one is readable by its group or others. Any other failure
/// (a missing directory, no permission) is left for SQLite's open to report as it does.
pub(super) fn create_private(path: &Path) {
    let created = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(DATABASE_MODE)
        .open(path);
    match created {
        // The umask may have removed bits from the mode asked for (0600 less 0277 would be
        // 0400, a file SQLite cannot write): set it exactly.
        Ok(file) => {
            if let Err(e) = file.set_permissions(std::fs::Permissions::from_mode(DATABASE_MODE)) {
                tracing::warn!(path = %path.display(), error = %e, "cannot set the database file's mode to 0600");
            }
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => warn_if_shared(path),
        Err(_) => {}
    }
}

/// Warns when the existing file at `path` can be read by others than its owner.
fn warn_if_shared(path: &Path) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o7777;
    if meta.is_file() && mode & 0o044 != 0 {
        tracing::warn!(
            "the database {} can be read by other users (mode {mode:04o}): it holds every \
             stored thread; `chmod 600` it unless that is meant",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o7777
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_new_database_and_its_wal_and_shm_files_are_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let store = crate::SqliteStore::open(&path).await.unwrap();
        use crate::{NewThread, Store};
        store.create_thread(NewThread::new("t")).await.unwrap();
        for file in ["runs.db", "runs.db-wal", "runs.db-shm"] {
            assert_eq!(mode(&dir.path().join(file)), 0o600, "{file}");
        }
    }

    #[test]
    fn an_existing_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        create_private(&path);
        assert_eq!(mode(&path), 0o640);
    }

    #[test]
    fn a_missing_directory_is_left_to_sqlite_to_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/runs.db");
        create_private(&path);
        assert!(!path.exists());
        assert!(!dir.path().join("no").exists());
    }
}
