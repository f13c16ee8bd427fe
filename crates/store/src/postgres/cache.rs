//! PostgreSQL's [`CacheStore`]: the `result_cache` table (schema version 9), as SQLite's.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::{PostgresStore, backend};
use crate::{CacheStore, StoreError};

/// A moment as the column stores it (a signed 64-bit integer): one past its range, such as
/// `u64::MAX` for "never", is the latest it holds.
fn millis(moment: u64) -> i64 {
    i64::try_from(moment).unwrap_or(i64::MAX)
}

/// Runs `sql` with `params` as a statement prepared once per connection: how many rows it
/// changed.
async fn execute(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    client.execute(&statement, params).await.map_err(backend)
}

#[async_trait]
impl CacheStore for PostgresStore {
    async fn cache_get(&self, key: &[u8], now: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let client = self.client().await?;
        let select = client
            .prepare_cached("SELECT expires_at, value FROM result_cache WHERE key = $1")
            .await
            .map_err(backend)?;
        let Some(row) = client.query_opt(&select, &[&key]).await.map_err(backend)? else {
            return Ok(None);
        };
        let now = millis(now);
        if row.get::<_, i64>(0) > now {
            return Ok(Some(row.get(1)));
        }
        // Conditional: a put from another process since the read stays.
        execute(
            &client,
            "DELETE FROM result_cache WHERE key = $1 AND expires_at <= $2",
            &[&key, &now],
        )
        .await?;
        Ok(None)
    }

    async fn cache_put(&self, key: &[u8], value: &[u8], expires_at: u64) -> Result<(), StoreError> {
        execute(
            &self.client().await?,
            "INSERT INTO result_cache (key, value, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, \
             expires_at = EXCLUDED.expires_at",
            &[&key, &value, &(millis(expires_at))],
        )
        .await?;
        Ok(())
    }

    async fn cache_sweep(&self, now: u64, limit: usize) -> Result<usize, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Rows another sweep is deleting are skipped, not waited for: two processes sweeping
        // at once delete different rows.
        let deleted = execute(
            &self.client().await?,
            "DELETE FROM result_cache WHERE key IN (SELECT key FROM result_cache \
             WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)",
            &[&(millis(now)), &limit],
        )
        .await?;
        Ok(deleted as usize)
    }
}
