//! The rules of [`CacheStore`], checked on the backend itself and through [`StoreCache`] over
//! it: a miss, a round trip of a whole output, overwrites, expiry (by a clock the rules move,
//! never by sleeping), keys kept apart, a large value, concurrent puts and the bounded sweep.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use toolsmith_core::layer::ResultCache;
use toolsmith_core::{Artifact, ContentPart, ModelOutput, ToolOutput};

use crate::{CacheStore, SWEEP_INTERVAL, SecretKey, StoreCache};

/// A clock the rules set by hand (milliseconds since the epoch).
#[derive(Clone)]
struct Clock(Arc<AtomicU64>);

impl Clock {
    fn at(now: u64) -> Self {
        Clock(Arc::new(AtomicU64::new(now)))
    }

    fn set(&self, now: u64) {
        self.0.store(now, Ordering::SeqCst);
    }
}

/// A cache over `store` with `key`, reading `clock`.
fn cache<S: CacheStore>(store: &Arc<S>, key: &SecretKey, clock: &Clock) -> StoreCache<S> {
    let clock = clock.0.clone();
    StoreCache::new(store.clone(), key.clone()).with_clock(move || clock.load(Ordering::SeqCst))
}

/// An output with every part a cached result keeps: the app value, what the model sees (apart
/// from it) and an artifact.
fn rich_output() -> ToolOutput {
    ToolOutput::json(json!({"rows": [1, 2, 3], "name": "ünïcode ✓", "none": null}))
        .with_model_output(ModelOutput::Content {
            value: vec![
                ContentPart::Text {
                    text: "3 rows".into(),
                },
                ContentPart::Image {
                    data: "iVBORw0KGgo=".into(),
                    media_type: "image/png".into(),
                },
            ],
        })
        .with_artifact(Artifact {
            kind: "table".into(),
            data: json!([[1, 2], [3, 4]]),
            mime_type: Some("text/csv".into()),
        })
}

const MINUTE: Duration = Duration::from_secs(60);

/// The rules on the backend itself: what it stores is what it returns, an expired entry is not
/// returned and is deleted when read, and a sweep deletes at most its limit of expired entries.
pub(super) async fn backend<S: CacheStore>(store: &S) {
    assert_eq!(
        store.cache_get(b"raw-missing", 0).await.unwrap(),
        None,
        "an unknown key is a miss"
    );
    let bytes: Vec<u8> = (0..=255).collect();
    store.cache_put(b"raw-a", &bytes, 2_000).await.unwrap();
    assert_eq!(
        store.cache_get(b"raw-a", 1_999).await.unwrap().as_deref(),
        Some(bytes.as_slice()),
        "bytes are returned as stored until they expire"
    );
    assert_eq!(
        store.cache_get(b"raw-a", 2_000).await.unwrap(),
        None,
        "an entry has expired at its expiry moment"
    );
    assert_eq!(
        store.cache_get(b"raw-a", 0).await.unwrap(),
        None,
        "reading an expired entry deleted it"
    );
    store.cache_put(b"raw-b", b"old", 1_000).await.unwrap();
    store.cache_put(b"raw-b", b"new", 5_000).await.unwrap();
    assert_eq!(
        store.cache_get(b"raw-b", 3_000).await.unwrap().as_deref(),
        Some(&b"new"[..]),
        "a put replaces the value and its expiry"
    );

    store
        .cache_put(b"raw-never", b"kept", u64::MAX)
        .await
        .unwrap();
    assert_eq!(
        store
            .cache_get(b"raw-never", 4_000_000_000_000)
            .await
            .unwrap()
            .as_deref(),
        Some(&b"kept"[..]),
        "an entry until the end of time (u64::MAX) is kept"
    );

    // The sweep: three expired, one alive.
    for (key, expires_at) in [
        (&b"raw-s1"[..], 10),
        (b"raw-s2", 20),
        (b"raw-s3", 30),
        (b"raw-s4", 10_000),
    ] {
        store.cache_put(key, b"x", expires_at).await.unwrap();
    }
    assert_eq!(
        store.cache_sweep(30, 2).await.unwrap(),
        2,
        "a sweep stops at its limit"
    );
    assert_eq!(store.cache_sweep(30, 2).await.unwrap(), 1);
    assert_eq!(store.cache_sweep(30, 2).await.unwrap(), 0);
    assert_eq!(
        store.cache_get(b"raw-s4", 30).await.unwrap().as_deref(),
        Some(&b"x"[..]),
        "a sweep leaves what has not expired"
    );
    assert_eq!(
        store.cache_sweep(10_000, 10).await.unwrap(),
        2,
        "raw-s4 and raw-b, both expired by then"
    );
}

/// The rules through [`StoreCache`]: misses, round trips, overwrites, expiry and keys kept
/// apart (by scope, by tool, by input, by secret key).
pub(super) async fn adapter<S: CacheStore>(store: Arc<S>) {
    let key = SecretKey::generate();
    let clock = Clock::at(1_000_000);
    let cache = cache(&store, &key, &clock);
    let name = "thread-1\u{0}lookup{\"q\":\"x\"}";

    assert_eq!(cache.get(name).await, None, "nothing cached yet: a miss");
    cache.put(name.into(), &rich_output(), MINUTE).await;
    assert_eq!(
        cache.get(name).await,
        Some(rich_output()),
        "the whole output comes back: value, model output and artifacts"
    );

    let newer = ToolOutput::text("newer");
    cache.put(name.into(), &newer, MINUTE).await;
    assert_eq!(cache.get(name).await, Some(newer), "a put overwrites");

    // Expiry, by the cache's clock.
    let short = "thread-1\u{0}lookup{\"q\":\"short\"}";
    cache
        .put(
            short.into(),
            &ToolOutput::text("brief"),
            Duration::from_secs(1),
        )
        .await;
    clock.set(1_000_999);
    assert_eq!(
        cache.get(short).await,
        Some(ToolOutput::text("brief")),
        "served until its time-to-live has passed"
    );
    clock.set(1_001_000);
    assert_eq!(cache.get(short).await, None, "never served once expired");
    cache
        .put(short.into(), &ToolOutput::text("zero"), Duration::ZERO)
        .await;
    assert_eq!(
        cache.get(short).await,
        None,
        "a zero time-to-live keeps nothing"
    );

    // Keys apart: another thread, another tool, another input, a name that extends another.
    for other in [
        "thread-2\u{0}lookup{\"q\":\"x\"}",
        "thread-1\u{0}search{\"q\":\"x\"}",
        "thread-1\u{0}lookup{\"q\":\"y\"}",
        "thread-1\u{0}lookup{\"q\":\"x\"}\u{0}",
        "",
    ] {
        assert_eq!(cache.get(other).await, None, "{other:?} is another key");
    }
    let others = "thread-2\u{0}lookup{\"q\":\"x\"}";
    cache
        .put(others.into(), &ToolOutput::text("thread 2's"), MINUTE)
        .await;
    assert_eq!(cache.get(name).await, Some(ToolOutput::text("newer")));
    assert_eq!(
        cache.get(others).await,
        Some(ToolOutput::text("thread 2's"))
    );
    // Another secret key over the same store sees none of it.
    let stranger = self::cache(&store, &SecretKey::generate(), &clock);
    assert_eq!(
        stranger.get(name).await,
        None,
        "entries are keyed by the secret key too"
    );

    // A large value: 2 MiB of text in several scripts.
    let large = ToolOutput::text("ünïcode ✓ log line\n".repeat(2 * 1024 * 1024 / 22));
    cache.put("large".into(), &large, MINUTE).await;
    assert_eq!(cache.get("large").await, Some(large), "a large value whole");
}

/// Concurrent puts: each of its own key and all of one shared key. Every own key is served,
/// and the shared one holds one whole value among those put.
pub(super) async fn concurrent_puts<S: CacheStore>(store: Arc<S>) {
    let key = SecretKey::generate();
    let clock = Clock::at(2_000_000);
    let cache = Arc::new(cache(&store, &key, &clock));
    let puts = (0..24).map(|i| {
        let cache = cache.clone();
        tokio::spawn(async move {
            let value = ToolOutput::text(format!("value {i}"));
            cache.put(format!("own-{i}"), &value, MINUTE).await;
            cache.put("shared".into(), &value, MINUTE).await;
        })
    });
    for put in puts.collect::<Vec<_>>() {
        put.await.expect("a put task");
    }
    for i in 0..24 {
        assert_eq!(
            cache.get(&format!("own-{i}")).await,
            Some(ToolOutput::text(format!("value {i}"))),
            "own-{i} survived the others' puts"
        );
    }
    let shared = cache
        .get("shared")
        .await
        .expect("the shared key holds a value");
    let text = shared.model.to_text();
    let n: usize = text
        .strip_prefix("value ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a whole value, not {text:?}"));
    assert!(n < 24, "{text}");
}

/// The sweep a cache makes by itself, after a put at most once a [`SWEEP_INTERVAL`]: entries
/// nobody reads again are deleted.
pub(super) async fn sweeps<S: CacheStore>(store: Arc<S>) {
    let key = SecretKey::generate();
    let start = 3_000_000;
    let clock = Clock::at(start);
    let cache = cache(&store, &key, &clock);
    // The first put sweeps (this cache never did); these two expire a second later.
    for name in ["sweep-1", "sweep-2"] {
        cache
            .put(name.into(), &ToolOutput::text("x"), Duration::from_secs(1))
            .await;
    }
    clock.set(start + 2_000);
    cache
        .put("sweep-3".into(), &ToolOutput::text("x"), MINUTE)
        .await;
    assert_eq!(
        store.cache_sweep(start + 2_000, 10).await.unwrap(),
        2,
        "no sweep within the interval of the last one: both expired entries are still there"
    );
    cache
        .put(
            "sweep-4".into(),
            &ToolOutput::text("x"),
            Duration::from_secs(1),
        )
        .await;
    clock.set(start + SWEEP_INTERVAL.as_millis() as u64 + 1_000);
    cache
        .put("sweep-5".into(), &ToolOutput::text("x"), MINUTE)
        .await;
    assert_eq!(
        cache.sweep().await.unwrap(),
        0,
        "the put after the interval swept what had expired"
    );
    assert_eq!(cache.get("sweep-5").await, Some(ToolOutput::text("x")));
}
