//! `run_code` costs: the engine alone (a fresh runtime + context + `1+1`), a whole tool call in a
//! warm worker process and in process, the first call of a new tool (a worker started for it),
//! and how long after its deadline a runaway script returns.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolsmith_builtins::{RunCode, RunCodeLimits};
use toolsmith_core::{Tool, ToolContext};

/// A small script: a few hundred objects, closures, a console line and a JSON result.
const SMALL: &str = "const xs = Array.from({length: 200}, (_, i) => i * i); \
    const odd = xs.filter(x => x % 2).map(x => ({x, s: String(x)})); \
    console.log(odd.length); odd.slice(0, 3)";

/// The kill-latency deadline.
const DEADLINE: Duration = Duration::from_millis(50);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn calls(c: &mut Criterion) {
    let rt = runtime();
    let cx = ToolContext::for_test("run_code");
    let sandboxed = RunCode::new(RunCodeLimits::default());
    let in_process = RunCode::in_process(RunCodeLimits::default());
    // Start the workers before measuring.
    rt.block_on(sandboxed.call(json!({"code": "1"}), &cx))
        .unwrap();
    let mut group = c.benchmark_group("run_code");

    // The engine alone, on the bench thread: runtime, context, console, eval, JSON conversion.
    group.bench_function("fresh context + 1+1 (in thread)", |b| {
        b.iter(|| {
            let out = in_process
                .run_blocking(black_box("1+1"), Arc::new(AtomicBool::new(false)))
                .unwrap();
            black_box(out)
        });
    });
    for (name, tool) in [("worker process", &sandboxed), ("in process", &in_process)] {
        for (label, code) in [("1+1", "1+1"), ("small script", SMALL)] {
            group.bench_function(format!("tool call {label} ({name})"), |b| {
                b.iter(|| {
                    let out = rt.block_on(tool.call(json!({"code": code}), &cx)).unwrap();
                    black_box(out)
                });
            });
        }
    }
    group.finish();

    // A new tool's first call: locating the worker, spawning it through the sandbox helper,
    // its confinement and warm-up, then the call.
    let mut group = c.benchmark_group("run_code");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("first call of a new tool (worker start)", |b| {
        b.iter(|| {
            let tool = RunCode::new(RunCodeLimits::default());
            let out = rt.block_on(tool.call(json!({"code": "1+1"}), &cx)).unwrap();
            black_box(out)
        });
    });
    group.finish();
}

/// Runs `code` `iters` times and returns the summed time past `past`, recording each.
fn overrun(
    iters: u64,
    latencies: &mut Vec<Duration>,
    past: Duration,
    mut call: impl FnMut() -> String,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let code = call();
        let over = start.elapsed().saturating_sub(past);
        assert_eq!(code, "RUN_CODE_TIMEOUT");
        latencies.push(over);
        total += over;
    }
    total
}

fn report(what: &str, latencies: &mut [Duration]) {
    latencies.sort();
    if !latencies.is_empty() {
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
        println!(
            "{what} over {} runs: median {:?}, p90 {:?}, max {:?}",
            latencies.len(),
            at(0.5),
            at(0.9),
            latencies[latencies.len() - 1]
        );
    }
}

fn kill_latency(c: &mut Criterion) {
    let limits = RunCodeLimits {
        deadline: DEADLINE,
        ..RunCodeLimits::default()
    };
    let in_process = RunCode::in_process(limits.clone());
    let sandboxed = RunCode::new(limits);
    let rt = runtime();
    let cx = ToolContext::for_test("run_code");
    let call = |code: &str| {
        rt.block_on(sandboxed.call(json!({ "code": code }), &cx))
            .unwrap_err()
            .code()
            .to_string()
    };
    call("while(true){}");
    let mut group = c.benchmark_group("run_code");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(3));
    // Each iteration reports only the time past the deadline: total minus the deadline.
    let mut latencies = Vec::new();
    group.bench_function("kill latency after a 50 ms deadline", |b| {
        b.iter_custom(|iters| {
            overrun(iters, &mut latencies, DEADLINE, || {
                in_process
                    .run_blocking("while(true){}", Arc::new(AtomicBool::new(false)))
                    .unwrap_err()
                    .code()
                    .to_string()
            })
        });
    });
    report(
        "in process: kill latency past the 50 ms deadline",
        &mut latencies,
    );
    let mut latencies = Vec::new();
    group.bench_function("worker: interrupt latency after a 50 ms deadline", |b| {
        b.iter_custom(|iters| overrun(iters, &mut latencies, DEADLINE, || call("while(true){}")));
    });
    report(
        "worker: `while(true){}` past the 50 ms deadline",
        &mut latencies,
    );
    // A native loop that never polls: killed with its process at the deadline + 100 ms.
    let grace = DEADLINE + Duration::from_millis(100);
    let mut latencies = Vec::new();
    group.bench_function("worker: process kill after deadline + grace", |b| {
        b.iter_custom(|iters| {
            overrun(iters, &mut latencies, grace, || {
                call("Array.prototype.reverse.call({length: 2 ** 32 - 1})")
            })
        });
    });
    report(
        "worker: non-polling loop past deadline + 100 ms grace",
        &mut latencies,
    );
    group.finish();
}

criterion_group!(benches, calls, kill_latency);
criterion_main!(benches);
