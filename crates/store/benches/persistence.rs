//! What durability costs per tool call, and how many runs one SQLite file sustains.
//!
//! `per_tool_call`: the writes a stored run makes for one call of a side-effecting,
//! non-idempotent tool (the most a call costs), in a step of its own, as sequential execution
//! makes them: the step's assistant message saved with the journal's `intended` row and the
//! ledger claim of its key (one transaction), then the settlement of both with the thread
//! saved with the result (one transaction; the loop's save after a call rewrites the step's
//! assistant message and its tool message). `per_call_in_step`: the same for a further call
//! of a step (the intent alone, then the settlement with the save). `per_tool_call_8k_result`:
//! a call in a step of its own whose tool returns 8 KiB. The calls are made inside a task on
//! a two-worker runtime, as runs make them. On SQLite (a file in a temporary
//! folder, WAL) and, when a PostgreSQL server is given in
//! `TOOLSMITH_BENCH_POSTGRES` (a URL), on PostgreSQL over loopback. The targets: at most
//! 100 µs (SQLite) and 1 ms (PostgreSQL) per call.
//!
//! `concurrent_runs`: K runs at once, each its own thread of 5 such calls (a claim, then the
//! step's assistant message, then the calls), on one SQLite file: through one store (one
//! connection, as one process) and through K stores (K connections, as K processes).
//! Throughput is in calls.
//!
//! Run: `cargo bench -p toolsmith-store --bench persistence` (the `sqlite` feature; PostgreSQL
//! with the `postgres` feature too, both on by default).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use toolsmith_core::{Message, ModelOutput, Part, Role, ToolCallPart, ToolResultPart};
use toolsmith_store::{
    Batch, Claim, EffectStatus, Holder, JournalEntry, NewThread, Settlement, SqliteStore, Store,
    ThreadStatus, ThreadWrite,
};

/// Calls per run in `concurrent_runs`.
const CALLS_PER_RUN: u64 = 5;

/// What the tool of `per_tool_call_8k_result` returns: 8 KiB.
static LARGE: LazyLock<String> = LazyLock::new(|| "x".repeat(8 * 1024));

/// A thread being written as a run writes it.
struct Writer<S: Store> {
    store: S,
    thread: String,
    run: String,
    version: u64,
    /// The messages stored, and the index of the step's assistant message.
    count: u64,
    assistant: u64,
}

impl<S: Store + Clone + 'static> Writer<S> {
    async fn start(store: S, thread: String) -> Self {
        store.create_thread(NewThread::new(&thread)).await.unwrap();
        let prompt = [Message::user("Look these up.")];
        let write = ThreadWrite::new(&thread, 0, 0, &prompt, ThreadStatus::Running);
        let v = store.commit(Batch::new().write(write)).await.unwrap();
        let v = v.version.unwrap();
        let run = format!("run-{thread}");
        let version = store
            .claim(&thread, v, &run, &Holder::current())
            .await
            .unwrap();
        let mut writer = Writer {
            store,
            thread,
            run,
            version,
            count: 1,
            assistant: 1,
        };
        writer.step().await;
        writer
    }

    /// A new step: its assistant message with one call.
    async fn step(&mut self) {
        let assistant = Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCallPart {
                tool_call_id: format!("call_{}", self.count),
                tool_name: "lookup".into(),
                input: json!({"key": "some key"}),
                provider_executed: false,
                provider_metadata: Default::default(),
            })],
        );
        self.assistant = self.count;
        self.save(self.count, &[assistant]).await;
    }

    async fn save(&mut self, keep: u64, tail: &[Message]) {
        let write = ThreadWrite::new(
            &self.thread,
            self.version,
            keep,
            tail,
            ThreadStatus::Running,
        );
        let committed = self.store.commit(Batch::new().write(write)).await.unwrap();
        self.version = committed.version.unwrap();
        self.count = keep + tail.len() as u64;
    }

    /// One call's writes: journal and ledger before, both after, then the result saved. In a
    /// `new_step`, the step's assistant message is saved with the intent, as a sequential run
    /// saves it.
    async fn call(&mut self, seq: u64, new_step: bool) {
        self.call_returning(
            seq,
            new_step,
            "a result of moderate length, as tools return",
        )
        .await
    }

    /// [`call`](Self::call), the tool returning `value`.
    async fn call_returning(&mut self, seq: u64, new_step: bool, value: &str) {
        let id = format!("call_{seq}");
        let key = format!("{}:{id}", self.run);
        let entry = JournalEntry {
            thread_id: self.thread.clone(),
            run_id: self.run.clone(),
            tool_call_id: id.clone(),
            tool_name: "lookup".to_string(),
            seq,
            attempt: 1,
            input: json!({"key": "some key", "n": seq}),
            side_effect: true,
            idempotent: false,
            idempotency_key: Some(key.clone()),
            accepts_idempotency_key: false,
            has_revert: false,
            status: EffectStatus::Intended,
            output: None,
        };
        let assistant = Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCallPart {
                tool_call_id: id.clone(),
                tool_name: "lookup".into(),
                input: json!({"key": "some key"}),
                provider_executed: false,
                provider_metadata: Default::default(),
            })],
        );
        // The intent with the key's claim (and the step's save): one transaction.
        let committed = if new_step {
            let step = [assistant.clone()];
            let write = ThreadWrite::new(
                &self.thread,
                self.version,
                self.count,
                &step,
                ThreadStatus::Running,
            );
            let batch = Batch::new().write(write).intend(&entry);
            let committed = self.store.commit(batch).await.unwrap();
            (self.version, self.assistant) = (committed.version.unwrap(), self.count);
            committed
        } else {
            self.store
                .commit(Batch::new().intend(&entry))
                .await
                .unwrap()
        };
        assert_eq!(committed.claims, [Claim::New]);
        let output = json!({ "value": value });
        let result = Message::tool_results(vec![ToolResultPart {
            tool_call_id: id,
            tool_name: "lookup".into(),
            output: ModelOutput::json(output.clone()),
            provider_executed: false,
            provider_metadata: Default::default(),
        }]);
        // The outcome in the journal and the ledger, with the thread saved with the result:
        // one transaction (as a sequential run saves it). The loop rewrites from the step's
        // assistant message on.
        let settled = Settlement {
            entry: &entry,
            status: EffectStatus::Succeeded,
            output: &output,
        };
        let messages = [assistant, result];
        let write = ThreadWrite::new(
            &self.thread,
            self.version,
            self.assistant,
            &messages,
            ThreadStatus::Running,
        );
        let batch = Batch::new().settle(settled).write(write);
        let committed = self.store.commit(batch).await.unwrap();
        self.version = committed.version.unwrap();
        self.count = self.assistant + 2;
    }
}

/// One call's writes by a writer, with its sequence number.
type CallOf<S> = fn(&mut Writer<S>, u64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;

/// Times `iters` calls made by `writer` inside a task on the runtime, as a run makes them (a
/// service's runs are tasks, and so is `toolsmith run`'s command); the writer goes back in
/// `slot` for criterion's next batch.
fn timed<S: Store + Clone + 'static>(
    rt: &tokio::runtime::Runtime,
    slot: &mut Option<Writer<S>>,
    calls: &Arc<AtomicU64>,
    iters: u64,
    call: CallOf<S>,
) -> Duration {
    let mut writer = slot.take().expect("the writer is back");
    let calls = calls.clone();
    let task = rt.spawn(async move {
        let start = Instant::now();
        for _ in 0..iters {
            let seq = calls.fetch_add(1, Ordering::SeqCst);
            call(&mut writer, seq).await;
        }
        (writer, start.elapsed())
    });
    let (writer, took) = rt.block_on(task).unwrap();
    *slot = Some(writer);
    took
}

fn per_call<S: Store + Clone + 'static>(
    c: &mut Criterion,
    name: &str,
    rt: &tokio::runtime::Runtime,
    store: S,
) {
    let calls = Arc::new(AtomicU64::new(1));
    // Names of their own: a PostgreSQL database keeps the threads of earlier bench runs.
    let unique = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let start = |label: &str| {
        let writer = Writer::start(store.clone(), format!("bench-{name}-{label}-{unique}"));
        Some(rt.block_on(writer))
    };
    // Each call in a step of its own, as a model calling one tool per turn does.
    let mut writer = start("own");
    c.bench_function(&format!("persistence/{name}/per_tool_call"), |b| {
        b.iter_custom(|iters| {
            timed(rt, &mut writer, &calls, iters, |w, seq| {
                Box::pin(w.call(seq, true))
            })
        })
    });
    let mut writer = start("steps");
    c.bench_function(&format!("persistence/{name}/per_call_in_step"), |b| {
        b.iter_custom(|iters| {
            timed(rt, &mut writer, &calls, iters, |w, seq| {
                Box::pin(w.call(seq, false))
            })
        })
    });
    // A tool returning 8 KiB (a file read, a page of search results): the result's bytes,
    // rather than the number of rows, dominate.
    let mut writer = start("large");
    c.bench_function(
        &format!("persistence/{name}/per_tool_call_8k_result"),
        |b| {
            b.iter_custom(|iters| {
                timed(rt, &mut writer, &calls, iters, |w, seq| {
                    Box::pin(w.call_returning(seq, true, &LARGE))
                })
            })
        },
    );
}

fn persistence(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = rt
        .block_on(SqliteStore::open(dir.path().join("bench.db")))
        .unwrap();
    per_call(c, "sqlite", &rt, sqlite);
    #[cfg(feature = "postgres")]
    if let Ok(url) = std::env::var("TOOLSMITH_BENCH_POSTGRES") {
        let postgres = rt
            .block_on(toolsmith_store::PostgresStore::connect(&url))
            .unwrap();
        per_call(c, "postgres", &rt, postgres);
    }
}

/// `runs` runs of `CALLS_PER_RUN` calls at once on `stores` (round robin); the time taken.
async fn concurrent(stores: &[SqliteStore], runs: usize, round: u64) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = (0..runs)
        .map(|i| {
            let store = stores[i % stores.len()].clone();
            tokio::spawn(async move {
                let mut writer = Writer::start(store, format!("r{round}-{i}")).await;
                for seq in 1..=CALLS_PER_RUN {
                    writer.call(seq, false).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    start.elapsed()
}

fn concurrent_runs(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("concurrent.db");
    let round = AtomicU64::new(0);
    let mut group = c.benchmark_group("persistence/sqlite/concurrent_runs");
    group.sample_size(20);
    for runs in [1usize, 4, 16] {
        group.throughput(Throughput::Elements(runs as u64 * CALLS_PER_RUN));
        for (label, connections) in [("one_store", 1), ("store_per_run", runs)] {
            let stores: Vec<SqliteStore> = (0..connections)
                .map(|_| rt.block_on(SqliteStore::open(&path)).unwrap())
                .collect();
            group.bench_with_input(BenchmarkId::new(label, runs), &runs, |b, &runs| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| {
                            let round = round.fetch_add(1, Ordering::SeqCst);
                            rt.block_on(concurrent(&stores, runs, round))
                        })
                        .sum()
                })
            });
        }
    }
    group.finish();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

criterion_group!(benches, persistence, concurrent_runs);
criterion_main!(benches);
