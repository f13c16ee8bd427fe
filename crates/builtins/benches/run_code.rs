//! `run_code` costs: a fresh runtime + context + `1+1` per call, and how long after its deadline
//! a runaway script returns.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolsmith_builtins::{RunCode, RunCodeLimits};
use toolsmith_core::{Tool, ToolContext};

/// The kill-latency deadline.
const DEADLINE: Duration = Duration::from_millis(50);

fn fresh_context_eval(c: &mut Criterion) {
    let tool = RunCode::new(RunCodeLimits::default());
    let mut group = c.benchmark_group("run_code");

    // The engine alone, on the bench thread: runtime, context, prelude, eval, JSON conversion.
    group.bench_function("fresh context + 1+1 (in thread)", |b| {
        b.iter(|| {
            let out = tool
                .run_blocking(black_box("1+1"), Arc::new(AtomicBool::new(false)))
                .unwrap();
            black_box(out)
        });
    });

    // The whole tool call: worker thread spawn, channel, tokio await.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cx = ToolContext::for_test("run_code");
    group.bench_function("tool call 1+1 (worker thread)", |b| {
        b.iter(|| {
            let out = rt.block_on(tool.call(json!({"code": "1+1"}), &cx)).unwrap();
            black_box(out)
        });
    });
    group.finish();
}

fn kill_latency(c: &mut Criterion) {
    let tool = RunCode::new(RunCodeLimits {
        deadline: DEADLINE,
        ..RunCodeLimits::default()
    });
    let mut latencies = Vec::new();
    let mut group = c.benchmark_group("run_code");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(3));
    // Each iteration reports only the time past the deadline: total minus the deadline.
    group.bench_function("kill latency after a 50 ms deadline", |b| {
        b.iter_custom(|iters| {
            let mut past = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let err = tool
                    .run_blocking("while(true){}", Arc::new(AtomicBool::new(false)))
                    .unwrap_err();
                let over = start.elapsed().saturating_sub(DEADLINE);
                assert_eq!(err.code(), "RUN_CODE_TIMEOUT");
                latencies.push(over);
                past += over;
            }
            past
        });
    });
    group.finish();
    latencies.sort();
    if !latencies.is_empty() {
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
        println!(
            "kill latency past the 50 ms deadline over {} runs: median {:?}, p90 {:?}, max {:?}",
            latencies.len(),
            at(0.5),
            at(0.9),
            latencies[latencies.len() - 1]
        );
    }
}

criterion_group!(benches, fresh_context_eval, kill_latency);
criterion_main!(benches);
