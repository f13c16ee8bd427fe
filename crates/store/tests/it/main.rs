//! The integration tests of `toolsmith-store`, linked as one test binary: the conformance suite
//! on every backend, SQLite's migrations and secrets at rest, the result cache shared by two
//! agents on one file, and PostgreSQL on a real server, each module built with the backend
//! feature it needs. The helpers they share are in [`common`].

mod common;

mod conformance;
#[cfg(feature = "sqlite")]
mod migrations;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod result_cache;
#[cfg(feature = "sqlite")]
mod secrets;
