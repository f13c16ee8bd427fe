//! [`open`]: a store from a URL, as the CLI's `--db` takes it.

use std::sync::Arc;

use crate::{PostgresStore, SqliteStore, Store, StoreError};

/// Opens the store a URL names: `sqlite:PATH` (also `sqlite://PATH`; the file is created if
/// needed) or `postgres://…` / `postgresql://…` (a libpq URL or key-value string after the
/// scheme). Migrations are applied on open.
///
/// # Errors
///
/// [`StoreError::Backend`] for a URL of another kind (the message names only its scheme: a
/// URL may hold a password) and for a store that cannot be opened.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let url = format!("sqlite:{}", dir.path().join("runs.db").display());
/// let store = toolsmith_store::open(&url).await.unwrap();
/// assert!(store.thread("none").await.unwrap().is_none());
/// let Err(error) = toolsmith_store::open("mysql://user:hunter2@db/x").await else {
///     panic!("mysql is not a store")
/// };
/// assert!(!error.to_string().contains("hunter2"));
/// # });
/// ```
pub async fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    if let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    {
        if path.is_empty() {
            return Err(StoreError::Backend(
                "the SQLite URL names no file: use sqlite:PATH".to_string(),
            ));
        }
        return Ok(Arc::new(SqliteStore::open(path).await?));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresStore::connect(url).await?));
    }
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
    Err(StoreError::Backend(format!(
        "unsupported store URL (scheme \"{scheme}\"): use sqlite:PATH or postgres://USER@HOST/DB"
    )))
}
