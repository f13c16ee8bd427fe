//! [`StoreCache`]: tools' cached results kept in a store, so that runs in other processes (and
//! later runs of this one) are served them too. Its contract is on the type.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use toolsmith_core::ToolOutput;
use toolsmith_core::layer::ResultCache;

use crate::store::now_millis;
use crate::{CacheStore, SecretKey, StoreError};

/// The most expired entries one sweep deletes.
pub const SWEEP_LIMIT: usize = 256;

/// How often a cache sweeps, at most: the first put after this long since its last sweep
/// sweeps.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// The purpose the digest key is derived for ([`SecretKey::derive`]).
const DIGEST_PURPOSE: &str = "result cache keys";

/// Tools' results cached in a store ([`CacheStore`]: every [`Store`](crate::Store) is one):
/// the [`ResultCache`] to hand an agent (`AgentBuilder::result_cache`) so that its runs, in
/// this process and others on the same database, share what they cached.
///
/// The contract, over any backend:
/// - **Keys.** The agent's cache layer names a call by its scope (the thread, or nothing when
///   shared), its tool and its canonical input. The store gets a keyed SHA-256 digest of that
///   name instead (the key derived from the [`SecretKey`]): fixed in size however large the
///   input, and telling nothing of the thread or the input to whoever reads the database.
/// - **Values.** The whole [`ToolOutput`] (the application's value, what the model sees, the
///   artifacts) as JSON, sealed with the secret key (AES-256-GCM) together with the key's
///   digest, so a value moved to another key does not open. Sealed because the cache sits
///   inside the layer that masks a run's secret variables: what it keeps is the output as the
///   tool returned it, secrets and all, which a thread's messages never hold in clear.
/// - **Expiry.** An entry lives for the tool's `cache_ttl` from its put, by this cache's clock
///   (the system's, milliseconds since the epoch, unless [`with_clock`](StoreCache::with_clock)
///   gives another): processes sharing a database should keep their clocks in sync. An expired
///   entry is never served; reading it deletes it, and a bounded sweep
///   ([`SWEEP_LIMIT`] entries, at most once a [`SWEEP_INTERVAL`], after a put) deletes those
///   nobody reads again. A put replaces what the key held.
/// - **Failures never fail a call.** A store that cannot be read is a miss; a value that does
///   not open (sealed with another key, altered) or parse is a miss; a put that fails is
///   dropped. Each is logged (a `tracing` warning naming the store's error, never the key or
///   the value) and the call goes on as if nothing were cached.
///
/// A new secret key makes every earlier entry unreachable (its digests differ): they expire
/// and are swept as any other.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use toolsmith_core::ToolOutput;
/// use toolsmith_core::layer::ResultCache;
/// use toolsmith_store::{MemoryStore, SecretKey, Store, StoreCache};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// // Any store, as `toolsmith_store::open(url)` gives it.
/// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
/// let cache = StoreCache::new(store, SecretKey::generate());
/// let out = ToolOutput::text("3 rows");
/// cache.put("thread-1\u{0}lookup{}".into(), &out, Duration::from_secs(60)).await;
/// assert_eq!(cache.get("thread-1\u{0}lookup{}").await, Some(out));
/// assert_eq!(cache.get("thread-2\u{0}lookup{}").await, None);
/// # });
/// ```
pub struct StoreCache<S: CacheStore + ?Sized> {
    store: Arc<S>,
    key: SecretKey,
    /// The key of the digests that name entries, derived from `key`.
    digest_key: [u8; 32],
    clock: Arc<dyn Fn() -> u64 + Send + Sync>,
    /// When this cache last swept (by its clock); 0 before it ever did.
    last_sweep: AtomicU64,
}

impl<S: CacheStore + ?Sized> fmt::Debug for StoreCache<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Neither key is printed.
        f.debug_struct("StoreCache").finish_non_exhaustive()
    }
}

impl<S: CacheStore + ?Sized> StoreCache<S> {
    /// A cache in `store`, its values sealed with `key` (the key that seals secret variables:
    /// [`SecretKey::load`]). Processes share entries when they share the database and the key.
    pub fn new(store: Arc<S>, key: SecretKey) -> Self {
        StoreCache {
            store,
            digest_key: key.derive(DIGEST_PURPOSE),
            key,
            clock: Arc::new(now_millis),
            last_sweep: AtomicU64::new(0),
        }
    }

    /// Reads the time from `clock` (milliseconds since the Unix epoch) instead of the system:
    /// for tests that expire entries without waiting, or a clock kept in sync by other means.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    /// use toolsmith_core::ToolOutput;
    /// use toolsmith_core::layer::ResultCache;
    /// use toolsmith_store::{MemoryStore, SecretKey, StoreCache};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let now = Arc::new(AtomicU64::new(1_000));
    /// let clock = now.clone();
    /// let cache = StoreCache::new(Arc::new(MemoryStore::new()), SecretKey::generate())
    ///     .with_clock(move || clock.load(Ordering::SeqCst));
    /// cache.put("k".into(), &ToolOutput::text("v"), Duration::from_secs(1)).await;
    /// now.store(2_000, Ordering::SeqCst);
    /// assert_eq!(cache.get("k").await, None, "expired at 2 000");
    /// # });
    /// ```
    pub fn with_clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Deletes at most [`SWEEP_LIMIT`] expired entries now: how many it deleted. A cache
    /// sweeps by itself after puts; this is for a caller that wants it done at a time of its
    /// choosing (a maintenance job).
    ///
    /// # Errors
    ///
    /// The store's.
    pub async fn sweep(&self) -> Result<usize, StoreError> {
        let now = (self.clock)();
        self.last_sweep.store(now, Ordering::Relaxed);
        self.store.cache_sweep(now, SWEEP_LIMIT).await
    }

    /// The name the store keeps the entry for `key` under.
    fn digest(&self, key: &str) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.digest_key);
        hash.update(key.as_bytes());
        hash.finalize().into()
    }

    /// `output` as stored: its digest and its JSON, sealed.
    fn seal(&self, digest: &[u8; 32], output: &ToolOutput) -> Result<Vec<u8>, String> {
        let mut plain = digest.to_vec();
        serde_json::to_writer(&mut plain, output)
            .map_err(|e| format!("the output does not serialise: {e}"))?;
        Ok(self.key.seal(&plain))
    }

    /// The output a stored value holds, if it was sealed for `digest` with this key.
    fn open(&self, digest: &[u8; 32], sealed: &[u8]) -> Result<ToolOutput, String> {
        let plain = self.key.open(sealed).map_err(|e| e.to_string())?;
        let json = plain
            .strip_prefix(digest.as_slice())
            .ok_or("the value was stored under another key")?;
        serde_json::from_slice(json).map_err(|e| format!("the value does not parse: {e}"))
    }

    /// Sweeps when the last sweep is [`SWEEP_INTERVAL`] old; one caller of several at once.
    async fn sweep_if_due(&self, now: u64) {
        let last = self.last_sweep.load(Ordering::Relaxed);
        let due = now.saturating_sub(last) >= SWEEP_INTERVAL.as_millis() as u64;
        if !due
            || self
                .last_sweep
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        if let Err(error) = self.store.cache_sweep(now, SWEEP_LIMIT).await {
            tracing::warn!(%error, "the result cache could not sweep expired entries");
        }
    }
}

#[async_trait::async_trait]
impl<S: CacheStore + ?Sized> ResultCache for StoreCache<S> {
    async fn get(&self, key: &str) -> Option<ToolOutput> {
        let digest = self.digest(key);
        let sealed = match self.store.cache_get(&digest, (self.clock)()).await {
            Ok(found) => found?,
            Err(error) => {
                tracing::warn!(%error, "the result cache could not be read: served as a miss");
                return None;
            }
        };
        match self.open(&digest, &sealed) {
            Ok(output) => Some(output),
            Err(error) => {
                tracing::warn!(%error, "a cached result does not open: served as a miss");
                None
            }
        }
    }

    async fn put(&self, key: String, output: &ToolOutput, ttl: Duration) {
        let now = (self.clock)();
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        // Expired as soon as stored: nothing to keep.
        if ttl == 0 {
            return;
        }
        let digest = self.digest(&key);
        let stored = match self.seal(&digest, output) {
            Ok(sealed) => {
                self.store
                    .cache_put(&digest, &sealed, now.saturating_add(ttl))
                    .await
            }
            Err(error) => Err(StoreError::Corrupt(error)),
        };
        if let Err(error) = stored {
            tracing::warn!(%error, "a result could not be cached: the call goes on uncached");
        }
        self.sweep_if_due(now).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    /// A store whose every cache operation fails.
    struct Broken;

    #[async_trait::async_trait]
    impl CacheStore for Broken {
        async fn cache_get(&self, _: &[u8], _: u64) -> Result<Option<Vec<u8>>, StoreError> {
            Err(StoreError::Backend("the disk is on fire".into()))
        }

        async fn cache_put(&self, _: &[u8], _: &[u8], _: u64) -> Result<(), StoreError> {
            Err(StoreError::Backend("the disk is on fire".into()))
        }

        async fn cache_sweep(&self, _: u64, _: usize) -> Result<usize, StoreError> {
            Err(StoreError::Backend("the disk is on fire".into()))
        }
    }

    #[tokio::test]
    async fn a_failing_store_is_a_miss_and_a_dropped_put() {
        let cache = StoreCache::new(Arc::new(Broken), SecretKey::generate());
        let out = ToolOutput::text("x");
        cache.put("k".into(), &out, Duration::from_secs(60)).await;
        assert_eq!(cache.get("k").await, None);
        assert!(cache.sweep().await.is_err(), "an explicit sweep reports it");
    }

    #[tokio::test]
    async fn values_are_sealed_and_bound_to_their_key() {
        let store = Arc::new(MemoryStore::new());
        let key = SecretKey::generate();
        let cache = StoreCache::new(store.clone(), key.clone());
        let out = ToolOutput::text("sk-live-123");
        cache.put("a".into(), &out, Duration::from_secs(60)).await;
        cache
            .put("b".into(), &ToolOutput::text("b"), Duration::from_secs(60))
            .await;
        let (a, b) = (cache.digest("a"), cache.digest("b"));
        let now = now_millis();
        let sealed = store.cache_get(&a, now).await.unwrap().unwrap();
        assert!(
            !sealed.windows(11).any(|w| w == b"sk-live-123"),
            "the store holds ciphertext"
        );
        assert_ne!(
            a.as_slice(),
            Sha256::digest(b"a").as_slice(),
            "the digest is keyed"
        );
        // A's value moved under b's digest (by someone who can write the database) is a miss.
        store.cache_put(&b, &sealed, u64::MAX).await.unwrap();
        assert_eq!(cache.get("b").await, None);
        // Garbage is a miss; the right key still opens what was stored under it.
        store.cache_put(&b, b"garbage", u64::MAX).await.unwrap();
        assert_eq!(cache.get("b").await, None);
        assert_eq!(cache.get("a").await, Some(out));
    }
}
