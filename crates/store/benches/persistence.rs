//! What durability costs per tool call: the journal's `intended` row before the call, its
//! settlement after, and the tool message appended to the thread (the three writes the loop
//! makes for a call), on SQLite (a file in a temporary folder, WAL) and, when a PostgreSQL
//! server is given in `TOOLSMITH_BENCH_POSTGRES` (a URL), on PostgreSQL over loopback.
//! Issue 7's targets: at most 100 µs (SQLite) and 1 ms (PostgreSQL) per call.
//!
//! Run: `cargo bench -p toolsmith-store --bench persistence`.

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolsmith_core::{Message, ModelOutput, ToolResultPart};
use toolsmith_store::{
    EffectStatus, JournalEntry, NewThread, PostgresStore, SqliteStore, Store, ThreadStatus,
};

/// One tool call's persistence on `store`, in thread `thread` at `version` (updated).
async fn one_call<S: Store>(store: &S, thread: &str, call: u64, version: &AtomicU64) {
    let id = format!("call_{call}");
    let entry = JournalEntry {
        thread_id: thread.to_string(),
        run_id: "bench-run".to_string(),
        tool_call_id: id.clone(),
        tool_name: "lookup".to_string(),
        seq: call,
        attempt: 1,
        input: json!({"key": "some key", "n": call}),
        side_effect: true,
        idempotent: false,
        idempotency_key: Some(format!("bench-run:{id}")),
        status: EffectStatus::Intended,
        output: None,
    };
    store.journal_intend(&entry).await.unwrap();
    let output = json!({"value": "a result of moderate length, as tools return"});
    store
        .journal_settle("bench-run", &id, 1, EffectStatus::Succeeded, &output)
        .await
        .unwrap();
    let result = Message::tool_results(vec![ToolResultPart {
        tool_call_id: id,
        tool_name: "lookup".into(),
        output: ModelOutput::json(output),
        provider_executed: false,
        provider_metadata: Default::default(),
    }]);
    let v = version.load(Ordering::SeqCst);
    let next = store
        .write(thread, v, call, &[result], ThreadStatus::Running, &[])
        .await
        .unwrap();
    version.store(next, Ordering::SeqCst);
}

fn bench_store<S: Store>(c: &mut Criterion, name: &str, rt: &tokio::runtime::Runtime, store: S) {
    let thread = format!("bench-{name}");
    rt.block_on(store.create_thread(NewThread::new(&thread)))
        .unwrap();
    let version = AtomicU64::new(0);
    let calls = AtomicU64::new(0);
    c.bench_function(&format!("persistence/{name}/per_tool_call"), |b| {
        b.to_async(rt).iter(|| async {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            one_call(&store, &thread, call, &version).await;
        })
    });
}

fn persistence(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = rt
        .block_on(SqliteStore::open(dir.path().join("bench.db")))
        .unwrap();
    bench_store(c, "sqlite", &rt, sqlite);
    if let Ok(url) = std::env::var("TOOLSMITH_BENCH_POSTGRES") {
        let postgres = rt.block_on(PostgresStore::connect(&url)).unwrap();
        bench_store(c, "postgres", &rt, postgres);
    }
}

criterion_group!(benches, persistence);
criterion_main!(benches);
