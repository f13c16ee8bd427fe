//! The memory store's [`CacheStore`]: a map under a lock of its own, apart from the threads'
//! (a cache read never waits for a commit).

use std::collections::HashMap;

use async_trait::async_trait;

use super::MemoryStore;
use crate::{CacheStore, StoreError};

/// The cached values by key, with the moment each expires (milliseconds since the epoch).
pub(super) type Entries = HashMap<Vec<u8>, (u64, Vec<u8>)>;

impl MemoryStore {
    fn cache(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves the map itself intact.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl CacheStore for MemoryStore {
    async fn cache_get(&self, key: &[u8], now: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let mut entries = self.cache();
        match entries.get(key) {
            Some((expires_at, value)) if *expires_at > now => Ok(Some(value.clone())),
            Some(_) => {
                entries.remove(key);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn cache_put(&self, key: &[u8], value: &[u8], expires_at: u64) -> Result<(), StoreError> {
        self.cache()
            .insert(key.to_vec(), (expires_at, value.to_vec()));
        Ok(())
    }

    async fn cache_sweep(&self, now: u64, limit: usize) -> Result<usize, StoreError> {
        let mut entries = self.cache();
        let expired: Vec<Vec<u8>> = entries
            .iter()
            .filter(|(_, (expires_at, _))| *expires_at <= now)
            .map(|(key, _)| key.clone())
            .take(limit)
            .collect();
        for key in &expired {
            entries.remove(key);
        }
        Ok(expired.len())
    }
}
