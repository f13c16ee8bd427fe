//! Durable runs: a run recorded in a [`Store`] as it goes, so that it survives a crash with no
//! lost result and no side effect run twice (a Smithers-compatible journal).
//!
//! [`StoredRun`] is the [`RunLog`](toolsmith_agent::RunLog) over a store: it claims the thread
//! for the run (so that of two processes continuing one thread exactly one proceeds), and writes
//! each batch of the run's journal as one [`Store::commit`] (`commit.rs`): the thread at the
//! loop's save points, every side-effecting call's intent before it executes and outcome after
//! (`succeeded` / `failed` / `unknown`; a call without side effects is recorded once, with its
//! outcome, in the save of its result) and, for side-effecting tools that are not idempotent,
//! the claim of the call's idempotency key in the ledger. Resuming a thread a crash interrupted goes on under the
//! interrupted run's id: recorded outcomes are reused, idempotent calls run again, and a
//! non-idempotent call that started and never settled is reconciled, reverted, or reported to
//! the model with the Smithers resume warning; it never runs blindly twice.
//!
//! A running thread is held by the process running it ([`Holder`]): another process may take
//! it over once that process is gone (same host: at once) or has shown no sign of life for the
//! lease.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolsmith_agent::Agent;
//! use toolsmith_core::Message;
//! use toolsmith_providers::{ScriptedModel, Turn};
//! use toolsmith_store::{MemoryStore, Store, StoredRun};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let agent = Agent::builder(ScriptedModel::new([Turn::text("Hello!")])).build();
//!
//! let prompt = vec![Message::user("Hi")];
//! let (run, messages) = StoredRun::start(store.clone(), "thread-1", prompt).await.unwrap();
//! let input = run.input(messages);
//! let out = agent.run(input).await.unwrap();
//! assert_eq!(out.text, "Hello!");
//! assert_eq!(store.messages("thread-1").await.unwrap().len(), 2);
//! # });
//! ```

mod commit;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use toolsmith_agent::{RunInput, RunLogError, RunState};
use toolsmith_core::{Message, Variables};

use crate::{
    Batch, EventEnd, Holder, JournalEntry, NewThread, SecretKey, Store, StoreError, Thread,
    ThreadStatus, ThreadWrite, Vault,
};

/// How long a running thread stays held by its process without a sign of life, by default.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// Why a stored run cannot start or resume.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// A new run on a thread whose last run did not end: resume it instead.
    #[error(
        "thread {thread} has an unfinished run ({status}): continue it with --resume, or start \
         another thread"
    )]
    Unfinished {
        /// The thread.
        thread: String,
        /// Its status: `running` (interrupted) or `paused`.
        status: &'static str,
    },
    /// Resuming a thread that has nothing to resume.
    #[error("thread {thread} has no run to resume: its last run finished")]
    NothingToResume {
        /// The thread.
        thread: String,
    },
    /// Resuming a thread that does not exist.
    #[error("thread {0} does not exist")]
    NotFound(String),
    /// Another process claimed the thread between reading and claiming it.
    #[error("thread {0} is being continued by another process")]
    Busy(String),
    /// The thread's run is held by a process that showed a sign of life within the lease, and
    /// is not known to be gone (another host's, or one still running on this host).
    #[error(
        "thread {thread} is being continued by another process (its last sign of life was \
         {since_ms} ms ago); if that process is gone, resume again once {lease_ms} ms have passed"
    )]
    Held {
        /// The thread.
        thread: String,
        /// Milliseconds since the holder's last write or heartbeat.
        since_ms: u64,
        /// The lease.
        lease_ms: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A run recorded in a store: the [`RunLog`](toolsmith_agent::RunLog) of one thread.
pub struct StoredRun {
    store: Arc<dyn Store>,
    lease: Duration,
    thread: String,
    run_id: String,
    /// The thread's version and message count as this run last wrote them.
    written: Mutex<(u64, u64)>,
    /// The latest journal entry of each of this run's calls.
    calls: Mutex<HashMap<String, JournalEntry>>,
    /// The calls whose latest entry is not in the store yet: calls without side effects,
    /// recorded once they end.
    unwritten: Mutex<HashSet<String>>,
    next_seq: AtomicU64,
    /// The event the save that ends the run settles ([`StoredRun::with_event_end`]).
    event_end: Option<EventEnding>,
}

/// Given where a run ends (finished, paused or failed) and the messages its last save adds,
/// the event to settle in that save's commit, if any.
pub type EventEnding = Arc<dyn Fn(RunState<'_>, &[Message]) -> Option<EventEnd> + Send + Sync>;

impl std::fmt::Debug for StoredRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredRun")
            .field("thread", &self.thread)
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl StoredRun {
    /// Starts a new run on `thread` (created if it does not exist) with `prompt` (the new
    /// messages, usually one user message): stores them, claims the thread, and returns the run
    /// and the whole thread. The prompt is stored before the run is claimed, so a crash at any
    /// point leaves a thread that `resume` continues.
    ///
    /// # Errors
    ///
    /// [`DurableError::Unfinished`] when the thread's last run was interrupted or paused;
    /// [`DurableError::Busy`] when another process claimed it first; store errors.
    pub async fn start(
        store: Arc<dyn Store>,
        thread: &str,
        prompt: Vec<Message>,
    ) -> Result<(StoredRun, Vec<Message>), DurableError> {
        let found = match store.thread(thread).await? {
            Some(found) => found,
            None => match store.create_thread(NewThread::new(thread)).await {
                Ok(created) => created,
                Err(StoreError::Exists(_)) => return Err(DurableError::Busy(thread.into())),
                Err(e) => return Err(e.into()),
            },
        };
        if matches!(found.status, ThreadStatus::Running | ThreadStatus::Paused) {
            return Err(DurableError::Unfinished {
                thread: thread.into(),
                status: found.status.as_str(),
            });
        }
        let write = ThreadWrite::new(
            thread,
            found.version,
            found.message_count,
            &prompt,
            ThreadStatus::Running,
        );
        let version = match store.commit(Batch::new().write(write)).await {
            Ok(committed) => committed.version.unwrap_or(found.version),
            Err(StoreError::Conflict { thread, .. }) => return Err(DurableError::Busy(thread)),
            Err(e) => return Err(e.into()),
        };
        let found = Thread { version, ..found };
        let run_id = uuid::Uuid::new_v4().to_string();
        Self::claim(store, found, run_id).await
    }

    /// The run `run_id` of a thread its caller has just started for it, at `version`, holding
    /// `prompt` alone: with [`Store::start_thread`], or a call that does the same and more in
    /// its transaction (the harness service records the request's event with it:
    /// `ServiceStore::start_event`).
    pub fn started(
        store: Arc<dyn Store>,
        thread: String,
        run_id: String,
        version: u64,
        prompt: Vec<Message>,
    ) -> (StoredRun, Vec<Message>) {
        let written = (version, prompt.len() as u64);
        let run = StoredRun::claimed(store, thread, run_id, written, HashMap::new(), 0);
        (run, prompt)
    }

    /// Resumes the thread's run that did not end (a crash, a pause, a failure): claims the
    /// thread under the run's own id and returns the run and the stored messages.
    ///
    /// A running thread is held by the process running it ([`Holder`]) while that process
    /// shows signs of life (its writes, and a heartbeat every third of the lease). It is taken
    /// over at once when its holder is known to be gone (a process of this host that no longer
    /// runs: killed, crashed), and otherwise only once `lease` has passed without a sign of life.
    ///
    /// # Errors
    ///
    /// [`DurableError::NotFound`]; [`DurableError::NothingToResume`] when the last run
    /// finished; [`DurableError::Held`] when a live process holds it; [`DurableError::Busy`]
    /// when another process claimed it first; store errors.
    pub async fn resume(
        store: Arc<dyn Store>,
        thread: &str,
        lease: Duration,
    ) -> Result<(StoredRun, Vec<Message>), DurableError> {
        let found = store
            .thread(thread)
            .await?
            .ok_or_else(|| DurableError::NotFound(thread.into()))?;
        if found.status == ThreadStatus::Idle {
            return Err(DurableError::NothingToResume {
                thread: thread.into(),
            });
        }
        if let Some(since_ms) = found.held_within(lease) {
            return Err(DurableError::Held {
                thread: thread.into(),
                since_ms,
                lease_ms: lease.as_millis() as u64,
            });
        }
        // The same run id: the idempotency keys of its calls stay the same.
        let run_id = found
            .run_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let (mut run, messages) = Self::claim(store, found, run_id).await?;
        run.lease = lease;
        Ok((run, messages))
    }

    async fn claim(
        store: Arc<dyn Store>,
        found: Thread,
        run_id: String,
    ) -> Result<(StoredRun, Vec<Message>), DurableError> {
        let claimed = store
            .claim(&found.id, found.version, &run_id, &Holder::current())
            .await;
        let version = match claimed {
            Ok(version) => version,
            Err(StoreError::Conflict { thread, .. }) => return Err(DurableError::Busy(thread)),
            Err(e) => return Err(e.into()),
        };
        // Read after the claim: no other process writes the thread now.
        let messages = store.messages(&found.id).await?;
        let journal = store.journal(&found.id).await?;
        let next_seq = journal.iter().map(|e| e.seq + 1).max().unwrap_or(0);
        let mut calls = HashMap::new();
        for entry in journal.into_iter().filter(|e| e.run_id == run_id) {
            // In call order, then by attempt: the last one of a call is its latest.
            calls.insert(entry.tool_call_id.clone(), entry);
        }
        let written = (version, messages.len() as u64);
        let run = StoredRun::claimed(store, found.id, run_id, written, calls, next_seq);
        Ok((run, messages))
    }

    /// The run `run_id` that has just claimed `thread`, which it wrote at `written` (version,
    /// message count); `calls` are its journal's latest entries by call, `next_seq` the place
    /// of its next call.
    fn claimed(
        store: Arc<dyn Store>,
        thread: String,
        run_id: String,
        written: (u64, u64),
        calls: HashMap<String, JournalEntry>,
        next_seq: u64,
    ) -> StoredRun {
        StoredRun {
            store,
            lease: DEFAULT_LEASE,
            thread,
            run_id,
            written: Mutex::new(written),
            calls: Mutex::new(calls),
            unwritten: Mutex::default(),
            next_seq: AtomicU64::new(next_seq),
            event_end: None,
        }
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread
    }

    /// The run's id: a resumed run keeps the id of the run it continues.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Sets how long the thread stays held without a sign of life (default
    /// [`DEFAULT_LEASE`]); the heartbeat comes every third of it.
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Settles an event ([`ServiceStore`](crate::ServiceStore)'s) in the commit of the save that
    /// ends the run: `ending` is asked, at that save, for the event's new status and detail
    /// ([`Op::SettleEvent`](crate::Op::SettleEvent)); `None` writes nothing more. The run's end
    /// and its event's are then one commit: one fewer, and never one without the other. A
    /// commit that fails (no such event among them) fails the run, as any failed save does.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolsmith_agent::{Agent, RunState};
    /// use toolsmith_core::Message;
    /// use toolsmith_providers::{ScriptedModel, Turn};
    /// use toolsmith_store::{
    ///     EventEnd, EventRecord, EventStatus, Holder, MemoryStore, NewThread, ServiceStore,
    ///     StoredRun,
    /// };
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let store = Arc::new(MemoryStore::new());
    /// let event = EventRecord {
    ///     account: "acme".into(),
    ///     agent_id: "helper".into(),
    ///     event_id: "ev-1".into(),
    ///     conversation_key: "c-1".into(),
    ///     thread_id: "t-1".into(),
    ///     status: EventStatus::Processing,
    ///     detail: json!({}),
    ///     created_at: 0,
    ///     updated_at: 0,
    ///     expires_at: u64::MAX,
    /// };
    /// let prompt = vec![Message::user("Hi")];
    /// let holder = Holder::current();
    /// let new = NewThread::new("t-1");
    /// let version = store.start_event(&event, new, &prompt, "run-1", &holder).await.unwrap();
    /// let (run, messages) =
    ///     StoredRun::started(store.clone(), "t-1".into(), "run-1".into(), version.unwrap(), prompt);
    /// let run = run.with_event_end(Arc::new(|state: RunState<'_>, tail: &[Message]| {
    ///     (state == RunState::Finished).then(|| EventEnd {
    ///         account: "acme".into(),
    ///         agent_id: "helper".into(),
    ///         event_id: "ev-1".into(),
    ///         status: EventStatus::Completed,
    ///         detail: json!({"text": tail.last().map(Message::text)}),
    ///     })
    /// }));
    /// let agent = Agent::builder(ScriptedModel::new([Turn::text("Hello!")])).build();
    /// agent.run(run.input(messages)).await.unwrap();
    /// let settled = store.event("acme", "helper", "ev-1").await.unwrap().unwrap();
    /// assert_eq!(settled.status, EventStatus::Completed);
    /// assert_eq!(settled.detail, json!({"text": "Hello!"}));
    /// # });
    /// ```
    pub fn with_event_end(mut self, ending: EventEnding) -> Self {
        self.event_end = Some(ending);
        self
    }

    /// The input of a run over `messages` recorded by this log (run id, thread id, log set).
    /// Until the run ends, a heartbeat tells other processes that the thread is held.
    pub fn input(self, messages: Vec<Message>) -> RunInput {
        let run_id = self.run_id.clone();
        let thread = self.thread.clone();
        let run = Arc::new(self);
        // Outside a Tokio runtime there is no heartbeat: the run's writes are its only signs
        // of life.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(heartbeat(Arc::downgrade(&run)));
        }
        RunInput::new(messages)
            .with_run_id(run_id)
            .with_thread_id(thread)
            .with_log(run)
    }

    fn latest(&self, call: &str) -> Option<JournalEntry> {
        lock(&self.calls).get(call).cloned()
    }

    fn remember(&self, entry: JournalEntry) {
        lock(&self.calls).insert(entry.tool_call_id.clone(), entry);
    }

    /// The place in the thread's journal of this run's next call.
    fn next_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::SeqCst)
    }
}

/// `mutex`'s guard, poisoned or not: a panic while holding the lock leaves the data itself
/// intact.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The thread's stored variables, secrets opened with `key`: put them in the run's input
/// ([`RunInput::variables`]), where a thread's own values win over the agent's (as in the Standard
/// Agents spec).
///
/// # Errors
///
/// The store's; a secret sealed with another key.
pub async fn thread_variables(
    store: &dyn Store,
    thread: &str,
    key: &SecretKey,
) -> Result<HashMap<String, String>, StoreError> {
    let stored = Vault::new(store, key.clone()).get(thread).await?;
    Ok(stored
        .into_iter()
        .map(|(name, value, _)| (name, value))
        .collect())
}

/// Keeps with the thread the variables a run set (`RunOutput::variables_set`, the Standard Agents
/// spec's `setEnv`), secrets sealed with `key`: the database holds only their ciphertext.
///
/// # Errors
///
/// The store's.
pub async fn keep_variables(
    store: &dyn Store,
    thread: &str,
    key: &SecretKey,
    set: &Variables,
) -> Result<(), StoreError> {
    let vault = Vault::new(store, key.clone());
    for (name, value) in set.iter() {
        vault.put(thread, name, value, set.is_secret(name)).await?;
    }
    Ok(())
}

/// Touches the thread every third of the lease while the run lives (the loop holds the log
/// until the run ends). A failed touch is not an error here: a run that lost its thread fails
/// at its next write.
async fn heartbeat(run: Weak<StoredRun>) {
    loop {
        let Some(every) = run.upgrade().map(|r| r.lease / 3) else {
            return;
        };
        tokio::time::sleep(every.max(Duration::from_millis(10))).await;
        let Some(run) = run.upgrade() else { return };
        let (version, _) = *run.written.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = run.store.touch(&run.thread, version).await {
            tracing::debug!(thread = %run.thread, error = %e, "heartbeat");
        }
    }
}

/// A store error as the loop reports it; a conflict means another process took the thread.
fn failed(e: StoreError) -> RunLogError {
    match e {
        StoreError::Conflict { thread, .. } => RunLogError::new(format!(
            "thread {thread} was claimed by another process; this run stops"
        )),
        other => RunLogError::new(other.to_string()),
    }
}
