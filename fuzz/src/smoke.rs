//! A smoke run of every target under plain `cargo test`: each target gets inputs made by
//! mutating its corpus files (bits flipped, bytes set, inserted, deleted, repeated, cut, two
//! files spliced), with no coverage feedback. libFuzzer needs an instrumented build of the whole
//! workspace (~25 min here), too slow for CI; this finds what a first few thousand random
//! changes to known-good inputs find, in seconds, on every CI run.
//!
//! Deterministic: the same corpus and seed give the same inputs, so a failure in CI is a
//! failure at home. `FUZZ_SMOKE_SEED` changes the seed and `FUZZ_SMOKE_INPUTS` the number of
//! inputs per target (default 1 000). A failing input is written to
//! `target/smoke-failures/<target>-<n>` and named in the panic message; run it again with the
//! target's libFuzzer binary, or copy it into `corpus/<target>/` as `regression-…` once fixed.

use std::path::{Path, PathBuf};

/// Inputs per target by default: 15 000 in ~7 s for all fifteen targets in a debug build on
/// the 2-core test machine.
const INPUTS: usize = 1000;

/// The most bytes a mutated input keeps (the campaigns' `-max_len` is 8–16 KiB).
const MAX_LEN: usize = 16 * 1024;

#[test]
fn every_target_survives_mutations_of_its_corpus() {
    let seed = env_number("FUZZ_SMOKE_SEED").unwrap_or(0x7001_5317);
    let inputs = env_number("FUZZ_SMOKE_INPUTS").map_or(INPUTS, |n| n as usize);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for (index, (name, target)) in super::TARGETS.iter().enumerate() {
        let corpus = corpus(&root.join("corpus").join(name));
        assert!(!corpus.is_empty(), "{name} has no corpus");
        let mut rng = fastrand::Rng::with_seed(seed ^ (index as u64) << 32);
        for n in 0..inputs {
            let input = mutated(&mut rng, &corpus);
            if std::panic::catch_unwind(|| target(&input)).is_err() {
                let saved = save(&root, name, n, &input);
                panic!(
                    "{name} fails on mutated input {n} (seed {seed:#x}), saved as {}",
                    saved.display()
                );
            }
        }
    }
}

/// A number from the environment, decimal or `0x` hexadecimal.
fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={text:?}: {e}")))
}

/// The files of a corpus, in name order (a stable order: the same inputs on every machine).
fn corpus(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir:?}: {e}"))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// One corpus file changed by one to four mutations.
fn mutated(rng: &mut fastrand::Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = corpus[rng.usize(..corpus.len())].clone();
    for _ in 0..rng.usize(1..=4) {
        mutate(rng, &mut data, corpus);
    }
    data.truncate(MAX_LEN);
    data
}

fn mutate(rng: &mut fastrand::Rng, data: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    // Bytes that parsers branch on, besides random ones.
    const SPECIAL: &[u8] = b"\0\n\r:{}[]\",\\-09eE.+ ";
    let len = data.len();
    let at = |rng: &mut fastrand::Rng| rng.usize(..=len);
    match rng.u8(..7) {
        0 if len > 0 => {
            let i = rng.usize(..len);
            data[i] ^= 1 << rng.u8(..8);
        }
        1 if len > 0 => {
            let i = rng.usize(..len);
            data[i] = if rng.bool() {
                rng.u8(..)
            } else {
                SPECIAL[rng.usize(..SPECIAL.len())]
            };
        }
        2 => {
            let i = at(rng);
            let bytes: Vec<u8> = (0..rng.usize(1..=8)).map(|_| rng.u8(..)).collect();
            data.splice(i..i, bytes);
        }
        3 if len > 0 => {
            let start = rng.usize(..len);
            let end = rng.usize(start..=len.min(start + 64));
            data.drain(start..end);
        }
        4 if len > 0 => {
            let start = rng.usize(..len);
            let end = rng.usize(start..=len.min(start + 256));
            let copy = data[start..end].to_vec();
            let i = at(rng);
            data.splice(i..i, copy);
        }
        5 => data.truncate(at(rng)),
        _ => {
            let other = &corpus[rng.usize(..corpus.len())];
            let cut = at(rng);
            data.truncate(cut);
            let from = rng.usize(..=other.len());
            data.extend_from_slice(&other[from..]);
        }
    }
}

/// Writes a failing input where the panic message says.
fn save(root: &Path, name: &str, n: usize, input: &[u8]) -> PathBuf {
    let dir = root.join("target").join("smoke-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{n}"));
    std::fs::write(&path, input).unwrap();
    path
}
