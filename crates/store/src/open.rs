//! [`open`]: a store from a URL, as the CLI's `--db` takes it.

use std::sync::Arc;

use crate::{ServiceStore, Store, StoreError};

/// Opens the store a URL names: `sqlite:PATH` (also `sqlite://PATH`; the file is created if
/// needed) or `postgres://…` / `postgresql://…` (a libpq URL or key-value string after the
/// scheme). Migrations are applied on open.
///
/// # Errors
///
/// [`StoreError::Backend`] for a URL of another kind (the message names only its scheme: a
/// URL may hold a password), for a backend this build was made without (the crate's `sqlite`
/// and `postgres` features) and for a store that cannot be opened.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// # #[cfg(feature = "sqlite")]
/// # {
/// let dir = tempfile::tempdir().unwrap();
/// let url = format!("sqlite:{}", dir.path().join("runs.db").display());
/// let store = toolsmith_store::open(&url).await.unwrap();
/// assert!(store.thread("none").await.unwrap().is_none());
/// # }
/// let Err(error) = toolsmith_store::open("mysql://user:hunter2@db/x").await else {
///     panic!("mysql is not a store")
/// };
/// assert!(!error.to_string().contains("hunter2"));
/// # });
/// ```
pub async fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    let store: Arc<dyn Store> = open_service(url).await?;
    Ok(store)
}

/// [`open`], as the [`ServiceStore`] every backend also is (the harness service's accounts,
/// agents, events and async results besides the threads).
///
/// # Errors
///
/// As [`open`].
pub async fn open_service(url: &str) -> Result<Arc<dyn ServiceStore>, StoreError> {
    let store = open_backend(url).await?;
    #[cfg(feature = "crash-points")]
    let store = crate::crash_points::from_env(store)?;
    Ok(store)
}

async fn open_backend(url: &str) -> Result<Arc<dyn ServiceStore>, StoreError> {
    if let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    {
        if path.is_empty() {
            return Err(StoreError::Backend(
                "the SQLite URL names no file: use sqlite:PATH".to_string(),
            ));
        }
        return open_sqlite(path).await;
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return connect_postgres(url).await;
    }
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
    Err(StoreError::Backend(format!(
        "unsupported store URL (scheme \"{scheme}\"): use sqlite:PATH or postgres://USER@HOST/DB"
    )))
}

#[cfg(feature = "sqlite")]
async fn open_sqlite(path: &str) -> Result<Arc<dyn ServiceStore>, StoreError> {
    Ok(Arc::new(crate::SqliteStore::open(path).await?))
}

#[cfg(not(feature = "sqlite"))]
async fn open_sqlite(_: &str) -> Result<Arc<dyn ServiceStore>, StoreError> {
    Err(not_built("SQLite", "sqlite"))
}

#[cfg(feature = "postgres")]
async fn connect_postgres(url: &str) -> Result<Arc<dyn ServiceStore>, StoreError> {
    Ok(Arc::new(crate::PostgresStore::connect(url).await?))
}

#[cfg(not(feature = "postgres"))]
async fn connect_postgres(_: &str) -> Result<Arc<dyn ServiceStore>, StoreError> {
    Err(not_built("PostgreSQL", "postgres"))
}

/// The error for a backend this build was made without.
#[cfg(not(all(feature = "sqlite", feature = "postgres")))]
fn not_built(backend: &str, feature: &str) -> StoreError {
    StoreError::Backend(format!(
        "this build has no {backend} store (toolsmith-store's `{feature}` feature)"
    ))
}
