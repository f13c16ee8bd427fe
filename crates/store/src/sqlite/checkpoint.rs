//! WAL checkpoints off the writers' path.
//!
//! By default SQLite checkpoints in the connection whose commit pushed the WAL past 1 000
//! pages, so one write in a few hundred pays for copying the WAL into the database and syncing
//! it (measured: about a sixth of a tool call's persistence cost). A store instead runs passive
//! checkpoints from a thread of its own, on its own connection, every [`INTERVAL`]: they never
//! wait for readers or writers, and a page written many times between two of them is copied
//! once. The writers' connection keeps an automatic checkpoint at a much larger size as a
//! backstop, should this thread fall behind.

use std::path::PathBuf;
use std::sync::{Mutex, Weak};
use std::time::Duration;

use rusqlite::Connection;

/// How often the thread checkpoints. Each checkpoint sorts the WAL's frames a whole index
/// segment (4 096 frames) at a time, however few are new, and copies each page once however
/// often it was written since the last: measured with callgrind on the service's bench, 50 ms
/// → 200 ms halved the checkpoint's instructions a second (2.8 M → 1.2 M) at the same rate of
/// runs; 500 ms saved little more, for a WAL that holds 2.5 times more between checkpoints.
pub(super) const INTERVAL: Duration = Duration::from_millis(200);

/// The writers' automatic checkpoint, in WAL pages: reached only if the thread falls behind.
pub(super) const BACKSTOP_PAGES: u32 = 20_000;

/// Starts the checkpoint thread of the database at `path`; it ends soon after the last handle
/// on `writer` (the store's connection) is dropped.
pub(super) fn spawn(path: PathBuf, writer: Weak<Mutex<Connection>>) {
    let spawned = std::thread::Builder::new()
        .name("toolsmith-sqlite-checkpoint".into())
        .spawn(move || {
            let Ok(conn) = Connection::open(&path) else {
                // The writers' own automatic checkpoint still runs.
                return;
            };
            while writer.strong_count() > 0 {
                std::thread::sleep(INTERVAL);
                // PASSIVE: copies what it can without waiting; a busy database is no error.
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::debug!(error = %e, "a background checkpoint did not run");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no background checkpoint thread: writers checkpoint");
    }
}
