//! SQLite's [`CacheStore`]: the `result_cache` table (schema version 11), one row a key with
//! the moment it expires, and an index of those moments for the bounded sweep.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, backend};
use crate::{CacheStore, StoreError};

/// A moment as the column stores it (a signed 64-bit integer): one past its range, such as
/// `u64::MAX` for "never", is the latest it holds.
fn millis(moment: u64) -> i64 {
    i64::try_from(moment).unwrap_or(i64::MAX)
}

#[async_trait]
impl CacheStore for SqliteStore {
    async fn cache_get(&self, key: &[u8], now: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let key = key.to_vec();
        // A value may be large: read off the async executor.
        self.with_long(move |conn| {
            let row: Option<(i64, Vec<u8>)> = conn
                .prepare_cached("SELECT expires_at, value FROM result_cache WHERE key = ?1")
                .and_then(|mut select| select.query_row([&key], |r| Ok((r.get(0)?, r.get(1)?))))
                .optional()
                .map_err(backend)?;
            match row {
                Some((expires_at, value)) if expires_at > millis(now) => Ok(Some(value)),
                Some(_) => {
                    // Conditional: a put from another process since the read stays.
                    conn.prepare_cached(
                        "DELETE FROM result_cache WHERE key = ?1 AND expires_at <= ?2",
                    )
                    .and_then(|mut delete| delete.execute(params![key, millis(now)]))
                    .map_err(backend)?;
                    Ok(None)
                }
                None => Ok(None),
            }
        })
        .await
    }

    async fn cache_put(&self, key: &[u8], value: &[u8], expires_at: u64) -> Result<(), StoreError> {
        let (key, value) = (key.to_vec(), value.to_vec());
        self.with_long(move |conn| {
            conn.prepare_cached(
                "INSERT INTO result_cache (key, value, expires_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value, \
                 expires_at = excluded.expires_at",
            )
            .and_then(|mut upsert| upsert.execute(params![key, value, millis(expires_at)]))
            .map_err(backend)?;
            Ok(())
        })
        .await
    }

    async fn cache_sweep(&self, now: u64, limit: usize) -> Result<usize, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_long(move |conn| {
            conn.prepare_cached(
                "DELETE FROM result_cache WHERE key IN \
                 (SELECT key FROM result_cache WHERE expires_at <= ?1 LIMIT ?2)",
            )
            .and_then(|mut delete| delete.execute(params![millis(now), limit]))
            .map_err(backend)
        })
        .await
    }
}
