//! [`MemoryStore`]: the in-memory backend, for tests and the library default.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;
use toolsmith_core::{Message, Pause};

use crate::store::now_millis;
use crate::{
    Claim, EffectStatus, JournalEntry, NewThread, Settlement, Store, StoreError, StoredValue,
    Thread, ThreadQuery, ThreadStatus, ThreadWrite,
};

/// A store in memory: everything is lost with the process. One lock guards it all, so every
/// operation is atomic.
///
/// ```
/// use toolsmith_store::{MemoryStore, NewThread, Store, ThreadStatus};
/// use toolsmith_core::Message;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// store.create_thread(NewThread::new("t1")).await.unwrap();
/// let v = store
///     .write("t1", 0, 0, &[Message::user("hi")], ThreadStatus::Idle, &[])
///     .await
///     .unwrap();
/// assert_eq!(v, 1);
/// assert_eq!(store.messages("t1").await.unwrap(), [Message::user("hi")]);
/// # });
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    threads: HashMap<String, (Thread, Vec<Message>)>,
    journal: Vec<JournalEntry>,
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

impl State {
    /// Records `entry`; a second record of one attempt keeps the first.
    fn intend(&mut self, entry: &JournalEntry) {
        let exists = self.journal.iter().any(|e| e.same_attempt(entry));
        if !exists {
            self.journal.push(entry.clone());
        }
    }

    fn entry(&mut self, of: &JournalEntry) -> Result<&mut JournalEntry, StoreError> {
        self.journal
            .iter_mut()
            .find(|e| e.same_attempt(of))
            .ok_or_else(|| StoreError::NotFound(of.record_name()))
    }

    /// Fails as [`State::settle`] would, changing nothing.
    fn check_settle(&mut self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.entry(entry)?;
        if let Some(key) = entry.key_to_claim() {
            self.ledger_entry(key)?;
        }
        Ok(())
    }

    /// Settles a call and, when it is unsafe to repeat, its key: both, or neither.
    fn settle(
        &mut self,
        entry: &JournalEntry,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), StoreError> {
        self.check_settle(entry)?;
        let settled = self.entry(entry)?;
        settled.status = status;
        settled.output = Some(output.clone());
        if let Some(key) = entry.key_to_claim() {
            *self.ledger_entry(key)? = (status, Some(output.clone()));
        }
        Ok(())
    }

    /// Fails as [`State::write`] would, changing nothing.
    fn check_write(&mut self, write: &ThreadWrite<'_>) -> Result<(), StoreError> {
        let (_, stored) = at_version(self, write.thread, write.expected)?;
        if write.keep > stored.len() as u64 {
            return Err(StoreError::Corrupt(format!(
                "cannot keep {} of the {} messages of thread {}",
                write.keep,
                stored.len(),
                write.thread
            )));
        }
        Ok(())
    }

    fn write(&mut self, write: ThreadWrite<'_>) -> Result<u64, StoreError> {
        self.check_write(&write)?;
        let (record, stored) = at_version(self, write.thread, write.expected)?;
        stored.truncate(write.keep as usize);
        stored.extend_from_slice(write.messages);
        record.version += 1;
        record.message_count = stored.len() as u64;
        record.status = write.status;
        record.pending = write.pending.to_vec();
        record.updated_at = now_millis();
        Ok(record.version)
    }

    fn claim(&mut self, key: &str) -> Claim {
        if let Some((status, output)) = self.ledger.get(key) {
            return Claim::Existing {
                status: *status,
                output: output.clone(),
            };
        }
        self.ledger
            .insert(key.to_string(), (EffectStatus::Intended, None));
        Claim::New
    }

    fn ledger_entry(
        &mut self,
        key: &str,
    ) -> Result<&mut (EffectStatus, Option<Value>), StoreError> {
        self.ledger
            .get_mut(key)
            .ok_or_else(|| StoreError::NotFound(format!("idempotency key {key}")))
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
        let mut state = self.state();
        if state.threads.contains_key(&new.id) {
            return Err(StoreError::Exists(new.id));
        }
        let now = now_millis();
        let thread = Thread {
            id: new.id.clone(),
            parent_id: new.parent_id,
            tags: new.tags,
            version: 0,
            message_count: 0,
            status: ThreadStatus::Idle,
            run_id: None,
            pending: Vec::new(),
            created_at: now,
            updated_at: now,
        };
        state.threads.insert(new.id, (thread.clone(), Vec::new()));
        Ok(thread)
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

    async fn write(
        &self,
        thread: &str,
        expected: u64,
        keep: u64,
        messages: &[Message],
        status: ThreadStatus,
        pending: &[Pause],
    ) -> Result<u64, StoreError> {
        self.state().write(ThreadWrite {
            thread,
            expected,
            keep,
            messages,
            status,
            pending,
        })
    }

    async fn write_and_intend(
        &self,
        write: ThreadWrite<'_>,
        entry: &JournalEntry,
    ) -> Result<(u64, Claim), StoreError> {
        let mut state = self.state();
        let version = state.write(write)?;
        state.intend(entry);
        let claim = match entry.key_to_claim() {
            Some(key) => state.claim(key),
            None => Claim::New,
        };
        Ok((version, claim))
    }

    async fn settle_and_write(
        &self,
        settled: &[Settlement<'_>],
        write: ThreadWrite<'_>,
    ) -> Result<u64, StoreError> {
        let mut state = self.state();
        // Everything checked before anything changes: all or nothing.
        state.check_write(&write)?;
        for s in settled {
            state.check_settle(s.entry)?;
        }
        for s in settled {
            state.settle(s.entry, s.status, s.output)?;
        }
        state.write(write)
    }

    async fn claim(&self, thread: &str, expected: u64, run_id: &str) -> Result<u64, StoreError> {
        let mut state = self.state();
        let (record, _) = at_version(&mut state, thread, expected)?;
        record.version += 1;
        record.status = ThreadStatus::Running;
        record.run_id = Some(run_id.to_string());
        record.updated_at = now_millis();
        Ok(record.version)
    }

    async fn touch(&self, thread: &str, expected: u64) -> Result<(), StoreError> {
        let mut state = self.state();
        let (record, _) = at_version(&mut state, thread, expected)?;
        record.updated_at = now_millis();
        Ok(())
    }

    async fn journal_intend(&self, entry: &JournalEntry) -> Result<(), StoreError> {
        self.state().intend(entry);
        Ok(())
    }

    async fn journal_settle(
        &self,
        entry: &JournalEntry,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), StoreError> {
        let mut state = self.state();
        let entry = state.entry(entry)?;
        entry.status = status;
        entry.output = Some(output.clone());
        Ok(())
    }

    // Under one lock, like the databases' transactions: all or nothing.
    async fn intend_call(&self, entry: &JournalEntry) -> Result<Claim, StoreError> {
        let mut state = self.state();
        state.intend(entry);
        Ok(match entry.key_to_claim() {
            Some(key) => state.claim(key),
            None => Claim::New,
        })
    }

    async fn settle_call(
        &self,
        entry: &JournalEntry,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), StoreError> {
        self.state().settle(entry, status, output)
    }

    async fn journal(&self, thread: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let mut entries: Vec<JournalEntry> = self
            .state()
            .journal
            .iter()
            .filter(|e| e.thread_id == thread)
            .cloned()
            .collect();
        entries.sort_by_key(|e| (e.seq, e.attempt));
        Ok(entries)
    }

    async fn ledger_claim(&self, key: &str, _thread: &str) -> Result<Claim, StoreError> {
        Ok(self.state().claim(key))
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

    async fn ledger_settle(
        &self,
        key: &str,
        status: EffectStatus,
        output: &Value,
    ) -> Result<(), StoreError> {
        *self.state().ledger_entry(key)? = (status, Some(output.clone()));
        Ok(())
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
