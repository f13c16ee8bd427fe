//! The fuzz targets' checks: one function per target, each taking the fuzzer's bytes, failing
//! (a panic) when a property does not hold. `fuzz_targets/<name>.rs` hands libFuzzer's input
//! to the function of that name; the tests at the bottom replay every file of `corpus/<name>/`
//! through it, so that the corpora are regression tests under plain `cargo test` too, and
//! [`smoke`] runs each target on mutations of its corpus: a short smoke run that CI can afford.
//!
//! What every target checks: no panic, no abort, no unbounded time or memory (libFuzzer's
//! `-timeout` and `-rss_limit_mb`, `scripts/fuzz.sh`); and, where the parser produces a
//! result, that it is well-formed. The list of targets, what each feeds where and what more it
//! checks: `docs/reliability.md`, "Fuzzing".

mod builtins;
mod mcp;
mod parts;
mod providers;
mod server;
mod sse;

pub use builtins::{calculator, glob_pattern, grep_pattern, unified_diff};
pub use mcp::{mcp_message, mcp_session};
pub use providers::{
    agent_config, provider_errors, scripted_model, wire_anthropic, wire_google, wire_openai_chat,
    wire_openai_responses,
};
pub use server::server_bodies;
pub use sse::sse;

/// A target's checks.
pub type Target = fn(&[u8]);

/// Every target, by name: what the corpus replay iterates over.
pub const TARGETS: &[(&str, Target)] = &[
    ("sse", sse),
    ("wire_openai_chat", wire_openai_chat),
    ("wire_openai_responses", wire_openai_responses),
    ("wire_anthropic", wire_anthropic),
    ("wire_google", wire_google),
    ("provider_errors", provider_errors),
    ("agent_config", agent_config),
    ("scripted_model", scripted_model),
    ("unified_diff", unified_diff),
    ("grep_pattern", grep_pattern),
    ("glob_pattern", glob_pattern),
    ("calculator", calculator),
    ("server_bodies", server_bodies),
    ("mcp_message", mcp_message),
    ("mcp_session", mcp_session),
];

/// `data` split in two at its first NUL byte (the second part empty when there is none).
fn split_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

#[cfg(test)]
mod smoke;

#[cfg(test)]
mod corpus {
    use std::path::PathBuf;

    /// Every file of every target's corpus through the target's checks.
    #[test]
    fn every_corpus_file_passes_its_target() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut total = 0;
        for (name, target) in super::TARGETS {
            let mut files = 0;
            let dir = root.join("corpus").join(name);
            for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let result = std::panic::catch_unwind(|| target(&data));
                assert!(result.is_ok(), "{name}: {} fails", path.display());
                files += 1;
            }
            assert!(files > 0, "{name} has no corpus");
            total += files;
        }
        eprintln!("{total} corpus files replayed");
    }
}
