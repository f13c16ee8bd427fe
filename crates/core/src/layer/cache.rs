//! [`CacheLayer`]: successful results served again for the same call within a tool's
//! [`cache_ttl`](crate::ToolMeta::cache_ttl), as RadarOS's per-tool `cache: {ttl}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Call, Layer, Next};
use crate::schema::canonical_key;
use crate::{ToolContext, ToolError, ToolMeta, ToolOutput};

/// Where cached results are kept. [`MemoryCache`] is the one in the box; a store may keep them
/// across processes.
#[async_trait::async_trait]
pub trait ResultCache: Send + Sync + 'static {
    /// The result stored under `key`, unless it expired (an expired entry is dropped).
    async fn get(&self, key: &str) -> Option<ToolOutput>;
    /// Stores `output` under `key` for `ttl`.
    async fn put(&self, key: String, output: &ToolOutput, ttl: Duration);
}

/// Which calls share cached results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheScope {
    /// The calls of one thread (of one run when the run has no thread). The default: one
    /// user's results are never served to another's conversation.
    #[default]
    Thread,
    /// Every call of the agent, whoever makes it: for results that depend on the arguments
    /// alone (a public price list, a dictionary).
    Shared,
}

/// Serves a tool's successful results again for the same tool and the same arguments — in
/// canonical form, so key order and spacing do not matter and nested fields do (RadarOS keys
/// on a `JSON.stringify` whose key list also drops nested keys: two calls differing only in a
/// nested field could share a result; not here) — for the tool's `cache_ttl`.
///
/// - Only tools with a `cache_ttl`, and never a tool with a side effect that is not idempotent
///   (its call must run each time).
/// - Only successes are stored; an expired entry is dropped when it is read.
/// - A hit is marked in the run's stream: a `data` part `cached` for the call (`{"ttlMs"}`),
///   before its `tool-result`; the model sees the result as it was.
/// - The agent places it inside the run's journal: a resumed call whose outcome the journal
///   recorded gets that outcome, never a cached one.
///
/// ```
/// use std::sync::Arc;
/// use toolsmith_core::layer::{CacheLayer, CacheScope, MemoryCache};
///
/// let layer = CacheLayer::new(Arc::new(MemoryCache::new(10_000)), CacheScope::Thread);
/// ```
#[derive(Clone)]
pub struct CacheLayer {
    cache: Arc<dyn ResultCache>,
    scope: CacheScope,
}

impl CacheLayer {
    /// A layer keeping results in `cache`, shared as `scope` says.
    pub fn new(cache: Arc<dyn ResultCache>, scope: CacheScope) -> Self {
        CacheLayer { cache, scope }
    }

    fn key(&self, call: &Call<'_>) -> String {
        let scope = match self.scope {
            CacheScope::Thread => call.cx.thread_id().unwrap_or(call.cx.run_id()),
            CacheScope::Shared => "",
        };
        format!(
            "{scope}\u{0}{}",
            canonical_key(call.tool.spec().name(), &call.input)
        )
    }
}

/// Whether a tool's results may be cached, and for how long.
pub fn cacheable(meta: &ToolMeta) -> Option<Duration> {
    let ttl = meta.cache_ttl?;
    (!meta.side_effect || meta.is_idempotent()).then_some(ttl)
}

impl std::fmt::Debug for CacheLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheLayer")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl Layer for CacheLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let Some(ttl) = cacheable(call.tool.meta()) else {
            return next.run(call).await;
        };
        let key = self.key(&call);
        let cx: &ToolContext = call.cx;
        if let Some(output) = self.cache.get(&key).await {
            cx.emit("cached", json!({ "ttlMs": ttl.as_millis() as u64 }));
            return Ok(output);
        }
        let output = next.run(call).await?;
        self.cache.put(key, &output, ttl).await;
        Ok(output)
    }
}

/// Results kept in memory, at most `capacity` of them: past it, expired entries are dropped
/// first, then the ones closest to expiring.
#[derive(Debug)]
pub struct MemoryCache {
    entries: Mutex<HashMap<String, (Instant, ToolOutput)>>,
    capacity: usize,
}

impl MemoryCache {
    /// An empty cache holding at most `capacity` results (at least one).
    pub fn new(capacity: usize) -> Self {
        MemoryCache {
            entries: Mutex::default(),
            capacity: capacity.max(1),
        }
    }

    /// How many results it holds, expired ones included until they are read or pushed out.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, ToolOutput)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl ResultCache for MemoryCache {
    async fn get(&self, key: &str) -> Option<ToolOutput> {
        let mut entries = self.lock();
        match entries.get(key) {
            Some((expires, output)) if *expires > Instant::now() => Some(output.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    async fn put(&self, key: String, output: &ToolOutput, ttl: Duration) {
        let now = Instant::now();
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (expires, _)| *expires > now);
            if entries.len() >= self.capacity
                && let Some(first) = entries
                    .iter()
                    .min_by_key(|(_, (expires, _))| *expires)
                    .map(|(k, _)| k.clone())
            {
                entries.remove(&first);
            }
        }
        entries.insert(key, (now + ttl, output.clone()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Value, json};

    use super::*;
    use crate::layer::LayerStack;
    use crate::{CancellationToken, RunScope, SharedTool, ToolMeta, from_fn};

    /// A tool counting its runs, failing when asked to.
    fn counting(meta: ToolMeta, runs: Arc<AtomicUsize>) -> SharedTool {
        Arc::new(
            from_fn("lookup", "Looks up.", move |input: Value, _cx| {
                let runs = runs.clone();
                async move {
                    let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                    if input["fail"] == true {
                        return Err(ToolError::msg("no"));
                    }
                    Ok::<_, ToolError>(format!("run {n}"))
                }
            })
            .with_meta(meta),
        )
    }

    fn cx(thread: Option<&str>) -> ToolContext {
        let mut scope = RunScope::new("run-1");
        scope.thread_id = thread.map(Into::into);
        ToolContext::new(
            Arc::new(scope),
            0,
            "call-1".into(),
            "lookup".into(),
            CancellationToken::new(),
        )
    }

    fn stack(scope: CacheScope) -> LayerStack {
        let mut stack = LayerStack::new();
        stack.push(CacheLayer::new(Arc::new(MemoryCache::new(100)), scope));
        stack
    }

    async fn text(stack: &LayerStack, tool: &SharedTool, input: Value, cx: &ToolContext) -> String {
        stack.call(tool, input, cx).await.unwrap().model.to_text()
    }

    #[tokio::test]
    async fn the_same_call_in_canonical_form_is_served_from_the_cache() {
        let runs = Arc::new(AtomicUsize::new(0));
        let tool = counting(
            ToolMeta::new().cache_ttl(Duration::from_secs(60)),
            runs.clone(),
        );
        let stack = stack(CacheScope::Thread);
        let cx = cx(Some("t1"));
        let a = json!({"q": "x", "opts": {"deep": 1, "wide": 2}});
        let b = json!({"opts": {"wide": 2, "deep": 1}, "q": "x"});
        assert_eq!(text(&stack, &tool, a, &cx).await, "run 1");
        assert_eq!(text(&stack, &tool, b, &cx).await, "run 1");
        // A nested field differs: another call (RadarOS's key would have collided).
        let c = json!({"q": "x", "opts": {"deep": 2, "wide": 2}});
        assert_eq!(text(&stack, &tool, c, &cx).await, "run 2");
        // Another thread has a cache of its own.
        let d = json!({"q": "x", "opts": {"deep": 1, "wide": 2}});
        assert_eq!(
            text(&stack, &tool, d.clone(), &self::cx(Some("t2"))).await,
            "run 3"
        );
        // Shared across threads when the scope says so.
        let shared = self::stack(CacheScope::Shared);
        assert_eq!(
            text(&shared, &tool, d.clone(), &self::cx(Some("t1"))).await,
            "run 4"
        );
        assert_eq!(
            text(&shared, &tool, d, &self::cx(Some("t2"))).await,
            "run 4"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn failures_expired_entries_and_unsafe_tools_are_never_served() {
        let runs = Arc::new(AtomicUsize::new(0));
        let tool = counting(
            ToolMeta::new().cache_ttl(Duration::from_millis(30)),
            runs.clone(),
        );
        let stack = stack(CacheScope::Thread);
        let cx = cx(None);
        for _ in 0..2 {
            assert!(stack.call(&tool, json!({"fail": true}), &cx).await.is_err());
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2, "an error is not cached");
        assert_eq!(text(&stack, &tool, json!({}), &cx).await, "run 3");
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            text(&stack, &tool, json!({}), &cx).await,
            "run 4",
            "expired"
        );

        let effects = Arc::new(AtomicUsize::new(0));
        let payment = counting(
            ToolMeta::new()
                .side_effect(true)
                .cache_ttl(Duration::from_secs(60)),
            effects.clone(),
        );
        text(&stack, &payment, json!({}), &cx).await;
        text(&stack, &payment, json!({}), &cx).await;
        assert_eq!(
            effects.load(Ordering::SeqCst),
            2,
            "a side effect runs each time"
        );
        let idempotent = counting(
            ToolMeta::new()
                .side_effect(true)
                .idempotent(true)
                .cache_ttl(Duration::from_secs(60)),
            effects.clone(),
        );
        text(&stack, &idempotent, json!({"n": 1}), &cx).await;
        text(&stack, &idempotent, json!({"n": 1}), &cx).await;
        assert_eq!(
            effects.load(Ordering::SeqCst),
            3,
            "an idempotent one may be cached"
        );
    }

    #[tokio::test]
    async fn a_full_cache_drops_what_expires_first() {
        let cache = MemoryCache::new(2);
        let out = ToolOutput::text("x");
        cache.put("a".into(), &out, Duration::from_secs(10)).await;
        cache.put("b".into(), &out, Duration::from_secs(1)).await;
        cache.put("c".into(), &out, Duration::from_secs(10)).await;
        assert_eq!(cache.len(), 2);
        assert!(cache.get("b").await.is_none());
        assert!(cache.get("a").await.is_some() && cache.get("c").await.is_some());
    }
}
