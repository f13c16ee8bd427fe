//! [`ServiceStore`] for [`MemoryStore`]: one lock over maps, so every operation is atomic.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use serde_json::Value;
use toolsmith_core::Message;

use super::MemoryStore;
use crate::store::now_millis;
use crate::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, AsyncStatus, DispatchGroup, EventEnd,
    EventRecord, EventStatus, Holder, NewThread, ServiceStore, StoreError,
};

#[derive(Debug, Default)]
pub(super) struct ServiceState {
    accounts: BTreeMap<String, Account>,
    /// By (account, agent id).
    agents: BTreeMap<(String, String), AgentRecord>,
    /// By (account, agent id, event id).
    events: HashMap<(String, String, String), EventRecord>,
    async_results: HashMap<String, AsyncResult>,
    /// By parent event id: the group and its `expires_at`.
    groups: HashMap<String, (DispatchGroup, u64)>,
}

impl ServiceState {
    /// Whether the event `end` settles is there.
    pub(super) fn has_event(&self, end: &EventEnd) -> bool {
        let key = event_key(&end.account, &end.agent_id, &end.event_id);
        self.events.contains_key(&key)
    }

    /// Sets the event's status, detail and `updated_at`: `update_event`, and
    /// [`Op::SettleEvent`](crate::Op::SettleEvent) in a batch. `false` when there is no such
    /// event.
    pub(super) fn settle_event(
        &mut self,
        [account, agent_id, event_id]: [&str; 3],
        status: EventStatus,
        detail: &Value,
    ) -> bool {
        let Some(event) = self.events.get_mut(&event_key(account, agent_id, event_id)) else {
            return false;
        };
        event.status = status;
        event.detail = detail.clone();
        event.updated_at = now_millis();
        true
    }
}

impl MemoryStore {
    pub(super) fn service(&self) -> std::sync::MutexGuard<'_, ServiceState> {
        // A panic while holding the lock leaves the maps themselves intact.
        self.service.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn event_key(account: &str, agent_id: &str, event_id: &str) -> (String, String, String) {
    (account.into(), agent_id.into(), event_id.into())
}

#[async_trait]
impl ServiceStore for MemoryStore {
    async fn create_account(&self, account: &Account) -> Result<(), StoreError> {
        let mut state = self.service();
        if state.accounts.contains_key(&account.name) {
            return Err(StoreError::Exists(account.name.clone()));
        }
        state.accounts.insert(account.name.clone(), account.clone());
        Ok(())
    }

    async fn account(&self, name: &str) -> Result<Option<Account>, StoreError> {
        Ok(self.service().accounts.get(name).cloned())
    }

    async fn accounts(&self) -> Result<Vec<Account>, StoreError> {
        Ok(self.service().accounts.values().cloned().collect())
    }

    async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError> {
        let mut state = self.service();
        if !state.accounts.contains_key(&agent.account) {
            return Err(StoreError::NotFound(agent.account.clone()));
        }
        let key = (agent.account.clone(), agent.id.clone());
        state.agents.insert(key, agent.clone());
        Ok(())
    }

    async fn agent(&self, account: &str, id: &str) -> Result<Option<AgentRecord>, StoreError> {
        let key = (account.to_string(), id.to_string());
        Ok(self.service().agents.get(&key).cloned())
    }

    async fn agents(&self, account: &str) -> Result<Vec<AgentRecord>, StoreError> {
        Ok(self
            .service()
            .agents
            .values()
            .filter(|a| a.account == account)
            .cloned()
            .collect())
    }

    async fn delete_agent(&self, account: &str, id: &str) -> Result<bool, StoreError> {
        let key = (account.to_string(), id.to_string());
        Ok(self.service().agents.remove(&key).is_some())
    }

    async fn insert_event(&self, event: &EventRecord) -> Result<bool, StoreError> {
        let key = event_key(&event.account, &event.agent_id, &event.event_id);
        let mut state = self.service();
        if state.events.contains_key(&key) {
            return Ok(false);
        }
        state.events.insert(key, event.clone());
        Ok(true)
    }

    async fn start_event(
        &self,
        event: &EventRecord,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<Option<u64>, StoreError> {
        let key = event_key(&event.account, &event.agent_id, &event.event_id);
        // Both locks held (the service's first, as nowhere the other way round): nobody sees
        // the event without its thread, or records it meanwhile.
        let mut service = self.service();
        if service.events.contains_key(&key) {
            return Ok(None);
        }
        let version = self.state().start(thread, prompt, run_id, holder)?;
        service.events.insert(key, event.clone());
        Ok(Some(version))
    }

    async fn event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
    ) -> Result<Option<EventRecord>, StoreError> {
        let key = event_key(account, agent_id, event_id);
        Ok(self.service().events.get(&key).cloned())
    }

    async fn processing_events(&self, thread_id: &str) -> Result<Vec<EventRecord>, StoreError> {
        let mut events: Vec<EventRecord> = self
            .service()
            .events
            .values()
            .filter(|e| e.thread_id == thread_id && e.status == EventStatus::Processing)
            .cloned()
            .collect();
        events.sort_by(|a, b| (a.created_at, &a.event_id).cmp(&(b.created_at, &b.event_id)));
        Ok(events)
    }

    async fn update_event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
        status: EventStatus,
        detail: &Value,
    ) -> Result<(), StoreError> {
        let event = [account, agent_id, event_id];
        match self.service().settle_event(event, status, detail) {
            true => Ok(()),
            false => Err(StoreError::NotFound(event_id.to_string())),
        }
    }

    async fn insert_async_result(&self, row: &AsyncResult, group: bool) -> Result<(), StoreError> {
        let mut state = self.service();
        if state.async_results.contains_key(&row.result_id) {
            return Err(StoreError::Exists(row.result_id.clone()));
        }
        state
            .async_results
            .insert(row.result_id.clone(), row.clone());
        if group {
            let (group, expires_at) = state.groups.entry(row.parent_event_id.clone()).or_default();
            group.result_ids.push(row.result_id.clone());
            *expires_at = row.expires_at;
        }
        Ok(())
    }

    async fn async_result(&self, result_id: &str) -> Result<Option<AsyncResult>, StoreError> {
        Ok(self.service().async_results.get(result_id).cloned())
    }

    async fn settle_async_result(
        &self,
        result_id: &str,
        settlement: &AsyncSettlement,
    ) -> Result<bool, StoreError> {
        let mut state = self.service();
        let Some(row) = state
            .async_results
            .get_mut(result_id)
            .filter(|r| r.status == AsyncStatus::Processing)
        else {
            return Ok(false);
        };
        match settlement {
            AsyncSettlement::Completed(response) => {
                row.status = AsyncStatus::Completed;
                row.response = response.clone();
                row.error = None;
            }
            AsyncSettlement::Failed(error) => {
                row.status = AsyncStatus::Failed;
                row.response = None;
                row.error = Some(error.clone());
            }
        }
        row.updated_at = now_millis();
        Ok(true)
    }

    async fn async_results_of(
        &self,
        parent_event_id: &str,
    ) -> Result<Vec<AsyncResult>, StoreError> {
        let mut rows: Vec<AsyncResult> = self
            .service()
            .async_results
            .values()
            .filter(|r| r.parent_event_id == parent_event_id)
            .cloned()
            .collect();
        rows.sort_by(|a, b| (a.created_at, &a.result_id).cmp(&(b.created_at, &b.result_id)));
        Ok(rows)
    }

    async fn seal_group(&self, parent_event_id: &str, expires_at: u64) -> Result<(), StoreError> {
        let mut state = self.service();
        let (group, expiry) = state.groups.entry(parent_event_id.to_string()).or_default();
        group.sealed = true;
        *expiry = expires_at;
        Ok(())
    }

    async fn group(&self, parent_event_id: &str) -> Result<Option<DispatchGroup>, StoreError> {
        Ok(self
            .service()
            .groups
            .get(parent_event_id)
            .map(|(group, _)| group.clone()))
    }

    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        let mut state = self.service();
        let before = state.events.len() + state.async_results.len() + state.groups.len();
        state.events.retain(|_, e| e.expires_at >= now);
        state.async_results.retain(|_, r| r.expires_at >= now);
        state.groups.retain(|_, (_, expires_at)| *expires_at >= now);
        let after = state.events.len() + state.async_results.len() + state.groups.len();
        Ok((before - after) as u64)
    }

    async fn wake_replicas(&self) -> Result<(), StoreError> {
        self.wakes.send();
        Ok(())
    }

    fn wakes(&self) -> tokio::sync::broadcast::Receiver<()> {
        self.wakes.subscribe()
    }
}
