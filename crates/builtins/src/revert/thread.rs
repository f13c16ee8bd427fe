//! Reverting what a stored thread's file tools changed (`toolsmith threads revert`): the
//! previous content that `write` and `edit` keep with each call in the journal (their
//! [`FileChange`] artifacts), put back newest first.
//!
//! The contract:
//!
//! - [`revertible`] lists the thread's calls that changed a file and were not reverted yet:
//!   the latest attempt of each call, `succeeded`, with at least one [`FileChange`] artifact in
//!   its recorded output, newest (highest journal sequence) first. A thread held by a live
//!   process ([`Thread::held_within`](toolsmith_store::Thread::held_within) the
//!   [`DEFAULT_LEASE`]) is refused: its run may still be writing.
//! - [`revert`] puts each change back through the confined [`RootDir`] of the root the call
//!   wrote beneath (or the root given), with [`revert_file_change`]'s rules: a file that
//!   changed after the call wrote it is refused unless forced, a kept copy that no longer
//!   matches its digest is never written, a file the call created is removed.
//! - A call all of whose changes are put back (or already were) is recorded in the journal as
//!   `failed` with `EFFECT_REVERTED`: the status of a call whose effect is known not to stand,
//!   as a revert hook leaves it. Its original output is kept inside the new one (`output`), and
//!   a resumed run that meets the call again reports it reverted instead of running it.
//!
//! The file work runs on the calling thread, one file at a time (each at most the policy's
//! byte limit).
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolsmith_agent::Agent;
//! use toolsmith_builtins::revert::{revert, revertible};
//! use toolsmith_core::Message;
//! use toolsmith_providers::{ScriptedModel, Turn};
//! use toolsmith_store::{MemoryStore, Store, StoredRun};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let workspace = toolsmith_builtins::Workspace::new(
//!     toolsmith_sandbox::SandboxPolicy::new(dir.path()),
//! ).unwrap();
//! let model = ScriptedModel::new([
//!     Turn::call("write", json!({"path": "notes.md", "content": "hi"})),
//!     Turn::text("Done."),
//! ]);
//! let agent = Agent::builder(model).tools(toolsmith_builtins::all(&workspace)).build();
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let (run, messages) = StoredRun::start(store.clone(), "t", vec![Message::user("Write")])
//!     .await
//!     .unwrap();
//! agent.run(run.input(messages)).await.unwrap();
//! assert!(dir.path().join("notes.md").exists());
//!
//! let calls = revertible(&*store, "t", None).await.unwrap();
//! let done = revert(&*store, &calls, None, false).await.unwrap();
//! assert_eq!(done[0].path, "notes.md");
//! assert!(!dir.path().join("notes.md").exists());
//! assert!(revertible(&*store, "t", None).await.unwrap().is_empty());
//! # });
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::file::{Reverted, revert_file_change};
use crate::FileChange;
use serde_json::{Value, json};
use toolsmith_agent::EFFECT_REVERTED;
use toolsmith_core::{ToolError, ToolOutput};
use toolsmith_sandbox::RootDir;
use toolsmith_store::{Batch, EffectStatus, JournalEntry, Settlement, Store, StoreError};

use toolsmith_store::DEFAULT_LEASE;

/// Why a thread's changes cannot be listed or reverted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RevertError {
    /// The thread does not exist.
    #[error("thread {0} does not exist")]
    NotFound(String),
    /// A live process holds the thread.
    #[error(
        "thread {thread} is being run by another process (its last sign of life was {since_ms} \
         ms ago); revert once it stops"
    )]
    Held {
        /// The thread.
        thread: String,
        /// Milliseconds since its last sign of life.
        since_ms: u64,
    },
    /// `--call` named a call that changed no file in the thread.
    #[error("thread {thread} has no call {call} that changed a file")]
    NoSuchCall {
        /// The thread.
        thread: String,
        /// The call.
        call: String,
    },
    /// `--call` named a call already reverted.
    #[error("call {call} of thread {thread} was already reverted")]
    AlreadyReverted {
        /// The thread.
        thread: String,
        /// The call.
        call: String,
    },
    /// The root given cannot be opened.
    #[error("cannot open the root {}: {error}", root.display())]
    Root {
        /// The root.
        root: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A call whose file changes can be reverted.
#[derive(Debug, Clone)]
pub struct Revertible {
    /// Its journal entry (the latest attempt, succeeded).
    pub entry: JournalEntry,
    /// The changes it made, in the order it made them.
    pub changes: Vec<FileChange>,
}

/// What became of one file change.
#[derive(Debug)]
pub struct RevertOutcome {
    /// The call's journal sequence number.
    pub seq: u64,
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The file, relative to its root.
    pub path: String,
    /// The root it was put back beneath, if one could be chosen.
    pub root: Option<PathBuf>,
    /// What was done, or why not.
    pub result: Result<Reverted, ToolError>,
}

/// The calls of `thread` (only `call`, if given) whose file changes can be reverted, newest
/// first.
///
/// # Errors
///
/// [`RevertError::NotFound`], [`RevertError::Held`], [`RevertError::NoSuchCall`],
/// [`RevertError::AlreadyReverted`]; store errors.
pub async fn revertible(
    store: &dyn Store,
    thread: &str,
    call: Option<&str>,
) -> Result<Vec<Revertible>, RevertError> {
    let found = store
        .thread(thread)
        .await?
        .ok_or_else(|| RevertError::NotFound(thread.into()))?;
    if let Some(since_ms) = found.held_within(DEFAULT_LEASE) {
        return Err(RevertError::Held {
            thread: thread.into(),
            since_ms,
        });
    }
    // The latest attempt of each call: the journal lists attempts in order.
    let mut latest: HashMap<(String, String), JournalEntry> = HashMap::new();
    for entry in store.journal(thread).await? {
        if call.is_some_and(|c| c != entry.tool_call_id) {
            continue;
        }
        latest.insert((entry.run_id.clone(), entry.tool_call_id.clone()), entry);
    }
    let mut found: Vec<Revertible> = Vec::new();
    let mut reverted = false;
    for entry in latest.into_values() {
        if entry.status == EffectStatus::Failed && is_reverted(&entry) {
            reverted = true;
            continue;
        }
        if entry.status != EffectStatus::Succeeded {
            continue;
        }
        let changes = changes_of(entry.output.as_ref());
        if !changes.is_empty() {
            found.push(Revertible { entry, changes });
        }
    }
    found.sort_by_key(|r| std::cmp::Reverse(r.entry.seq));
    match call {
        Some(call) if found.is_empty() && reverted => Err(RevertError::AlreadyReverted {
            thread: thread.into(),
            call: call.into(),
        }),
        Some(call) if found.is_empty() => Err(RevertError::NoSuchCall {
            thread: thread.into(),
            call: call.into(),
        }),
        _ => Ok(found),
    }
}

/// Reverts `calls` in the order given (as [`revertible`] lists them: newest first) beneath
/// `root`, or each beneath the root it wrote in, forcing over later changes when `force`;
/// records each call that is wholly reverted. One outcome per file change.
///
/// # Errors
///
/// [`RevertError::Root`] when `root` cannot be opened; store errors recording a revert (the
/// files already put back stay so).
pub async fn revert(
    store: &dyn Store,
    calls: &[Revertible],
    root: Option<&Path>,
    force: bool,
) -> Result<Vec<RevertOutcome>, RevertError> {
    let given = match root {
        Some(root) => Some(RootDir::open(root).map_err(|error| RevertError::Root {
            root: root.to_path_buf(),
            error,
        })?),
        None => None,
    };
    let mut roots: HashMap<PathBuf, Result<RootDir, String>> = HashMap::new();
    let mut outcomes = Vec::new();
    for call in calls {
        let mut whole = true;
        let mut done = Vec::new();
        // A call's own changes are undone in reverse too.
        for change in call.changes.iter().rev() {
            let (dir, result) = match (&given, &change.root) {
                (Some(dir), _) => (
                    Some(dir.path().to_path_buf()),
                    revert_file_change(dir, change, force),
                ),
                (None, Some(recorded)) => {
                    let opened = roots
                        .entry(recorded.clone())
                        .or_insert_with(|| RootDir::open(recorded).map_err(|e| e.to_string()));
                    match opened {
                        Ok(dir) => (
                            Some(recorded.clone()),
                            revert_file_change(dir, change, force),
                        ),
                        Err(e) => (
                            Some(recorded.clone()),
                            Err(ToolError::new(
                                "TOOL_IO_ERROR",
                                format!("cannot open the root {}: {e}", recorded.display()),
                            )),
                        ),
                    }
                }
                (None, None) => (
                    None,
                    Err(ToolError::new(
                        "INVALID_INPUT",
                        "the call recorded no root it can be found in; give the root",
                    )),
                ),
            };
            whole &= result.is_ok();
            if let Ok(what) = &result {
                done.push(format!("{} {}", change.path, past_tense(*what)));
            }
            outcomes.push(RevertOutcome {
                seq: call.entry.seq,
                tool_call_id: call.entry.tool_call_id.clone(),
                tool_name: call.entry.tool_name.clone(),
                path: change.path.clone(),
                root: dir,
                result,
            });
        }
        if whole {
            let output = json!({
                "code": EFFECT_REVERTED,
                "message": format!(
                    "This call's effect was reverted by the user (toolsmith threads revert): {}.",
                    done.join(", ")
                ),
                "revertedAt": now_millis(),
                "output": call.entry.output,
            });
            let settled = Settlement {
                entry: &call.entry,
                status: EffectStatus::Failed,
                output: &output,
            };
            store.commit(Batch::new().settle(settled)).await?;
        }
    }
    Ok(outcomes)
}

fn past_tense(what: Reverted) -> &'static str {
    match what {
        Reverted::Restored => "restored",
        Reverted::Removed => "removed",
        Reverted::AlreadyReverted => "already as before",
    }
}

/// Whether a failed entry records a revert.
fn is_reverted(entry: &JournalEntry) -> bool {
    entry
        .output
        .as_ref()
        .and_then(|o| o.get("code"))
        .and_then(Value::as_str)
        == Some(EFFECT_REVERTED)
}

/// The file changes a recorded output carries.
fn changes_of(output: Option<&Value>) -> Vec<FileChange> {
    let Some(output) = output else {
        return Vec::new();
    };
    let Ok(output) = serde_json::from_value::<ToolOutput>(output.clone()) else {
        return Vec::new();
    };
    output
        .artifacts
        .iter()
        .filter_map(FileChange::from_artifact)
        .collect()
}

/// Milliseconds since the Unix epoch.
fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
