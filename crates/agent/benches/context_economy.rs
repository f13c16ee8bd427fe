//! What the context-economy layers cost a call: the result limit and the result cache when
//! they have nothing to do (a tool with no limit and no cache), a cache hit, and a result within
//! its limit (the characters counted).
//!
//! Each is measured as a call through a layer stack against the same call through an empty
//! stack, on a current-thread runtime; the difference is the layer's cost.
//!
//! Run: `cargo bench -p toolsmith-agent --bench context_economy`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolsmith_core::layer::{CacheLayer, CacheScope, LayerStack, MemoryCache, ResultLimitLayer};
use toolsmith_core::{ResultLimit, SharedTool, ToolContext, ToolError, ToolMeta, from_fn};

fn tool(meta: ToolMeta) -> SharedTool {
    Arc::new(
        from_fn("lookup", "Looks up.", |_: Value, _cx| async {
            Ok::<_, ToolError>("a short answer, well within any limit")
        })
        .with_meta(meta),
    )
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let cx = ToolContext::for_test("lookup");
    let input = json!({"word": "serendipity", "options": {"lang": "en", "senses": 3}});
    let call = |stack: &LayerStack, tool: &SharedTool| {
        runtime
            .block_on(stack.call(tool, black_box(input.clone()), &cx))
            .unwrap()
    };
    let plain = tool(ToolMeta::new());
    let cached = tool(ToolMeta::new().cache_ttl(Duration::from_secs(3600)));
    let limited = tool(ToolMeta::new().result_limit(ResultLimit::default()));
    let empty = LayerStack::new();
    let mut economy = LayerStack::new();
    economy.push(ResultLimitLayer::new(None));
    economy.push(CacheLayer::new(
        Arc::new(MemoryCache::new(10_000)),
        CacheScope::Thread,
    ));

    let mut group = c.benchmark_group("context_economy");
    group.bench_function("no layers", |b| b.iter(|| call(&empty, &plain)));
    group.bench_function("limit and cache, nothing to do", |b| {
        b.iter(|| call(&economy, &plain))
    });
    group.bench_function("result within its limit", |b| {
        b.iter(|| call(&economy, &limited))
    });
    call(&economy, &cached);
    group.bench_function("cache hit", |b| b.iter(|| call(&economy, &cached)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
