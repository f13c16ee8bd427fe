//! Decode throughput per provider directory as JSON lines, for
//! `scripts/bench-decode-compare.sh`, which runs the Vercel AI SDK on the same fixtures and
//! prints the ratio.
//!
//! What is measured matches the SDK side: each fixture's SSE body (in memory, one chunk per
//! event) goes through the production path, `decode::decode_sse` with a fresh decoder, on a
//! current-thread tokio runtime, and every part is pulled from the resulting stream. Throughput
//! is in SSE body bytes; the fixtures and the wire table are the bench's (`benches/support`).
//!
//! Each line also gives `decoder_only_mib_per_s`: the same fixtures' payloads pushed straight
//! into the decoder (no SSE parsing, no stream), over the same body bytes, to show how the time
//! splits between the decoder and the SSE layer, and `sse_only_mib_per_s`: the bodies through
//! the SSE layer alone (`decode_sse` with a decoder that drops every payload), nothing decoded.
//!
//! The body is cut one chunk per event, or into `CHUNK` bytes when that environment variable
//! is a size (both sides read it).
//!
//! Run: `cargo run --release -p toolsmith-providers --example decode_throughput -- [SECONDS]
//! [DIR...]` (default 3 s per directory, every enabled wire).

// Shared with `benches/decode.rs`; each target uses its own part of it.
#[allow(dead_code)]
#[path = "../benches/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Chunking, Outcome, WIRES, decode_body, decode_payloads, load, parse_body};

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().map_or(3.0, |s| s.parse().expect("SECONDS"));
    let dirs: Vec<String> = args.collect();
    let chunking = Chunking::from_env();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for wire in WIRES {
        if !dirs.is_empty() && !dirs.iter().any(|d| d == wire.dir) {
            continue;
        }
        let mut fixtures = load(wire);
        for fixture in &mut fixtures {
            fixture.body = chunking.apply(&fixture.body);
        }
        let bytes: u64 = fixtures.iter().map(|f| f.body_bytes()).sum();
        let once = || async {
            let mut total = Outcome::default();
            for fixture in &fixtures {
                total += decode_body(wire, &fixture.body).await;
            }
            total
        };
        let total = runtime.block_on(async {
            // Warm-up: a tenth of the measured time.
            let warm = Instant::now();
            while warm.elapsed() < Duration::from_secs_f64(seconds / 10.0) {
                once().await;
            }
            once().await
        });
        let (iterations, elapsed) = runtime.block_on(async {
            let start = Instant::now();
            let mut iterations = 0u64;
            while start.elapsed() < Duration::from_secs_f64(seconds) {
                std::hint::black_box(once().await);
                iterations += 1;
            }
            (iterations, start.elapsed().as_secs_f64())
        });
        // The decoder alone on the same fixtures (payloads pushed directly, no SSE parsing or
        // stream), over the same body bytes: how much of the time is the decoder's.
        let mut out = Vec::new();
        let start = Instant::now();
        let mut payload_iterations = 0u64;
        while start.elapsed() < Duration::from_secs_f64(seconds / 2.0) {
            for fixture in &fixtures {
                std::hint::black_box(decode_payloads(wire, &fixture.payloads, &mut out));
            }
            payload_iterations += 1;
        }
        let decoder_only =
            (bytes * payload_iterations) as f64 / start.elapsed().as_secs_f64() / (1024.0 * 1024.0);
        // The SSE layer alone: the bodies parsed into events, nothing decoded.
        let (sse_iterations, sse_elapsed) = runtime.block_on(async {
            let start = Instant::now();
            let mut iterations = 0u64;
            while start.elapsed() < Duration::from_secs_f64(seconds / 2.0) {
                for fixture in &fixtures {
                    std::hint::black_box(parse_body(&fixture.body).await);
                }
                iterations += 1;
            }
            (iterations, start.elapsed().as_secs_f64())
        });
        let sse_only = (bytes * sse_iterations) as f64 / sse_elapsed / (1024.0 * 1024.0);
        let line = json!({
            "impl": "toolsmith",
            "dir": wire.dir,
            "chunk": chunking.label(),
            "fixtures": fixtures.len(),
            "bytes": bytes,
            "parts": total.parts,
            "errors": total.errors,
            "iterations": iterations,
            "seconds": elapsed,
            "mib_per_s": (bytes * iterations) as f64 / elapsed / (1024.0 * 1024.0),
            "parts_per_s": (total.parts * iterations) as f64 / elapsed,
            "decoder_only_mib_per_s": decoder_only,
            "sse_only_mib_per_s": sse_only,
        });
        println!("{line}");
    }
}
