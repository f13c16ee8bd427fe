//! Threads as the store keeps them.

use serde::{Deserialize, Serialize};
use toolsmith_core::{Message, Pause};

use crate::Holder;

/// A stored thread: its identity and links, and where its run stands. The messages are read
/// separately ([`Store::messages`](crate::Store::messages)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// The thread's id.
    pub id: String,
    /// The thread it was started from (a sub-agent's parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Tags (`name:<value>` for a named sub-agent instance).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Bumped by every write: writes name the version they expect, so that two writers cannot
    /// both continue a thread.
    pub version: u64,
    /// How many messages it holds.
    pub message_count: u64,
    /// Where its run stands.
    pub status: ThreadStatus,
    /// The run that last claimed the thread ([`Store::claim`](crate::Store::claim)): resuming
    /// an interrupted run goes on under its id, so that its idempotency keys stay the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The process that holds the running thread: the one that claimed it
    /// ([`Store::claim`](crate::Store::claim)). Cleared when the thread stops running, and
    /// when its run hands it back ([`Op::Release`](crate::Op::Release)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<Holder>,
    /// What a paused thread waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<Pause>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Milliseconds since the Unix epoch, of the last write.
    pub updated_at: u64,
}

impl Thread {
    /// Whether a live process holds the thread's run, and if so how many milliseconds ago it
    /// last showed a sign of life: the thread is running, it has a holder (a run handed back
    /// has none: [`Op::Release`](crate::Op::Release)), that holder is not known to be gone
    /// ([`Holder::is_gone`]: a process of this host that no longer runs), and its last write or
    /// heartbeat is younger than `lease`. Such a thread must not be taken over or changed.
    pub fn held_within(&self, lease: std::time::Duration) -> Option<u64> {
        let since_ms = crate::store::now_millis().saturating_sub(self.updated_at);
        let running = self.status == ThreadStatus::Running;
        let held = self.holder.as_ref().is_some_and(|h| !h.is_gone());
        (running && held && since_ms < lease.as_millis() as u64).then_some(since_ms)
    }
}

/// A write of a thread's tail ([`Op::Write`](crate::Op::Write)).
#[derive(Debug, Clone, Copy)]
pub struct ThreadWrite<'a> {
    /// The thread.
    pub thread: &'a str,
    /// The version the write expects.
    pub expected: u64,
    /// How many messages stay as they are.
    pub keep: u64,
    /// The messages after those.
    pub messages: &'a [Message],
    /// Where the thread's run stands.
    pub status: ThreadStatus,
    /// What a paused thread waits for.
    pub pending: &'a [Pause],
}

impl<'a> ThreadWrite<'a> {
    /// A write of `thread` at version `expected`: keeps its first `keep` messages, then
    /// `messages`, and sets `status`, with nothing pending.
    pub fn new(
        thread: &'a str,
        expected: u64,
        keep: u64,
        messages: &'a [Message],
        status: ThreadStatus,
    ) -> Self {
        ThreadWrite {
            thread,
            expected,
            keep,
            messages,
            status,
            pending: &[],
        }
    }

    /// With `pending`, what the thread waits for.
    pub fn with_pending(self, pending: &'a [Pause]) -> Self {
        ThreadWrite { pending, ..self }
    }
}

/// Where a thread's run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreadStatus {
    /// Created, nothing run yet, or a run finished and the thread may take another message.
    #[default]
    Idle,
    /// A run is going on (or crashed while it did: `--resume` continues it).
    Running,
    /// The run waits for answers (approvals, client results).
    Paused,
    /// The last run failed.
    Failed,
}

impl ThreadStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::Running => "running",
            ThreadStatus::Paused => "paused",
            ThreadStatus::Failed => "failed",
        }
    }

    /// The status a stored name names.
    pub fn parse(name: &str) -> Option<ThreadStatus> {
        [
            ThreadStatus::Idle,
            ThreadStatus::Running,
            ThreadStatus::Paused,
            ThreadStatus::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// A thread to create.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewThread {
    /// Its id.
    pub id: String,
    /// The thread it starts from.
    pub parent_id: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
}

impl NewThread {
    /// A thread with this id, no parent and no tags.
    pub fn new(id: impl Into<String>) -> Self {
        NewThread {
            id: id.into(),
            ..Default::default()
        }
    }

    /// Sets the parent thread.
    pub fn with_parent(mut self, parent: impl Into<String>) -> Self {
        self.parent_id = Some(parent.into());
        self
    }

    /// Adds a tag.
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }
}

/// Which threads [`Store::threads`](crate::Store::threads) lists: all by default, newest
/// first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadQuery {
    /// Only the children of this thread.
    pub parent_id: Option<String>,
    /// Only threads with this tag.
    pub tag: Option<String>,
    /// Only threads in this state.
    pub status: Option<ThreadStatus>,
    /// At most this many.
    pub limit: Option<usize>,
}
