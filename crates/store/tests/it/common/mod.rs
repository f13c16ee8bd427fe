//! What the store's tests share: the journal entry the migration tests carry across an upgrade
//! ([`payment`]), what they check of the service's tables after it ([`service`]) and a real
//! PostgreSQL server ([`pg_server`], also used by the `toolsmith` crate's crash tests).

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod payment;
#[cfg(feature = "postgres")]
pub mod pg_server;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod service;
