//! [`MemoryStore`]: the in-memory backend, for tests and the library default.

mod cache;
mod service;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;
use toolsmith_core::Message;

use crate::store::now_millis;
use crate::{
    Batch, Claim, Committed, EffectStatus, EventEnd, Holder, JournalEntry, NewThread, Op,
    Settlement, Store, StoreError, StoredValue, Thread, ThreadQuery, ThreadStatus, ThreadWrite,
};

/// A store in memory: everything is lost with the process. One lock guards it all, so every
/// operation is atomic.
///
/// ```
/// use toolsmith_store::{Batch, MemoryStore, NewThread, Store, ThreadStatus, ThreadWrite};
/// use toolsmith_core::Message;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// store.create_thread(NewThread::new("t1")).await.unwrap();
/// let hi = [Message::user("hi")];
/// let write = ThreadWrite::new("t1", 0, 0, &hi, ThreadStatus::Idle);
/// let committed = store.commit(Batch::new().write(write)).await.unwrap();
/// assert_eq!(committed.version, Some(1));
/// assert_eq!(store.messages("t1").await.unwrap(), hi);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
    /// What [`ServiceStore`](crate::ServiceStore) keeps.
    service: Mutex<service::ServiceState>,
    /// Its subscribers' wake-ups.
    wakes: crate::wake::Wakes,
    /// What [`CacheStore`](crate::CacheStore) keeps.
    cache: Mutex<cache::Entries>,
}

#[derive(Debug, Default)]
struct State {
    threads: HashMap<String, (Thread, Vec<Message>)>,
    /// Each thread's journal, in the order entries were recorded (a map: a commit looks only at
    /// its own thread's entries, however many other runs the store holds).
    journal: HashMap<String, Vec<JournalEntry>>,
    ledger: HashMap<String, (EffectStatus, Option<Value>)>,
    variables: HashMap<String, std::collections::BTreeMap<String, StoredValue>>,
    credentials: HashMap<String, std::collections::BTreeMap<String, Vec<u8>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves the maps themselves intact.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What an operation of a batch changed, to put back when a later one fails.
#[derive(Debug)]
enum Undo {
    /// A thread's record as it was, and its messages from `keep` on.
    Thread {
        record: Thread,
        keep: usize,
        removed: Vec<Message>,
    },
    /// A thread's journal's length before an entry was added.
    Appended(String, usize),
    /// A journal entry as it was (its thread's, at this place).
    Entry(usize, JournalEntry),
    /// A ledger key as it was (`None`: not there).
    Key(String, Option<(EffectStatus, Option<Value>)>),
}

impl State {
    /// A new thread, idle, at version 0; [`StoreError::Exists`] when the id is taken.
    fn create(&mut self, new: NewThread) -> Result<&mut (Thread, Vec<Message>), StoreError> {
        let now = now_millis();
        let thread = Thread {
            id: new.id.clone(),
            parent_id: new.parent_id,
            tags: new.tags,
            version: 0,
            message_count: 0,
            status: ThreadStatus::Idle,
            run_id: None,
            holder: None,
            pending: Vec::new(),
            created_at: now,
            updated_at: now,
        };
        match self.threads.entry(new.id) {
            Entry::Occupied(taken) => Err(StoreError::Exists(taken.key().clone())),
            Entry::Vacant(slot) => Ok(slot.insert((thread, Vec::new()))),
        }
    }

    /// [`Store::start_thread`]: the thread created holding `prompt`, running and claimed, at
    /// version 2 (as its creation, the prompt's write and the claim would leave it).
    fn start(
        &mut self,
        new: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        let (thread, messages) = self.create(new)?;
        messages.extend_from_slice(prompt);
        thread.version = 2;
        thread.message_count = prompt.len() as u64;
        thread.status = ThreadStatus::Running;
        thread.run_id = Some(run_id.to_string());
        thread.holder = Some(holder.clone());
        Ok(2)
    }

    /// Applies `batch` under the lock: all of it, or (an operation failing) none of it.
    fn commit(&mut self, batch: &Batch<'_>) -> Result<Committed, StoreError> {
        let mut undo = Vec::new();
        let applied = self.apply(batch, &mut undo);
        if applied.is_err() {
            self.undo(undo);
        }
        applied
    }

    fn apply(&mut self, batch: &Batch<'_>, undo: &mut Vec<Undo>) -> Result<Committed, StoreError> {
        let mut committed = Committed::default();
        for op in batch.ops() {
            match *op {
                Op::Settle(settled) => self.settle(settled, undo)?,
                Op::Write(write) => committed.version = Some(self.write(write, undo)?),
                Op::Intend(entry) => {
                    self.intend(entry, undo);
                    let claim = match entry.key_to_claim() {
                        Some(key) => self.claim(&key, undo),
                        None => Claim::New,
                    };
                    committed.claims.push(claim);
                }
                Op::ClaimKey { key, .. } => committed.claims.push(self.claim(key, undo)),
                Op::Release(thread) => self.release(thread, undo)?,
                // The service's state, not this one: see `MemoryStore::commit`.
                Op::SettleEvent(_) => {}
            }
        }
        Ok(committed)
    }

    /// Puts back what `undo` records, the last change first.
    fn undo(&mut self, undo: Vec<Undo>) {
        for change in undo.into_iter().rev() {
            match change {
                Undo::Thread {
                    record,
                    keep,
                    removed,
                } => {
                    if let Some((thread, stored)) = self.threads.get_mut(&record.id) {
                        stored.truncate(keep);
                        stored.extend(removed);
                        *thread = record;
                    }
                }
                Undo::Appended(thread, len) => {
                    if let Some(entries) = self.journal.get_mut(&thread) {
                        entries.truncate(len);
                    }
                }
                Undo::Entry(at, entry) => {
                    if let Some(entries) = self.journal.get_mut(&entry.thread_id) {
                        entries[at] = entry;
                    }
                }
                Undo::Key(key, None) => {
                    self.ledger.remove(&key);
                }
                Undo::Key(key, Some(was)) => {
                    self.ledger.insert(key, was);
                }
            }
        }
    }

    /// Records `entry`; a second record of one attempt keeps the first.
    fn intend(&mut self, entry: &JournalEntry, undo: &mut Vec<Undo>) {
        let entries = self.journal.entry(entry.thread_id.clone()).or_default();
        if !entries.iter().any(|e| e.same_attempt(entry)) {
            undo.push(Undo::Appended(entry.thread_id.clone(), entries.len()));
            entries.push(entry.clone());
        }
    }

    /// Settles a call and, when it is unsafe to repeat, its key: both, or neither.
    fn settle(&mut self, settled: Settlement<'_>, undo: &mut Vec<Undo>) -> Result<(), StoreError> {
        let Settlement {
            entry,
            status,
            output,
        } = settled;
        let (at, recorded) = self
            .journal
            .get_mut(&entry.thread_id)
            .and_then(|entries| {
                entries
                    .iter_mut()
                    .enumerate()
                    .find(|(_, e)| e.same_attempt(entry))
            })
            .ok_or_else(|| StoreError::NotFound(entry.record_name()))?;
        let key = entry.key_to_claim();
        if let Some(key) = &key
            && !self.ledger.contains_key(key)
        {
            return Err(StoreError::NotFound(format!("idempotency key {key}")));
        }
        undo.push(Undo::Entry(at, recorded.clone()));
        recorded.status = status;
        recorded.output = Some(output.clone());
        if let Some(key) = key {
            let was = self
                .ledger
                .insert(key.to_string(), (status, Some(output.clone())));
            undo.push(Undo::Key(key.to_string(), was));
        }
        Ok(())
    }

    fn write(&mut self, write: ThreadWrite<'_>, undo: &mut Vec<Undo>) -> Result<u64, StoreError> {
        let (record, stored) = at_version(self, write.thread, write.expected)?;
        if write.keep > stored.len() as u64 {
            return Err(StoreError::Corrupt(format!(
                "cannot keep {} of the {} messages of thread {}",
                write.keep,
                stored.len(),
                write.thread
            )));
        }
        let keep = write.keep as usize;
        undo.push(Undo::Thread {
            record: record.clone(),
            keep,
            removed: stored.split_off(keep),
        });
        stored.extend_from_slice(write.messages);
        record.version += 1;
        record.message_count = stored.len() as u64;
        record.status = write.status;
        if write.status != ThreadStatus::Running {
            record.holder = None;
        }
        record.pending = write.pending.to_vec();
        record.updated_at = now_millis();
        Ok(record.version)
    }

    fn release(&mut self, thread: &str, undo: &mut Vec<Undo>) -> Result<(), StoreError> {
        let (record, stored) = self
            .threads
            .get_mut(thread)
            .ok_or_else(|| StoreError::NotFound(thread.to_string()))?;
        undo.push(Undo::Thread {
            record: record.clone(),
            keep: stored.len(),
            removed: Vec::new(),
        });
        record.holder = None;
        Ok(())
    }

    fn claim(&mut self, key: &str, undo: &mut Vec<Undo>) -> Claim {
        if let Some((status, output)) = self.ledger.get(key) {
            return Claim::Existing {
                status: *status,
                output: output.clone(),
            };
        }
        self.ledger
            .insert(key.to_string(), (EffectStatus::Intended, None));
        undo.push(Undo::Key(key.to_string(), None));
        Claim::New
    }
}

/// The thread and its messages, if its version is `expected`.
fn at_version<'a>(
    state: &'a mut State,
    thread: &str,
    expected: u64,
) -> Result<&'a mut (Thread, Vec<Message>), StoreError> {
    let entry = state
        .threads
        .get_mut(thread)
        .ok_or_else(|| StoreError::NotFound(thread.to_string()))?;
    if entry.0.version != expected {
        return Err(StoreError::Conflict {
            thread: thread.to_string(),
            expected,
            found: entry.0.version,
        });
    }
    Ok(entry)
}

#[async_trait]
impl Store for MemoryStore {
    async fn create_thread(&self, new: NewThread) -> Result<Thread, StoreError> {
        self.state().create(new).map(|(thread, _)| thread.clone())
    }

    async fn start_thread(
        &self,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        self.state().start(thread, prompt, run_id, holder)
    }

    async fn thread(&self, id: &str) -> Result<Option<Thread>, StoreError> {
        Ok(self.state().threads.get(id).map(|(t, _)| t.clone()))
    }

    async fn threads(&self, query: &ThreadQuery) -> Result<Vec<Thread>, StoreError> {
        let state = self.state();
        let mut found: Vec<Thread> = state
            .threads
            .values()
            .map(|(t, _)| t)
            .filter(|t| query.parent_id.is_none() || t.parent_id == query.parent_id)
            .filter(|t| query.tag.as_ref().is_none_or(|tag| t.tags.contains(tag)))
            .filter(|t| query.status.is_none_or(|s| t.status == s))
            .cloned()
            .collect();
        found.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id)));
        found.truncate(query.limit.unwrap_or(usize::MAX));
        Ok(found)
    }

    async fn messages(&self, thread: &str) -> Result<Vec<Message>, StoreError> {
        self.state()
            .threads
            .get(thread)
            .map(|(_, m)| m.clone())
            .ok_or_else(|| StoreError::NotFound(thread.to_string()))
    }

    async fn commit(&self, batch: Batch<'_>) -> Result<Committed, StoreError> {
        if batch.is_empty() {
            return Ok(Committed::default());
        }
        let ends: Vec<&EventEnd> = batch
            .ops()
            .iter()
            .filter_map(|op| match op {
                Op::SettleEvent(end) => Some(*end),
                _ => None,
            })
            .collect();
        if ends.is_empty() {
            return self.state().commit(&batch);
        }
        // Events settled too: both locks held (the service's first, as everywhere), the events
        // found before anything is written, so that all of the batch happens or none of it.
        let mut service = self.service();
        if let Some(missing) = ends.iter().find(|end| !service.has_event(end)) {
            return Err(StoreError::NotFound(missing.event_id.clone()));
        }
        let committed = self.state().commit(&batch)?;
        for end in ends {
            let event = [&*end.account, &*end.agent_id, &*end.event_id];
            service.settle_event(event, end.status, &end.detail);
        }
        Ok(committed)
    }

    async fn claim(
        &self,
        thread: &str,
        expected: u64,
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        let mut state = self.state();
        let (record, _) = at_version(&mut state, thread, expected)?;
        record.version += 1;
        record.status = ThreadStatus::Running;
        record.run_id = Some(run_id.to_string());
        record.holder = Some(holder.clone());
        record.updated_at = now_millis();
        Ok(record.version)
    }

    async fn touch(&self, thread: &str, expected: u64) -> Result<(), StoreError> {
        let mut state = self.state();
        let (record, _) = at_version(&mut state, thread, expected)?;
        record.updated_at = now_millis();
        Ok(())
    }

    async fn journal(&self, thread: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let mut entries: Vec<JournalEntry> = self
            .state()
            .journal
            .get(thread)
            .cloned()
            .unwrap_or_default();
        entries.sort_by_key(|e| (e.seq, e.attempt));
        Ok(entries)
    }

    async fn put_variable(
        &self,
        thread: &str,
        name: &str,
        value: &StoredValue,
    ) -> Result<(), StoreError> {
        let mut state = self.state();
        if !state.threads.contains_key(thread) {
            return Err(StoreError::NotFound(thread.to_string()));
        }
        state
            .variables
            .entry(thread.to_string())
            .or_default()
            .insert(name.to_string(), value.clone());
        Ok(())
    }

    async fn variables(&self, thread: &str) -> Result<Vec<(String, StoredValue)>, StoreError> {
        Ok(self
            .state()
            .variables
            .get(thread)
            .map(|v| v.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default())
    }

    async fn put_credential(
        &self,
        account: &str,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError> {
        self.state()
            .credentials
            .entry(account.to_string())
            .or_default()
            .insert(name.to_string(), sealed.to_vec());
        Ok(())
    }

    async fn credentials(&self, account: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        Ok(self
            .state()
            .credentials
            .get(account)
            .map(|c| c.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default())
    }

    async fn delete_credential(&self, account: &str, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .state()
            .credentials
            .get_mut(account)
            .is_some_and(|c| c.remove(name).is_some()))
    }
}
