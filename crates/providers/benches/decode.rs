//! Stream decoding: throughput per provider on the recorded fixtures, and linearity in the
//! number of deltas.
//!
//! - `decode/<dir>`: every usable fixture of the directory decoded from its `data:` payloads
//!   (a fresh decoder per fixture, each payload pushed, then `finish`), throughput in payload
//!   bytes. `decode-parts/<dir>` is the same run with the parts produced as the throughput, so
//!   criterion prints parts/s. SSE framing is not included here; the comparison with the AI SDK
//!   (`scripts/bench-decode-compare.sh`) includes it.
//! - `linearity/<wire>/<n>`: one response of `n` text deltas (10 000 and 20 000), the text
//!   accumulated and read after every delta as a consumer rendering it would, to catch any
//!   cost that grows with the text so far. The bench ends with the ratio time(20 000) ÷
//!   time(10 000), measured directly because criterion does not compute ratios (target ≤ 2.2).
//!
//! The wires come from one table, `support::WIRES`.
//!
//! Run: `cargo bench -p toolsmith-providers --bench decode`.

// Shared with `examples/decode_throughput.rs`; each target uses its own part of it.
#[allow(dead_code)]
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toolsmith_core::ModelPart;

use futures::StreamExt;
use support::{Chunking, Outcome, WIRES, Wire, body_parts, decode_payloads, frame, load, synth};

/// Delta counts for the linearity bench.
const SIZES: [usize; 2] = [10_000, 20_000];

fn fixtures(c: &mut Criterion) {
    for wire in WIRES {
        let fixtures = load(wire);
        let bytes: u64 = fixtures.iter().map(|f| f.payload_bytes()).sum();
        let mut out = Vec::new();
        let run = |out: &mut Vec<ModelPart>| {
            let mut total = Outcome::default();
            for fixture in &fixtures {
                total += decode_payloads(wire, &fixture.payloads, out);
            }
            total
        };
        let total = run(&mut out);
        eprintln!(
            "decode/{}: {} fixtures, {} payload bytes, {} parts per iteration, {} ended in an error",
            wire.dir,
            fixtures.len(),
            bytes,
            total.parts,
            total.errors
        );
        for (group, throughput) in [
            ("decode", Throughput::Bytes(bytes)),
            ("decode-parts", Throughput::Elements(total.parts)),
        ] {
            let mut group = c.benchmark_group(group);
            group.measurement_time(Duration::from_secs(3));
            group.throughput(throughput);
            group.bench_function(wire.dir, |b| b.iter(|| black_box(run(&mut out).parts)));
            group.finish();
        }
    }
}

/// Decodes `payloads` (one text response), appending every text delta to the text so far and
/// reading it after each payload; returns the final text length.
fn read_along(wire: &Wire, payloads: &[String]) -> usize {
    let mut decoder = (wire.decoder)();
    let mut out = Vec::new();
    let mut text = String::new();
    for payload in payloads {
        decoder
            .push(payload, &mut out)
            .expect("synthetic stream decodes");
        for part in out.drain(..) {
            if let ModelPart::TextDelta { delta, .. } = part {
                text.push_str(&delta);
            }
        }
        black_box((text.len(), text.chars().next_back()));
    }
    decoder.finish(&mut out).expect("synthetic stream finishes");
    text.len()
}

/// [`read_along`] through the SSE layer: the stream's body framed as the wire sends it, cut
/// into `chunking`, parsed and decoded in place by `decode_sse`.
fn read_along_sse(runtime: &tokio::runtime::Runtime, wire: &Wire, body: &[bytes::Bytes]) -> usize {
    runtime.block_on(async {
        let mut parts = body_parts(wire, body);
        let mut text = String::new();
        while let Some(part) = parts.next().await {
            if let ModelPart::TextDelta { delta, .. } = part.expect("synthetic stream decodes") {
                text.push_str(&delta);
            }
            black_box((text.len(), text.chars().next_back()));
        }
        text.len()
    })
}

/// The generator of every wire (including those whose decoder has not landed) must produce
/// JSON, so a generator is right before its entry in the table is enabled.
fn check_generators() {
    for (name, generate) in synth::ALL {
        for payload in generate(3) {
            if payload != "[DONE]" {
                serde_json::from_str::<serde_json::Value>(&payload)
                    .unwrap_or_else(|e| panic!("{name} generator: {e}: {payload}"));
            }
        }
    }
}

fn linearity(c: &mut Criterion) {
    check_generators();
    let mut group = c.benchmark_group("linearity");
    group.sample_size(20);
    for wire in WIRES {
        let Some(generate) = wire.text_stream else {
            continue;
        };
        for n in SIZES {
            let payloads = generate(n);
            assert_eq!(
                read_along(wire, &payloads),
                n * synth::WORD.len(),
                "{}: every delta arrives as text",
                wire.dir
            );
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(wire.dir, n), &payloads, |b, payloads| {
                b.iter(|| read_along(wire, payloads));
            });
        }
    }
    group.finish();
}

/// The median time of `RUNS` runs of `run` on each size, alternating, after one warm-up.
fn median_times(mut run: impl FnMut(usize)) -> [Duration; 2] {
    const RUNS: usize = 9;
    let mut times = [[Duration::ZERO; RUNS]; 2];
    for round in 0..=RUNS {
        for (i, t) in times.iter_mut().enumerate() {
            let start = Instant::now();
            run(i);
            if round > 0 {
                t[round - 1] = start.elapsed();
            }
        }
    }
    times.map(|mut t| {
        t.sort();
        t[RUNS / 2]
    })
}

fn report(what: &str, [small, large]: [Duration; 2]) {
    eprintln!(
        "LINEARITY {what}: {} deltas {:.2} ms, {} deltas {:.2} ms, ratio {:.2} (target <= 2.2)",
        SIZES[0],
        small.as_secs_f64() * 1e3,
        SIZES[1],
        large.as_secs_f64() * 1e3,
        large.as_secs_f64() / small.as_secs_f64()
    );
}

/// time(20 000) ÷ time(10 000) per wire: the median of several alternating runs of each. Once
/// for the decoder (the target: linear in the body), and through the SSE layer with the body
/// in 16 KiB chunks and in one chunk, since a cost that grows with the chunk shows only there.
fn linearity_ratio(_: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for wire in WIRES {
        let Some(generate) = wire.text_stream else {
            continue;
        };
        let streams = SIZES.map(generate);
        report(
            wire.dir,
            median_times(|i| {
                black_box(read_along(wire, &streams[i]));
            }),
        );
        // 16 KiB chunks (a connection's read size), and the whole body as one chunk (a
        // replay, a buffering proxy): a parser whose cost grows with the chunk shows there.
        for (label, chunking) in [
            ("16 KiB chunks", Chunking::Bytes(16 * 1024)),
            ("one chunk", Chunking::Bytes(usize::MAX)),
        ] {
            let bodies = streams.each_ref().map(|payloads| {
                let body = bytes::Bytes::from(frame(payloads, wire.framing));
                chunking.apply(&[body])
            });
            report(
                &format!("{} through SSE, {label}", wire.dir),
                median_times(|i| {
                    black_box(read_along_sse(&runtime, wire, &bodies[i]));
                }),
            );
        }
    }
}

criterion_group!(benches, fixtures, linearity, linearity_ratio);
criterion_main!(benches);
