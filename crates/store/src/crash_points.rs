//! Crash points, for tests (the `crash-points` feature): a store that kills its own process
//! with `SIGKILL` just before or just after one chosen write, so that a test can walk every
//! write of a run — each step of the journal protocol included — and check what a crash there
//! leaves.
//!
//! [`open`](crate::open) and [`open_service`](crate::open_service) wrap the store they open
//! when `TOOLSMITH_CRASH_POINT` or `TOOLSMITH_CRASH_POINTS_LOG` is set (and only in a build with
//! the feature: a release build has no such variable):
//! - the points are numbered from 1 in the order the process reaches them: `before <write>`
//!   and `after <write>` around every call of a writing method (`commit`, `claim`,
//!   `create_thread`, `start_thread`, `touch`, `put_variable`, the service's event and async
//!   result writes…); reads are not points;
//! - `TOOLSMITH_CRASH_POINT=N` kills the process at point `N`: `before` — the write never
//!   reached the store; `after` — it is stored, and nothing the process would have done next
//!   happened;
//! - `TOOLSMITH_CRASH_POINTS_LOG=PATH` appends `N <point>` to `PATH` for every point reached
//!   (a run with no crash point tells a test how many there are and what they are).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde_json::Value;
use toolsmith_core::Message;

use crate::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, Batch, CacheStore, Committed,
    DispatchGroup, EventRecord, EventStatus, Holder, JournalEntry, NewThread, ServiceStore, Store,
    StoreError, StoredValue, Thread, ThreadQuery,
};

/// The variable naming the point to die at.
pub const CRASH_POINT_VAR: &str = "TOOLSMITH_CRASH_POINT";
/// The variable naming the file that lists the points reached.
pub const CRASH_POINTS_LOG_VAR: &str = "TOOLSMITH_CRASH_POINTS_LOG";

/// A store whose writes are crash points (see the [module docs](self)).
pub struct CrashPoints {
    inner: Arc<dyn ServiceStore>,
    reached: AtomicU64,
    kill_at: Option<u64>,
    log: Option<PathBuf>,
}

/// `store` wrapped as the variables say, or as it is when neither is set.
///
/// # Errors
///
/// [`StoreError::Backend`] for a `TOOLSMITH_CRASH_POINT` that is not a positive number.
pub fn from_env(store: Arc<dyn ServiceStore>) -> Result<Arc<dyn ServiceStore>, StoreError> {
    let kill_at = match std::env::var(CRASH_POINT_VAR) {
        Ok(n) => Some(
            n.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    StoreError::Backend(format!(
                        "{CRASH_POINT_VAR} must be a point's number from 1, not {n:?}"
                    ))
                })?,
        ),
        Err(_) => None,
    };
    let log = std::env::var_os(CRASH_POINTS_LOG_VAR).map(PathBuf::from);
    if kill_at.is_none() && log.is_none() {
        return Ok(store);
    }
    Ok(Arc::new(CrashPoints {
        inner: store,
        reached: AtomicU64::new(0),
        kill_at,
        log,
    }))
}

impl CrashPoints {
    /// Point `name` is reached: logged, and the process killed if it is the one.
    fn point(&self, name: &str) {
        let n = self.reached.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(path) = &self.log {
            // One write per line, appended: lines of a killed process are all there.
            let line = format!("{n} {name}\n");
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| file.write_all(line.as_bytes()));
            if let Err(e) = appended {
                eprintln!("crash points: cannot append to {}: {e}", path.display());
            }
        }
        if self.kill_at == Some(n) {
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
            // SIGKILL cannot be caught; should it not be delivered yet, nothing goes on.
            loop {
                std::thread::park();
            }
        }
    }
}

/// A write, between its two points.
macro_rules! write_point {
    ($self:ident, $name:literal, $call:expr) => {{
        $self.point(concat!("before ", $name));
        let out = $call.await;
        $self.point(concat!("after ", $name));
        out
    }};
}

#[async_trait]
impl CacheStore for CrashPoints {
    async fn cache_get(&self, key: &[u8], now: u64) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.cache_get(key, now).await
    }

    async fn cache_put(&self, key: &[u8], value: &[u8], expires_at: u64) -> Result<(), StoreError> {
        write_point!(
            self,
            "cache_put",
            self.inner.cache_put(key, value, expires_at)
        )
    }

    async fn cache_sweep(&self, now: u64, limit: usize) -> Result<usize, StoreError> {
        write_point!(self, "cache_sweep", self.inner.cache_sweep(now, limit))
    }
}

#[async_trait]
impl Store for CrashPoints {
    async fn create_thread(&self, thread: NewThread) -> Result<Thread, StoreError> {
        write_point!(self, "create_thread", self.inner.create_thread(thread))
    }

    async fn thread(&self, id: &str) -> Result<Option<Thread>, StoreError> {
        self.inner.thread(id).await
    }

    async fn threads(&self, query: &ThreadQuery) -> Result<Vec<Thread>, StoreError> {
        self.inner.threads(query).await
    }

    async fn messages(&self, thread: &str) -> Result<Vec<Message>, StoreError> {
        self.inner.messages(thread).await
    }

    async fn commit(&self, batch: Batch<'_>) -> Result<Committed, StoreError> {
        write_point!(self, "commit", self.inner.commit(batch))
    }

    async fn claim(
        &self,
        thread: &str,
        expected: u64,
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        write_point!(
            self,
            "claim",
            self.inner.claim(thread, expected, run_id, holder)
        )
    }

    async fn start_thread(
        &self,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<u64, StoreError> {
        write_point!(
            self,
            "start_thread",
            self.inner.start_thread(thread, prompt, run_id, holder)
        )
    }

    async fn touch(&self, thread: &str, expected: u64) -> Result<(), StoreError> {
        write_point!(self, "touch", self.inner.touch(thread, expected))
    }

    async fn journal(&self, thread: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.inner.journal(thread).await
    }

    async fn put_variable(
        &self,
        thread: &str,
        name: &str,
        value: &StoredValue,
    ) -> Result<(), StoreError> {
        write_point!(
            self,
            "put_variable",
            self.inner.put_variable(thread, name, value)
        )
    }

    async fn variables(&self, thread: &str) -> Result<Vec<(String, StoredValue)>, StoreError> {
        self.inner.variables(thread).await
    }

    async fn put_credential(
        &self,
        account: &str,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError> {
        write_point!(
            self,
            "put_credential",
            self.inner.put_credential(account, name, sealed)
        )
    }

    async fn credentials(&self, account: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        self.inner.credentials(account).await
    }

    async fn delete_credential(&self, account: &str, name: &str) -> Result<bool, StoreError> {
        write_point!(
            self,
            "delete_credential",
            self.inner.delete_credential(account, name)
        )
    }
}

#[async_trait]
impl ServiceStore for CrashPoints {
    async fn create_account(&self, account: &Account) -> Result<(), StoreError> {
        write_point!(self, "create_account", self.inner.create_account(account))
    }

    async fn account(&self, name: &str) -> Result<Option<Account>, StoreError> {
        self.inner.account(name).await
    }

    async fn accounts(&self) -> Result<Vec<Account>, StoreError> {
        self.inner.accounts().await
    }

    async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError> {
        write_point!(self, "put_agent", self.inner.put_agent(agent))
    }

    async fn agent(&self, account: &str, id: &str) -> Result<Option<AgentRecord>, StoreError> {
        self.inner.agent(account, id).await
    }

    async fn agents(&self, account: &str) -> Result<Vec<AgentRecord>, StoreError> {
        self.inner.agents(account).await
    }

    async fn delete_agent(&self, account: &str, id: &str) -> Result<bool, StoreError> {
        write_point!(self, "delete_agent", self.inner.delete_agent(account, id))
    }

    async fn insert_event(&self, event: &EventRecord) -> Result<bool, StoreError> {
        write_point!(self, "insert_event", self.inner.insert_event(event))
    }

    async fn start_event(
        &self,
        event: &EventRecord,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<Option<u64>, StoreError> {
        write_point!(
            self,
            "start_event",
            self.inner
                .start_event(event, thread, prompt, run_id, holder)
        )
    }

    async fn event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
    ) -> Result<Option<EventRecord>, StoreError> {
        self.inner.event(account, agent_id, event_id).await
    }

    async fn processing_events(&self, thread_id: &str) -> Result<Vec<EventRecord>, StoreError> {
        self.inner.processing_events(thread_id).await
    }

    async fn update_event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
        status: EventStatus,
        detail: &Value,
    ) -> Result<(), StoreError> {
        write_point!(
            self,
            "update_event",
            self.inner
                .update_event(account, agent_id, event_id, status, detail)
        )
    }

    async fn insert_async_result(&self, row: &AsyncResult, group: bool) -> Result<(), StoreError> {
        write_point!(
            self,
            "insert_async_result",
            self.inner.insert_async_result(row, group)
        )
    }

    async fn async_result(&self, result_id: &str) -> Result<Option<AsyncResult>, StoreError> {
        self.inner.async_result(result_id).await
    }

    async fn settle_async_result(
        &self,
        result_id: &str,
        settlement: &AsyncSettlement,
    ) -> Result<bool, StoreError> {
        write_point!(
            self,
            "settle_async_result",
            self.inner.settle_async_result(result_id, settlement)
        )
    }

    async fn async_results_of(
        &self,
        parent_event_id: &str,
    ) -> Result<Vec<AsyncResult>, StoreError> {
        self.inner.async_results_of(parent_event_id).await
    }

    async fn seal_group(&self, parent_event_id: &str, expires_at: u64) -> Result<(), StoreError> {
        write_point!(
            self,
            "seal_group",
            self.inner.seal_group(parent_event_id, expires_at)
        )
    }

    async fn group(&self, parent_event_id: &str) -> Result<Option<DispatchGroup>, StoreError> {
        self.inner.group(parent_event_id).await
    }

    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        write_point!(self, "purge_expired", self.inner.purge_expired(now))
    }

    async fn wake_replicas(&self) -> Result<(), StoreError> {
        self.inner.wake_replicas().await
    }

    fn wakes(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.inner.wakes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    #[tokio::test]
    async fn every_write_is_two_points_and_reads_none() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("points");
        let store = CrashPoints {
            inner: Arc::new(MemoryStore::new()),
            reached: AtomicU64::new(0),
            kill_at: None,
            log: Some(log.clone()),
        };
        let thread = store.create_thread(NewThread::new("t")).await.unwrap();
        store.thread("t").await.unwrap();
        store.touch("t", thread.version).await.ok();
        let lines = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            lines,
            "1 before create_thread\n2 after create_thread\n3 before touch\n4 after touch\n"
        );
    }
}
