//! Benchmark of the embedded local model: load time, prompt and generation speed, time per
//! tool decision, peak memory, and tool-choice accuracy on the 20 fixed prompts of
//! `examples/local-prompts.json`.
//!
//! ```sh
//! cargo run --release -p toolsmith-cli --example local_model_bench [-- plain|gemma ...]
//! ```
//!
//! Each prompt is one model call with tool choice `auto` over all the built-in tools, as
//! `toolsmith run` makes it. A call is *valid* when the model calls a tool and the arguments
//! match the tool's schema, *right* when it is the expected tool, *sensible* when it is right
//! and every expected argument contains the expected text (case-insensitive).

use std::time::Instant;

use futures::StreamExt;
use serde_json::Value;
use toolsmith::providers::local::{LocalModel, PromptFormat};
use toolsmith::schema::SchemaValidator;
use toolsmith::{LanguageModel, Message, ModelPart, ModelRequest, ToolChoice};
use toolsmith_builtins::Workspace;
use toolsmith_sandbox::SandboxPolicy;

#[derive(Default)]
struct Totals {
    valid: u32,
    right: u32,
    sensible: u32,
    prompt_tokens: f64,
    prompt_ms: f64,
    generated: f64,
    generate_ms: f64,
    wall_ms: f64,
    fallbacks: f64,
}

fn local_metadata(parts: &[ModelPart]) -> Value {
    match parts.last() {
        Some(ModelPart::Finish {
            provider_metadata, ..
        }) => provider_metadata
            .0
            .get("local")
            .cloned()
            .unwrap_or_default(),
        _ => Value::Null,
    }
}

async fn call(model: &LocalModel, request: &ModelRequest) -> (Vec<ModelPart>, f64) {
    let started = Instant::now();
    let stream = model.stream(request).await.expect("the call starts");
    let parts: Vec<ModelPart> = stream.map(|p| p.expect("a part")).collect().await;
    (parts, started.elapsed().as_secs_f64() * 1000.0)
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The CPU's name, its logical cores, and which of the vector extensions that decide llama.cpp's
/// speed it has: machines of one kind differ (an AMD EPYC one day, an Intel Xeon with AMX the
/// next), so every result says which it came from.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim_start().strip_prefix(':'))
            .map_or("", str::trim)
    };
    let flags: Vec<&str> = field("flags").split_whitespace().collect();
    let extensions: Vec<&str> = ["avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8"]
        .into_iter()
        .filter(|f| flags.contains(f))
        .collect();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!(
        "{}, {cores} cores, {}",
        field("model name"),
        extensions.join(" ")
    )
}

async fn bench(format: PromptFormat) {
    // An empty prompt cache of the run's own, so that the first call evaluates its prompt cold.
    let prompt_cache = tempfile::tempdir().unwrap();
    let model = LocalModel::from_name("")
        .unwrap_or_else(|e| panic!("{e}"))
        .with_prompt_format(format)
        .with_prompt_cache(Some(prompt_cache.path().to_path_buf()));
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(SandboxPolicy::new(dir.path())).unwrap();
    let tools = toolsmith_builtins::all(&workspace);
    let declarations = tools.declarations();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/local-prompts.json"
    );
    let prompts: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();

    // The first call loads the model; its prompt is evaluated whole (nothing cached yet).
    let warm = ModelRequest {
        messages: vec![Message::user("Hello")],
        tools: declarations.clone(),
        tool_choice: ToolChoice::None,
        settings: toolsmith::CallSettings {
            max_output_tokens: Some(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let (parts, wall) = call(&model, &warm).await;
    let meta = local_metadata(&parts);
    // The prompt's evaluation alone: without saving its shared start to the prompt cache.
    let save_ms = meta["promptCacheMs"].as_f64().unwrap_or(0.0);
    let cold_prompt_ms = meta["promptMs"].as_f64().unwrap_or(0.0) - save_ms;
    let cold_tokens = meta["promptTokens"].as_f64().unwrap_or(0.0);
    let shared_tokens = meta["sharedTokens"].as_f64().unwrap_or(0.0);
    let load_ms = wall - cold_prompt_ms - meta["generateMs"].as_f64().unwrap_or(0.0);

    let mut totals = Totals::default();
    let mut rows = Vec::new();
    for case in &prompts {
        let prompt = case["prompt"].as_str().unwrap();
        let request = ModelRequest {
            messages: vec![Message::user(prompt)],
            tools: declarations.clone(),
            ..Default::default()
        };
        let (parts, wall) = call(&model, &request).await;
        let meta = local_metadata(&parts);
        totals.prompt_tokens += meta["promptTokens"].as_f64().unwrap_or(0.0)
            - meta["reusedTokens"].as_f64().unwrap_or(0.0);
        totals.prompt_ms += meta["promptMs"].as_f64().unwrap_or(0.0);
        totals.generated += meta["generatedTokens"].as_f64().unwrap_or(0.0);
        totals.generate_ms += meta["generateMs"].as_f64().unwrap_or(0.0);
        totals.fallbacks += meta["grammarFallbackTokens"].as_f64().unwrap_or(0.0);
        totals.wall_ms += wall;
        let call = parts.iter().find_map(|p| match p {
            ModelPart::ToolCall(call) => Some(call),
            _ => None,
        });
        let verdict = match call {
            None => "no call (answered)".to_string(),
            Some(call) => {
                let input: Value = serde_json::from_str(&call.input).unwrap_or(Value::Null);
                let valid = declarations
                    .entries()
                    .iter()
                    .find(|d| *d.name == call.tool_name)
                    .is_some_and(|d| {
                        SchemaValidator::compile(&d.input_schema)
                            .is_ok_and(|v| v.validate(&input).is_ok())
                    });
                let right = valid && call.tool_name == case["tool"].as_str().unwrap();
                let sensible = right
                    && case["expect"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .all(|(key, want)| {
                            let got = match &input[key] {
                                Value::String(s) => s.to_lowercase(),
                                other => other.to_string().to_lowercase(),
                            };
                            got.contains(&want.as_str().unwrap().to_lowercase())
                        });
                totals.valid += u32::from(valid);
                totals.right += u32::from(right);
                totals.sensible += u32::from(sensible);
                format!("{} {}", call.tool_name, call.input)
            }
        };
        rows.push(format!(
            "| {prompt} | {} | {verdict} | {wall:.0} |",
            case["tool"].as_str().unwrap()
        ));
    }
    // Before the second context below, which adds its own KV cache.
    let peak_rss = peak_rss_mib();
    // The same first call in a new context (as a new process makes it): the shared start comes
    // from the file the first call saved.
    let fresh = model
        .clone()
        .with_prompt_cache(Some(prompt_cache.path().to_path_buf()));
    let (parts, fresh_wall) = call(&fresh, &warm).await;
    let meta = local_metadata(&parts);
    let restored = (
        meta["promptCache"].as_str().unwrap_or("?").to_string(),
        meta["promptCacheMs"].as_f64().unwrap_or(0.0),
        meta["promptMs"].as_f64().unwrap_or(0.0),
        meta["promptTokens"].as_f64().unwrap_or(0.0) - meta["reusedTokens"].as_f64().unwrap_or(0.0),
    );
    let n = prompts.len() as f64;
    println!("## {format:?} prompt format\n");
    println!("| prompt | expected | call | ms |\n|---|---|---|---:|");
    for row in rows {
        println!("{row}");
    }
    println!();
    println!("- machine: {}", machine());
    println!("- load: {load_ms:.0} ms");
    println!(
        "- prompt processing: {:.0} tok/s cold ({cold_tokens:.0} tokens in {cold_prompt_ms:.0} ms), \
         {:.0} tok/s over the 20 calls' new tokens ({:.0} tokens)",
        cold_tokens / cold_prompt_ms * 1000.0,
        totals.prompt_tokens / totals.prompt_ms * 1000.0,
        totals.prompt_tokens
    );
    println!(
        "- prompt cache: saving the {shared_tokens:.0} shared tokens' state took {save_ms:.0} ms; \
         in a new context the same first call's prompt took {:.0} ms ({}: {:.0} ms, then {:.0} \
         tokens evaluated), {fresh_wall:.0} ms in all",
        restored.2, restored.0, restored.1, restored.3
    );
    println!(
        "- generation: {:.1} tok/s ({:.0} tokens), {:.2} grammar fallback tokens per call",
        totals.generated / totals.generate_ms * 1000.0,
        totals.generated,
        totals.fallbacks / n
    );
    println!(
        "- time per decision: {:.2} s (mean wall time of a call)",
        totals.wall_ms / n / 1000.0
    );
    println!("- peak RSS: {peak_rss:.0} MiB (one context)");
    println!(
        "- accuracy: {}/20 valid calls, {}/20 right tool, {}/20 sensible arguments\n",
        totals.valid, totals.right, totals.sensible
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let formats: Vec<PromptFormat> = if args.is_empty() {
        vec![PromptFormat::Plain]
    } else {
        args.iter()
            .map(|a| match a.as_str() {
                "plain" => PromptFormat::Plain,
                "gemma" => PromptFormat::Gemma,
                other => panic!("unknown format {other:?}: plain or gemma"),
            })
            .collect()
    };
    for format in formats {
        bench(format).await;
    }
}
