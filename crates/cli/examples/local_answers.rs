//! How the embedded local model answers once it has a tool's result: for each of the 20
//! prompts of `examples/local-prompts.json`, a whole run as `toolsmith run` makes it (the
//! model calls a tool on a scratch workspace, the tool runs, the model answers), scored on
//! two questions:
//!
//! - **uses the result**: the answer contains a word or number of the tool's result that the
//!   prompt does not (for a result with none, such as `write`'s `ok`, one of the call's
//!   arguments will do). Words are compared lowercased; common English words and words under
//!   three letters without a digit do not count.
//! - **short**: one to three sentences, as the local model's stop rule counts them
//!   (`toolsmith_providers::local::answer::sentences`: a sentence ends at `.`, `!` or `?` before
//!   a space, or at a line break), and at most 300 characters (a list of numbers to the token
//!   limit is one sentence).
//!
//! ```sh
//! cargo build --release -p toolsmith-cli && cargo run --release -p toolsmith-cli --example local_answers
//! ```
//!
//! (`run_code` needs the `toolsmith` binary for its workers: the one beside the example, or
//! `TOOLSMITH_RUN_CODE_WORKER`.)
//!
//! It prints a table (prompt, tool, answer, the two verdicts, sentences, tokens) and the totals.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use serde_json::Value;
use toolsmith::agent::Agent;
use toolsmith::providers::local::LocalModel;
use toolsmith::providers::local::answer::sentences;
use toolsmith::{Message, ModelOutput, Part, Role};
use toolsmith_builtins::{RUN_CODE_WORKER_ENV, RunCodeWorker, Workspace};
use toolsmith_sandbox::SandboxPolicy;

/// Files the prompts name, besides the demo's workspace (`examples/workspace`), so that their
/// tools have something to find.
const FILES: &[(&str, &str)] = &[
    (
        "src/main.rs",
        "// FIXME: report errors instead of panicking\nfn parse_args() -> Vec<String> {\n    \
         std::env::args().skip(1).collect()\n}\n\nfn main() {\n    let args = parse_args();\n    \
         println!(\"{} arguments\", args.len());\n}\n",
    ),
    (
        "Cargo.toml",
        "[package]\nname = \"greeter\"\nversion = \"0.3.1\"\nedition = \"2024\"\n",
    ),
    ("settings.ini", "[server]\nport=8080\ndebug=true\n"),
    ("fruits.txt", "apple\nbanana\ncherry\n"),
    (
        "docs/intro.md",
        "# Introduction\n\nGreeter prints how many arguments it was given.\n",
    ),
    (
        "docs/usage.md",
        "Run `greeter a b c`. TODO: document the flags.\n",
    ),
];

/// Words too common to show that an answer used a result.
const COMMON: &[&str] = &[
    "the", "and", "for", "are", "was", "were", "you", "your", "our", "with", "that", "this",
    "these", "those", "there", "here", "what", "which", "who", "where", "when", "how", "from",
    "into", "has", "have", "had", "not", "but", "all", "any", "can", "will", "would", "could",
    "should", "may", "its", "it's", "them", "they", "their", "then", "than", "also", "just",
    "only", "very", "more", "most", "some", "one", "two", "does", "did", "done", "i'm", "i'll",
    "let", "lets", "please", "sorry", "help", "sure", "file", "files", "text", "contents",
    "content", "result", "results", "true", "false", "null", "about", "out", "now", "new",
];

fn words(text: &str) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || "._-/'".contains(c)))
        .map(|w| w.trim_matches(|c: char| "._-/'".contains(c)))
        .filter(|w| {
            w.chars().any(|c| c.is_ascii_digit()) || (w.chars().count() >= 3 && !COMMON.contains(w))
        })
        .map(str::to_string)
        .collect()
}

/// A JSON value's strings and numbers (not its keys), one per line.
fn leaves(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Number(n) => {
            out.push_str(&n.to_string());
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

fn output_text(output: &ModelOutput) -> String {
    match output {
        ModelOutput::Json { value } | ModelOutput::ErrorJson { value } => {
            let mut out = String::new();
            leaves(value, &mut out);
            out
        }
        other => other.to_text(),
    }
}

/// What a run's calls and results were: the calls' argument values and the results' words (for
/// the verdict), and each call and result as shown (for the table).
#[derive(Default)]
struct Calls {
    inputs: String,
    results: String,
    shown_calls: Vec<String>,
    shown_results: Vec<String>,
}

fn calls_and_results(messages: &[Message]) -> Calls {
    let mut calls = Calls::default();
    for message in messages {
        for part in &message.content {
            match part {
                Part::ToolCall(call) if message.role == Role::Assistant => {
                    leaves(&call.input, &mut calls.inputs);
                    calls
                        .shown_calls
                        .push(format!("{} {}", call.tool_name, call.input));
                }
                Part::ToolResult(result) => {
                    calls.results.push_str(&output_text(&result.output));
                    calls.shown_results.push(result.output.to_text());
                }
                _ => {}
            }
        }
    }
    calls
}

fn seed(dir: &Path) {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/workspace");
    for entry in std::fs::read_dir(demo).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    for (path, text) in FILES {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn cell(text: &str, chars: usize) -> String {
    let flat = text.replace('|', "\\|").replace('\n', " ⏎ ");
    match flat.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[tokio::main]
async fn main() {
    // `run_code` runs its scripts in worker processes of the `toolsmith` binary: the one built
    // beside this example, unless TOOLSMITH_RUN_CODE_WORKER names one.
    let worker = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("toolsmith")))
        .filter(|path| path.is_file() && std::env::var_os(RUN_CODE_WORKER_ENV).is_none())
        .map(RunCodeWorker::new);
    // A model of its own for each run, as each `toolsmith run` is a process of its own: a new
    // context, its prompt's shared start restored from a prompt cache of the example's own.
    let prompt_cache = tempfile::tempdir().unwrap();
    let model = LocalModel::from_name("").unwrap_or_else(|e| panic!("{e}"));
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/local-prompts.json"
    );
    let prompts: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (mut grounded, mut short, mut both, mut tokens) = (0, 0, 0, 0u64);
    let started = Instant::now();
    println!("| prompt | call | result | answer | uses the result | short | sentences | tokens |");
    println!("|---|---|---|---|---|---|---:|---:|");
    for case in &prompts {
        let prompt = case["prompt"].as_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        seed(dir.path());
        let workspace = Workspace::new(SandboxPolicy::new(dir.path())).unwrap();
        let mut tools = toolsmith_builtins::all(&workspace);
        if let Some(worker) = &worker {
            tools =
                tools.with(toolsmith_builtins::run_code(&workspace).with_worker(worker.clone()));
        }
        let model = model
            .clone()
            .with_prompt_cache(Some(prompt_cache.path().to_path_buf()));
        let agent = Agent::builder(model).tools(tools).max_steps(3).build();
        let out = match agent.run(prompt).await {
            Ok(out) => out,
            Err(err) => panic!("{prompt}: {err}"),
        };
        let calls = calls_and_results(&out.messages);
        let answer = out.text.trim();
        let said = words(answer);
        let asked = words(prompt);
        let mut evidence: BTreeSet<String> =
            words(&calls.results).difference(&asked).cloned().collect();
        if evidence.is_empty() {
            evidence = words(&calls.inputs);
        }
        let uses = !calls.shown_calls.is_empty() && !said.is_disjoint(&evidence);
        let n = sentences(answer);
        let brief = (1..=3).contains(&n) && answer.chars().count() <= 300;
        let answer_tokens = out
            .steps
            .last()
            .and_then(|s| s.usage.output.total)
            .unwrap_or(0);
        grounded += u32::from(uses);
        short += u32::from(brief);
        both += u32::from(uses && brief);
        tokens += answer_tokens;
        let yes = |b: bool| if b { "yes" } else { "no" };
        println!(
            "| {prompt} | {} | {} | {} | {} | {} | {n} | {answer_tokens} |",
            cell(&calls.shown_calls.join("; "), 80),
            cell(&calls.shown_results.join("; "), 80),
            cell(answer, 160),
            yes(uses),
            yes(brief),
        );
    }
    let n = prompts.len();
    println!();
    println!(
        "uses the result: {grounded}/{n}; short (1 to 3 sentences, 300 characters at most): {short}/{n}; both: {both}/{n}; \
         {:.1} answer tokens on average; {:.0} s in all",
        tokens as f64 / n as f64,
        started.elapsed().as_secs_f64()
    );
}
