//! Durable runs: a run recorded in a [`Store`] as it goes, so that it survives a crash with no
//! lost result and no side effect run twice (DESIGN.md §5, seed 001's journal).
//!
//! [`StoredRun`] is the [`RunLog`] over a store: it claims the thread for the run (so that of
//! two processes continuing one thread exactly one proceeds), saves the thread at the loop's
//! save points, journals every call (`intended` before it executes, `succeeded` / `failed` /
//! `unknown` after) and, for side-effecting tools that are not idempotent, claims the call's
//! idempotency key in the ledger before it executes. Resuming a thread a crash interrupted
//! goes on under the interrupted run's id: recorded outcomes are reused, idempotent calls run
//! again, and a non-idempotent call that started and never settled is reconciled, reverted, or
//! reported to the model with seed 001's resume warning; it never runs blindly twice.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolsmith::durable::StoredRun;
//! use toolsmith::prelude::*;
//! use toolsmith::providers::{ScriptedModel, Turn};
//! use toolsmith::store::{MemoryStore, Store};
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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_agent::{
    CallOutcome, EFFECT_UNKNOWN, Intent, LoggedCall, RunInput, RunLog, RunLogError, RunState,
    Settled,
};
use toolsmith_core::{Message, Pause, ToolError, ToolOutput, Variables, async_trait};
use toolsmith_store::{
    Batch, Claim, Committed, EffectStatus, Holder, JournalEntry, NewThread, Op, SecretKey,
    Settlement, Store, StoreError, Thread, ThreadStatus, ThreadWrite, Vault,
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
    /// The thread's run is held by a process that showed a sign of life within the lease and
    /// is not known to be gone (it runs on another host, or is still running).
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

/// A run recorded in a store: the [`RunLog`] of one thread.
pub struct StoredRun {
    store: Arc<dyn Store>,
    lease: Duration,
    thread: String,
    run_id: String,
    /// The thread's version and message count as this run last wrote them.
    written: Mutex<(u64, u64)>,
    /// The latest journal entry of each of this run's calls.
    calls: Mutex<HashMap<String, JournalEntry>>,
    next_seq: AtomicU64,
    /// Outcomes to write with the next save ([`RunLog::settle_before_save`]).
    unsaved: Mutex<Vec<JournalEntry>>,
    /// A save to write with the next intent ([`RunLog::save_before_calls`]).
    deferred: Mutex<Option<DeferredSave>>,
}

/// A save the loop made right before a step's calls, to write with the first call's intent.
struct DeferredSave {
    keep: u64,
    tail: Vec<Message>,
    status: ThreadStatus,
    pending: Vec<Pause>,
    /// The thread's length once written.
    total: u64,
}

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
            Ok(committed) => written(&committed)?,
            Err(StoreError::Conflict { thread, .. }) => return Err(DurableError::Busy(thread)),
            Err(e) => return Err(e.into()),
        };
        let found = Thread { version, ..found };
        let run_id = uuid::Uuid::new_v4().to_string();
        Self::claim(store, found, run_id).await
    }

    /// Resumes the thread's run that did not end (a crash, a pause, a failure): claims the
    /// thread under the run's own id and returns the run and the stored messages.
    ///
    /// A running thread is held by the process running it while that process shows signs of
    /// life (its writes, and a heartbeat every third of the lease); it can be taken over once
    /// `lease` has passed without one, the sign of a crash. A holder known to be gone (it ran
    /// on this host and has exited, [`Holder::is_gone`]: killed with `SIGKILL`, crashed) is
    /// taken over at once.
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
        let since_ms = now_millis().saturating_sub(found.updated_at);
        let gone = found.holder.as_ref().is_some_and(Holder::is_gone);
        if found.status == ThreadStatus::Running && !gone && since_ms < lease.as_millis() as u64 {
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
        let holder = Holder::current();
        let version = match store
            .claim(&found.id, found.version, &run_id, &holder)
            .await
        {
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
        let run = StoredRun {
            store,
            lease: DEFAULT_LEASE,
            thread: found.id,
            run_id,
            written: Mutex::new((version, messages.len() as u64)),
            calls: Mutex::new(calls),
            next_seq: AtomicU64::new(next_seq),
            unsaved: Mutex::new(Vec::new()),
            deferred: Mutex::new(None),
        };
        Ok((run, messages))
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
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(call)
            .cloned()
    }

    fn remember(&self, entry: JournalEntry) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(entry.tool_call_id.clone(), entry);
    }

    /// Records a new attempt of `call` as intended.
    async fn intend_attempt(
        &self,
        call: &LoggedCall<'_>,
        attempt: u32,
        seq: u64,
    ) -> Result<(JournalEntry, Claim), RunLogError> {
        let entry = self.new_entry(call, attempt, seq);
        // With the key's claim, when the call is unsafe to repeat: one transaction.
        let committed = self.store.commit(Batch::new().intend(&entry)).await;
        let claim = committed.and_then(the_claim).map_err(failed)?;
        self.remember(entry.clone());
        Ok((entry, claim))
    }

    /// The journal entry of a new attempt of `call`, intended.
    fn new_entry(&self, call: &LoggedCall<'_>, attempt: u32, seq: u64) -> JournalEntry {
        JournalEntry {
            thread_id: self.thread.clone(),
            run_id: self.run_id.clone(),
            tool_call_id: call.tool_call_id.to_string(),
            tool_name: call.tool_name.to_string(),
            seq,
            attempt,
            input: call.input.clone(),
            side_effect: call.side_effect,
            idempotent: call.idempotent,
            idempotency_key: Some(call.idempotency_key.to_string()),
            accepts_idempotency_key: call.accepts_idempotency_key,
            has_revert: call.has_revert,
            status: EffectStatus::Intended,
            output: None,
        }
    }

    /// For a call unsafe to repeat whose intent was recorded by an attempt a crash
    /// interrupted: claims its key, and decides from what the ledger knows.
    async fn claim_key(
        &self,
        call: &LoggedCall<'_>,
        entry: JournalEntry,
    ) -> Result<Intent, RunLogError> {
        let batch = Batch::new().claim_key(call.idempotency_key, &self.thread);
        let claim = self
            .store
            .commit(batch)
            .await
            .and_then(the_claim)
            .map_err(failed)?;
        self.decide(entry, claim).await
    }

    /// What a claim of the call's key decides.
    async fn decide(&self, entry: JournalEntry, claim: Claim) -> Result<Intent, RunLogError> {
        match claim {
            Claim::New => Ok(Intent::Execute),
            Claim::Existing {
                status:
                    status @ (EffectStatus::Succeeded | EffectStatus::Failed | EffectStatus::Unknown),
                output: Some(output),
            } => {
                // Settled under this key, but not in this journal entry (a crash between the
                // two writes): the journal catches up, the call does not run again.
                self.settle_entry(entry, status, &output).await?;
                Ok(Intent::Recorded(Box::new(outcome_of(status, &output))))
            }
            Claim::Existing { .. } => Ok(Intent::Unsettled {
                attempt: entry.attempt,
                seq: entry.seq,
            }),
        }
    }

    async fn settle_entry(
        &self,
        mut entry: JournalEntry,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), RunLogError> {
        // The key holds this outcome already: settling it again with it changes nothing.
        let settled = Settlement {
            entry: &entry,
            status,
            output,
        };
        self.store
            .commit(Batch::new().settle(settled))
            .await
            .map_err(failed)?;
        entry.status = status;
        entry.output = Some(output.clone());
        self.remember(entry);
        Ok(())
    }
}

#[async_trait]
impl RunLog for StoredRun {
    async fn save(
        &self,
        messages: &[Message],
        unchanged: usize,
        state: RunState<'_>,
    ) -> Result<(), RunLogError> {
        // A save not yet written is superseded: this one starts no later than it did.
        lock(&self.deferred).take();
        let (version, count) = *lock(&self.written);
        let keep = (unchanged as u64).min(count);
        let (status, pending) = thread_state(state);
        let write = ThreadWrite {
            thread: &self.thread,
            expected: version,
            keep,
            messages: &messages[keep as usize..],
            status,
            pending,
        };
        let unsaved = std::mem::take(&mut *lock(&self.unsaved));
        // The outcomes of the calls just ended, with the messages that carry them.
        let mut batch = Batch::new();
        batch.extend(unsaved.iter().map(|entry| Op::Settle(settlement(entry))));
        let committed = self.store.commit(batch.write(write)).await;
        let next = committed.and_then(|c| written(&c)).map_err(failed)?;
        for entry in unsaved {
            self.remember(entry);
        }
        *lock(&self.written) = (next, messages.len() as u64);
        Ok(())
    }

    async fn save_before_calls(
        &self,
        messages: &[Message],
        unchanged: usize,
        state: RunState<'_>,
    ) -> Result<(), RunLogError> {
        self.flush().await?;
        let (_, count) = *lock(&self.written);
        let keep = (unchanged as u64).min(count);
        let (status, pending) = thread_state(state);
        *lock(&self.deferred) = Some(DeferredSave {
            keep,
            tail: messages[keep as usize..].to_vec(),
            status,
            pending: pending.to_vec(),
            total: messages.len() as u64,
        });
        Ok(())
    }

    async fn intend(&self, call: &LoggedCall<'_>) -> Result<Intent, RunLogError> {
        let new_call = self.latest(call.tool_call_id).is_none();
        let deferred = lock(&self.deferred).take_if(|_| new_call);
        if let Some(save) = deferred {
            // The step's save and its first call's intent: one transaction.
            self.flush().await?;
            let seq = self.next_seq.fetch_add(1, Ordering::SeqCst);
            let entry = self.new_entry(call, 1, seq);
            let (version, _) = *lock(&self.written);
            let batch = Batch::new()
                .write(save.write(&self.thread, version))
                .intend(&entry);
            let committed = self.store.commit(batch).await;
            let (next, claim) = committed
                .and_then(|c| Ok((written(&c)?, the_claim(c)?)))
                .map_err(failed)?;
            *lock(&self.written) = (next, save.total);
            self.remember(entry.clone());
            return self.decide(entry, claim).await;
        }
        self.flush().await?;
        let Some(latest) = self.latest(call.tool_call_id) else {
            let seq = self.next_seq.fetch_add(1, Ordering::SeqCst);
            let (entry, claim) = self.intend_attempt(call, 1, seq).await?;
            return self.decide(entry, claim).await;
        };
        if latest.tool_name != call.tool_name || latest.input != *call.input {
            return Err(RunLogError::new(format!(
                "tool call id {} of run {} was used before for another call ({}); the journal \
                 cannot tell the two apart",
                call.tool_call_id, self.run_id, latest.tool_name
            )));
        }
        match latest.status {
            EffectStatus::Succeeded | EffectStatus::Failed | EffectStatus::Unknown => {
                let output = latest.output.unwrap_or(Value::Null);
                Ok(Intent::Recorded(Box::new(outcome_of(
                    latest.status,
                    &output,
                ))))
            }
            // Started, never settled: the process died during the call.
            EffectStatus::Intended if call.unsafe_to_repeat() => self.claim_key(call, latest).await,
            EffectStatus::Intended => {
                self.intend_attempt(call, latest.attempt + 1, latest.seq)
                    .await?;
                Ok(Intent::Execute)
            }
        }
    }

    async fn settle(&self, call: &LoggedCall<'_>, settled: Settled<'_>) -> Result<(), RunLogError> {
        self.flush().await?;
        let entry = self.settled_entry(call, settled)?;
        // The journal entry and, for a call unsafe to repeat, its key: one transaction.
        let output = entry.output.as_ref().unwrap_or(&Value::Null);
        let settled = Settlement {
            entry: &entry,
            status: entry.status,
            output,
        };
        self.store
            .commit(Batch::new().settle(settled))
            .await
            .map_err(failed)?;
        self.remember(entry);
        Ok(())
    }

    async fn settle_before_save(
        &self,
        call: &LoggedCall<'_>,
        settled: Settled<'_>,
    ) -> Result<(), RunLogError> {
        let entry = self.settled_entry(call, settled)?;
        lock(&self.unsaved).push(entry);
        Ok(())
    }
}

impl StoredRun {
    /// Writes what waits to be written with something else, should anything else come
    /// first: a deferred save (normally written with the next intent), outcomes (normally
    /// written with the next save).
    async fn flush(&self) -> Result<(), RunLogError> {
        let deferred = lock(&self.deferred).take();
        if let Some(save) = deferred {
            let (version, _) = *lock(&self.written);
            let batch = Batch::new().write(save.write(&self.thread, version));
            let committed = self.store.commit(batch).await;
            let next = committed.and_then(|c| written(&c)).map_err(failed)?;
            *lock(&self.written) = (next, save.total);
        }
        let unsaved = std::mem::take(&mut *lock(&self.unsaved));
        for entry in unsaved {
            self.store
                .commit(Batch::new().settle(settlement(&entry)))
                .await
                .map_err(failed)?;
            self.remember(entry);
        }
        Ok(())
    }

    /// The journal entry of `call`, as it stands once settled.
    fn settled_entry(
        &self,
        call: &LoggedCall<'_>,
        settled: Settled<'_>,
    ) -> Result<JournalEntry, RunLogError> {
        let (status, output) = match settled {
            Settled::Succeeded(output) => (
                EffectStatus::Succeeded,
                serde_json::to_value(output).map_err(|e| RunLogError::new(e.to_string()))?,
            ),
            Settled::Failed(e) => (EffectStatus::Failed, error_json(e)),
            Settled::Unknown(e) => (EffectStatus::Unknown, error_json(e)),
        };
        let mut entry = self.latest(call.tool_call_id).ok_or_else(|| {
            RunLogError::new(format!(
                "call {} was settled without being intended",
                call.tool_call_id
            ))
        })?;
        entry.status = status;
        entry.output = Some(output);
        Ok(entry)
    }
}

impl DeferredSave {
    fn write<'a>(&'a self, thread: &'a str, expected: u64) -> ThreadWrite<'a> {
        ThreadWrite {
            thread,
            expected,
            keep: self.keep,
            messages: &self.tail,
            status: self.status,
            pending: &self.pending,
        }
    }
}

/// The thread's status, and what it waits for, where the run stands.
fn thread_state<'a>(state: RunState<'a>) -> (ThreadStatus, &'a [Pause]) {
    match state {
        RunState::Running => (ThreadStatus::Running, &[]),
        RunState::Paused(pending) => (ThreadStatus::Paused, pending),
        RunState::Finished => (ThreadStatus::Idle, &[]),
        RunState::Failed => (ThreadStatus::Failed, &[]),
    }
}

/// A settled journal entry as the store takes it.
fn settlement(entry: &JournalEntry) -> Settlement<'_> {
    static NULL: Value = Value::Null;
    Settlement {
        entry,
        status: entry.status,
        output: entry.output.as_ref().unwrap_or(&NULL),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves the data itself intact.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The thread's stored variables, secrets opened with `key`: put them in the run's input
/// ([`RunInput::variables`]), where a thread's own values win over the agent's (seed 004).
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

/// Keeps with the thread the variables a run set (`RunOutput::variables_set`, seed 004's
/// `setEnv`), secrets sealed with `key`: the database holds only their ciphertext.
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

/// Milliseconds since the Unix epoch.
fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The thread's version after a committed batch's write.
fn written(committed: &Committed) -> Result<u64, StoreError> {
    committed
        .version
        .ok_or_else(|| StoreError::Backend("the store committed a write without a version".into()))
}

/// The claim of a committed batch's one intent or key's claim.
fn the_claim(committed: Committed) -> Result<Claim, StoreError> {
    committed
        .claims
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::Backend("the store committed an intent without a claim".into()))
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

/// How the journal keeps an error: what the model saw of it.
fn error_json(e: &ToolError) -> Value {
    json!({"code": e.code(), "message": e.message()})
}

/// The outcome a settled journal entry (or ledger key) recorded.
fn outcome_of(status: EffectStatus, output: &Value) -> CallOutcome {
    if status == EffectStatus::Succeeded
        && let Ok(output) = serde_json::from_value::<ToolOutput>(output.clone())
    {
        return CallOutcome::Output(output);
    }
    let text = |key: &str| output.get(key).and_then(Value::as_str).map(str::to_string);
    let code = text("code").unwrap_or_else(|| EFFECT_UNKNOWN.to_string());
    let message = text("message").unwrap_or_else(|| {
        "The outcome of this call was recorded in a form this version cannot read.".to_string()
    });
    CallOutcome::Error(ToolError::new(code, message))
}
