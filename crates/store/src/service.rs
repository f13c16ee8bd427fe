//! [`ServiceStore`]: what the harness service keeps besides threads — accounts, their agents,
//! the runs started over HTTP (by event id), and async tool results with their dispatch groups.
//!
//! Contracts every backend keeps (the [`conformance`](crate::conformance) suite checks them):
//!
//! - **Scoped lookups.** Agents and events are keyed by account: a lookup with another
//!   account's name finds nothing, exactly as for a missing row. An async result carries its
//!   account and agent, and the caller compares them (the service answers a foreign row as a
//!   missing one).
//! - **Once.** [`insert_event`](ServiceStore::insert_event) inserts only when the id is new
//!   (a duplicate `eventId` and the continuation of a dispatch group both rely on it), and so
//!   does [`start_event`](ServiceStore::start_event), which writes the thread too or nothing;
//!   [`settle_async_result`](ServiceStore::settle_async_result) settles only a row still
//!   `processing`. Of two racing callers exactly one wins, across processes sharing a database.
//! - **Groups.** [`insert_async_result`](ServiceStore::insert_async_result) with a group adds
//!   the id to the parent event's dispatch group in the same transaction, after the ids added
//!   before it; a sealed group keeps its ids and stays sealed. Sealing is the caller's promise
//!   that no call will be added, not a lock: the store adds an id to a sealed group as to any
//!   other.
//! - **Expiry.** Rows carry `expires_at`; [`purge_expired`](ServiceStore::purge_expired) removes
//!   events, async results and groups past it. Reads do not filter: an expired row is gone only
//!   once purged. A group expires when the last call added to it does, or when its seal says
//!   (whichever was set last); its ids go with it, and the ids of purged calls stay in a group
//!   that is not purged.
//! - **Order.** Lists are in the byte order of their keys (as Rust compares `str`s), whatever a
//!   database's locale.
//! - **Values.** JSON reads back exactly as written (as `serde_json` writes and reads it), a
//!   response of `None` apart from one of `Some(Value::Null)`. Times are milliseconds since the
//!   Unix epoch; the SQL backends keep them as signed 64-bit integers, so a time past
//!   `i64::MAX` reads back as `i64::MAX` (a row that never expires is still never purged).
//! - **Secrets.** An agent's config is stored as given: the service seals it with the
//!   [`SecretKey`](crate::SecretKey) before it gets here. An account's secret is stored as its
//!   SHA-256 only.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolsmith_core::Message;

use crate::{Holder, NewThread, Store, StoreError};

/// An account: who owns agents and the runs of them, authenticated by a bearer secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The account's name (`[a-z0-9-]`, 1 to 64 characters: the service checks it).
    pub name: String,
    /// SHA-256 of the account's bearer secret (the secret itself is shown once, at creation).
    pub secret_hash: [u8; 32],
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
}

/// An agent: a config owned by an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRecord {
    /// The owning account.
    pub account: String,
    /// The agent's id, unique within the account.
    pub id: String,
    /// The agent config (JSON), sealed by the service.
    pub config: Vec<u8>,
    /// Whether runs may start (an inactive agent answers like a missing one).
    pub active: bool,
    /// Milliseconds since the Unix epoch, of the last put.
    pub updated_at: u64,
}

/// Where a run started over HTTP stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// Running, or waiting for async tools.
    Processing,
    /// Paused on approvals (or client tools) the caller must answer.
    AwaitingApproval,
    /// Ended.
    Completed,
    /// Ended with an error.
    Failed,
}

impl EventStatus {
    /// The wire name: `processing`, `awaiting_approval`, `completed`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventStatus::Processing => "processing",
            EventStatus::AwaitingApproval => "awaiting_approval",
            EventStatus::Completed => "completed",
            EventStatus::Failed => "failed",
        }
    }

    /// The status a wire name names.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "processing" => EventStatus::Processing,
            "awaiting_approval" => EventStatus::AwaitingApproval,
            "completed" => EventStatus::Completed,
            "failed" => EventStatus::Failed,
            _ => return None,
        })
    }
}

/// A run started over HTTP, keyed by `(account, agent_id, event_id)`; also the once-only marker
/// of a dispatch group's continuation (`<parentEventId>:async-tools`).
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// The account.
    pub account: String,
    /// The agent.
    pub agent_id: String,
    /// The caller's event id (unique per agent).
    pub event_id: String,
    /// The conversation the event belongs to.
    pub conversation_key: String,
    /// The stored thread the run writes.
    pub thread_id: String,
    /// Where the run stands.
    pub status: EventStatus,
    /// What the service answers about the run besides its status (final text, pending
    /// approvals, error), as JSON.
    pub detail: Value,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Milliseconds since the Unix epoch.
    pub updated_at: u64,
    /// Milliseconds since the Unix epoch after which the row may be purged.
    pub expires_at: u64,
}

/// An event's new status and detail, written with the save that ends its run, in the same
/// commit ([`Op::SettleEvent`](crate::Op::SettleEvent); [`StoredRun::with_event_end`](crate::StoredRun::with_event_end)):
/// a run's end and its event's status are never one without the other.
#[derive(Debug, Clone, PartialEq)]
pub struct EventEnd {
    /// The account.
    pub account: String,
    /// The agent.
    pub agent_id: String,
    /// The event id.
    pub event_id: String,
    /// Its new status.
    pub status: EventStatus,
    /// Its new detail.
    pub detail: Value,
}

/// Where an async tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AsyncStatus {
    /// Running (in the service, or handed to an external worker).
    Processing,
    /// Settled with a response.
    Completed,
    /// Settled with an error.
    Failed,
}

impl AsyncStatus {
    /// The wire name: `processing`, `completed`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            AsyncStatus::Processing => "processing",
            AsyncStatus::Completed => "completed",
            AsyncStatus::Failed => "failed",
        }
    }

    /// The status a wire name names.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "processing" => AsyncStatus::Processing,
            "completed" => AsyncStatus::Completed,
            "failed" => AsyncStatus::Failed,
            _ => return None,
        })
    }
}

/// An async tool call's row (`async_tool_<uuid>`).
#[derive(Debug, Clone, PartialEq)]
pub struct AsyncResult {
    /// `async_tool_<uuid v4>`.
    pub result_id: String,
    /// The account of the run that made the call.
    pub account: String,
    /// The agent of that run.
    pub agent_id: String,
    /// The event of that run (the dispatch group's key).
    pub parent_event_id: String,
    /// The conversation of that run (`async_status` answers only within it).
    pub conversation_key: String,
    /// The tool.
    pub tool_name: String,
    /// The model's call id.
    pub tool_call_id: String,
    /// The call's arguments.
    pub input: Value,
    /// Where it stands.
    pub status: AsyncStatus,
    /// A completed call's response.
    pub response: Option<Value>,
    /// A failed call's error.
    pub error: Option<String>,
    /// Whether an external worker settles it (`external-dispatch`).
    pub external: bool,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Milliseconds since the Unix epoch.
    pub updated_at: u64,
    /// Milliseconds since the Unix epoch after which the row may be purged (7 days on).
    pub expires_at: u64,
}

/// How an async call ended ([`ServiceStore::settle_async_result`]).
#[derive(Debug, Clone, PartialEq)]
pub enum AsyncSettlement {
    /// With a response, kept as given: `None` reads back as `None` (the service answers it as
    /// `null`), apart from `Some(Value::Null)`.
    Completed(Option<Value>),
    /// With an error.
    Failed(String),
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl AsyncSettlement {
    /// The row's columns as an SQL backend writes them: the status, the response as JSON
    /// text (a failure's: none), the error (a completion's: none).
    pub(crate) fn columns(
        &self,
    ) -> Result<(AsyncStatus, Option<String>, Option<&str>), StoreError> {
        Ok(match self {
            AsyncSettlement::Completed(response) => (
                AsyncStatus::Completed,
                response
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?,
                None,
            ),
            AsyncSettlement::Failed(error) => (AsyncStatus::Failed, None, Some(error.as_str())),
        })
    }
}

/// A parent event's external calls.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DispatchGroup {
    /// The calls' result ids, in the order they were added.
    pub result_ids: Vec<String>,
    /// Whether the parent's model pass is over (no id will be added).
    pub sealed: bool,
}

/// A time as an SQL backend stores it (a later one than it can hold, as the latest).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn millis(time: u64) -> i64 {
    i64::try_from(time).unwrap_or(i64::MAX)
}

/// A stored time, which cannot be negative.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn time(stored: i64) -> Result<u64, StoreError> {
    u64::try_from(stored).map_err(|_| StoreError::Corrupt(format!("negative time {stored}")))
}

/// What the harness service stores besides threads (see the [module docs](self)).
#[async_trait]
pub trait ServiceStore: Store {
    /// Creates an account.
    ///
    /// # Errors
    ///
    /// [`StoreError::Exists`] when the name is taken.
    async fn create_account(&self, account: &Account) -> Result<(), StoreError>;

    /// An account, by name.
    async fn account(&self, name: &str) -> Result<Option<Account>, StoreError>;

    /// Every account, by name.
    async fn accounts(&self) -> Result<Vec<Account>, StoreError>;

    /// Creates or replaces the account's agent `agent.id`, as given (its `updated_at` too).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] naming the account when it does not exist.
    async fn put_agent(&self, agent: &AgentRecord) -> Result<(), StoreError>;

    /// The account's agent `id`.
    async fn agent(&self, account: &str, id: &str) -> Result<Option<AgentRecord>, StoreError>;

    /// The account's agents, by id.
    async fn agents(&self, account: &str) -> Result<Vec<AgentRecord>, StoreError>;

    /// Removes the account's agent `id`: whether there was one.
    async fn delete_agent(&self, account: &str, id: &str) -> Result<bool, StoreError>;

    /// Records `event` if no event of its account and agent has its id: whether it did (a
    /// duplicate leaves the first as it was).
    async fn insert_event(&self, event: &EventRecord) -> Result<bool, StoreError>;

    /// Records a new `event` and starts its run on a new thread, as
    /// [`insert_event`](Self::insert_event) and [`Store::start_thread`] would, in one
    /// transaction: both or neither (a crash leaves no event without its thread, and a new
    /// conversation costs one commit, not two). `Some` of the thread's version (2) when both
    /// were written; `None` for a duplicate event, and then nothing is written.
    ///
    /// # Errors
    ///
    /// [`StoreError::Exists`] when the thread exists; nothing is written, the event neither.
    async fn start_event(
        &self,
        event: &EventRecord,
        thread: NewThread,
        prompt: &[Message],
        run_id: &str,
        holder: &Holder,
    ) -> Result<Option<u64>, StoreError>;

    /// An event, scoped to its account and agent.
    async fn event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
    ) -> Result<Option<EventRecord>, StoreError>;

    /// The events of `thread_id` still `processing`, oldest first (then by event id): what a
    /// replica that takes over an interrupted run of the thread settles when the run ends.
    async fn processing_events(&self, thread_id: &str) -> Result<Vec<EventRecord>, StoreError>;

    /// Sets an event's status and detail (and `updated_at` to now).
    ///
    /// # Errors
    ///
    /// [`StoreError::NotFound`] naming the event id when there is no such event (as for
    /// another account's).
    async fn update_event(
        &self,
        account: &str,
        agent_id: &str,
        event_id: &str,
        status: EventStatus,
        detail: &Value,
    ) -> Result<(), StoreError>;

    /// Records an async call, and with `group` adds its id to the dispatch group of its parent
    /// event (created unsealed when missing, sealed or not as it was otherwise) and sets the
    /// group's `expires_at` to the row's, in one transaction.
    ///
    /// # Errors
    ///
    /// [`StoreError::Exists`] naming the id when it is taken (then nothing is written).
    async fn insert_async_result(&self, row: &AsyncResult, group: bool) -> Result<(), StoreError>;

    /// An async call's row, whoever it belongs to (the caller compares account and agent).
    async fn async_result(&self, result_id: &str) -> Result<Option<AsyncResult>, StoreError>;

    /// Settles a row still `processing` (the other of `response` and `error` cleared): whether
    /// it did. `false` when it was settled already or is missing.
    async fn settle_async_result(
        &self,
        result_id: &str,
        settlement: &AsyncSettlement,
    ) -> Result<bool, StoreError>;

    /// The rows of a parent event's calls (any status), oldest first.
    async fn async_results_of(&self, parent_event_id: &str)
    -> Result<Vec<AsyncResult>, StoreError>;

    /// Seals a parent event's dispatch group (created empty when missing) and sets its
    /// `expires_at`.
    async fn seal_group(&self, parent_event_id: &str, expires_at: u64) -> Result<(), StoreError>;

    /// A parent event's dispatch group, if it has one.
    async fn group(&self, parent_event_id: &str) -> Result<Option<DispatchGroup>, StoreError>;

    /// Removes events, async results and groups whose `expires_at` is before `now` (a row
    /// expiring at `now` is kept): how many of them. A group's ids go with it, uncounted.
    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError>;

    /// Tells every replica on this database — this store's own subscribers too — to look for
    /// runs to take over now rather than at its next sweep ([`wakes`](Self::wakes)): a replica
    /// that handed its runs back at shutdown says so. On PostgreSQL a notification
    /// (`NOTIFY toolsmith_wake`) reaches the stores of every process on the database; the other
    /// backends reach the subscribers of this store (a SQLite file is served by one process).
    async fn wake_replicas(&self) -> Result<(), StoreError>;

    /// A subscription to wake-ups ([`wake_replicas`](Self::wake_replicas)): each one is
    /// received once, from the moment of the call. On PostgreSQL the store listens on a
    /// connection of its own, connected again (and a wake-up delivered, for what may have been
    /// missed) after a loss.
    fn wakes(&self) -> tokio::sync::broadcast::Receiver<()>;
}
