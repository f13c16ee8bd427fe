//! How fast llama.cpp, as this build compiled it, evaluates a prompt: the figure that build
//! options (CMake profile, `GGML_AVX512*`) and `n_ubatch` move (docs/benchmarks.md, "The
//! embedded local model").
//!
//! ```sh
//! cargo run --release -p toolsmith-providers --features local --example prompt_eval -- MODEL.gguf
//! ```
//!
//! Evaluates the same prompt (`N` tokens, default 797, the size of the local model's prompt
//! with all eight built-in tools) `REPS` times (default 5) from an empty KV cache, in batches of
//! 512 and passes of `UBATCH` tokens (default 256, what the `local` provider uses), on `THREADS`
//! threads (default 2), logits for the last token only, and prints the median rate and each
//! run's.

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

fn setting(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} is a number")))
        .unwrap_or(default)
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: prompt_eval MODEL.gguf");
    let tokens = setting("N", 797) as usize;
    let ubatch = setting("UBATCH", 256);
    let threads = setting("THREADS", 2) as i32;
    let reps = setting("REPS", 5).max(1) as usize;

    let mut backend = LlamaBackend::init().expect("llama.cpp backend");
    backend.void_logs();
    let model = LlamaModel::load_from_file(&backend, &path, &LlamaModelParams::default())
        .expect("a GGUF model");
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(4096))
        .with_n_batch(512)
        .with_n_ubatch(ubatch)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model.new_context(&backend, params).expect("a context");
    // Text shaped like the local provider's prompt: requests and one-line JSON calls.
    let text = "User: Show me the contents of README.md, then write a short summary of it to \
                notes.txt.\nAssistant: {\"tool\": \"read\", \"arguments\": {\"path\": \
                \"README.md\"}}\n"
        .repeat(tokens / 20 + 1);
    let mut prompt = model.vocab().tokenize(text.as_bytes(), true, false);
    assert!(prompt.len() >= tokens, "the text is too short");
    prompt.truncate(tokens);

    let mut seconds = Vec::with_capacity(reps);
    for _ in 0..reps {
        ctx.clear_kv_cache();
        let started = Instant::now();
        for (n, chunk) in prompt.chunks(512).enumerate() {
            let mut batch = LlamaBatch::new(chunk.len(), 1);
            for (i, token) in chunk.iter().enumerate() {
                let position = n * 512 + i;
                batch
                    .add(*token, position as i32, &[0], position + 1 == tokens)
                    .expect("room in the batch");
            }
            ctx.decode(&mut batch).expect("evaluated");
        }
        seconds.push(started.elapsed().as_secs_f64());
    }
    let each: Vec<String> = seconds
        .iter()
        .map(|s| format!("{:.0}", tokens as f64 / s))
        .collect();
    seconds.sort_by(f64::total_cmp);
    println!(
        "{tokens} tokens, n_ubatch {ubatch}, {threads} threads: median {:.0} tok/s (runs: {})",
        tokens as f64 / seconds[reps / 2],
        each.join(", ")
    );
}
