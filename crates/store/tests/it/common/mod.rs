//! What the store's tests share: the journal entry the migration tests carry across an upgrade
//! ([`payment`]) and a real PostgreSQL server ([`pg_server`], also used by the `toolsmith`
//! crate's crash tests).

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod payment;
#[cfg(feature = "postgres")]
pub mod pg_server;
