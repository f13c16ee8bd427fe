//! Durable storage for toolsmith runs: threads with tags and parent links, their messages, where
//! their runs stand, the tool-call journal and the idempotency ledger; [`durable`] runs over
//! it ([`StoredRun`], the agent loop's run log over any store); and tools' cached results shared
//! across runs and processes ([`StoreCache`]).
//!
//! One trait, [`Store`], and its backends: [`MemoryStore`] (tests, the library default),
//! `SqliteStore` (the embedded default: one file, WAL, versioned migrations) and
//! `PostgresStore` (the scale-out path: several processes sharing one database). Every write to
//! a thread is conditional on the version it expects, so of two processes continuing one
//! thread exactly one proceeds; every backend passes the same [`conformance`] suite.
//!
//! Features: `sqlite` (`SqliteStore`, rusqlite) and `postgres` (`PostgresStore`,
//! tokio-postgres), both on by default. Without them the crate is the trait, the memory store
//! and the conformance suite: what a backend kept elsewhere needs.

mod batch;
pub mod conformance;
#[cfg(feature = "crash-points")]
pub mod crash_points;
mod crypto;
pub mod durable;
mod error;
mod holder;
mod journal;
mod memory;
mod open;
#[cfg(feature = "postgres")]
mod postgres;
mod result_cache;
mod service;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod thread;
mod wake;

pub use batch::{Batch, Committed, Op};
pub use crypto::{SECRET_KEY_VAR, SecretKey, Vault};
pub use durable::{
    DEFAULT_LEASE, DurableError, EventEnding, StoredRun, keep_variables, thread_variables,
};
pub use error::StoreError;
pub use holder::Holder;
pub use journal::{Claim, EffectStatus, JournalEntry, Settlement};
pub use memory::MemoryStore;
pub use open::{open, open_service};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use result_cache::{SWEEP_INTERVAL, SWEEP_LIMIT, StoreCache};
pub use service::{
    Account, AgentRecord, AsyncResult, AsyncSettlement, AsyncStatus, DispatchGroup, EventEnd,
    EventRecord, EventStatus, ServiceStore,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use store::{CacheStore, Store, StoredValue};
pub use thread::{NewThread, Thread, ThreadQuery, ThreadStatus, ThreadWrite};
