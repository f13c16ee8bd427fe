//! [`StoreError`]: what a store operation can fail with.

/// A store operation's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another writer changed the thread first: its version is not the one the write expected.
    /// Exactly one of two concurrent continuations of a thread gets past this.
    #[error(
        "thread {thread} was changed by another writer (expected version {expected}, found {found})"
    )]
    Conflict {
        /// The thread.
        thread: String,
        /// The version the write expected.
        expected: u64,
        /// The version the store has.
        found: u64,
    },
    /// The thread does not exist.
    #[error("thread {0} does not exist")]
    NotFound(String),
    /// A thread with this id exists already.
    #[error("thread {0} exists already")]
    Exists(String),
    /// A stored value could not be read back (a row written by a newer version, or damaged).
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    /// The backend failed (I/O, the database server, a lock that was not released in time).
    #[error("store backend error: {0}")]
    Backend(String),
}

impl StoreError {
    /// Whether retrying the whole operation later may succeed (a busy database), as opposed to
    /// a conflict or missing data.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Backend(_))
    }
}
