//! Reverting what the file tools changed: one call's [`FileChange`](crate::FileChange)
//! ([`revert_file_change`], `file.rs`), and every change a stored thread's calls made, newest
//! first ([`revertible`] and [`revert`], `thread.rs`, behind `toolsmith threads revert`).

mod file;
mod thread;

pub use file::{REVERT_COPY_ALTERED, REVERT_FILE_CHANGED, Reverted, revert_file_change};
pub use thread::{RevertError, RevertOutcome, Revertible, revert, revertible};
