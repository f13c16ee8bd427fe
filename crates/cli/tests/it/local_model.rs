//! The embedded local model, for real: llama.cpp running Gemma 3 270M in this process.
//!
//! Needs the model file (`scripts/setup-local-model.sh`, which `scripts/test.sh` runs first);
//! without it every test here fails with the install command, rather than passing unseen.

use std::sync::{Arc, OnceLock};

use futures::StreamExt;
use serde_json::{Value, json};
use toolsmith::agent::{Agent, CallOutcome};
use toolsmith::providers::local::LocalModel;
use toolsmith::providers::local::answer::{self, sentences};
use toolsmith::schema::SchemaValidator;
use toolsmith::{
    CallSettings, LanguageModel, Message, ModelOutput, ModelPart, ModelRequest, ModelToolCall,
    Part, Role, ToolCallPart, ToolChoice, ToolDeclarations, ToolResultPart, Toolset,
    UnifiedFinishReason,
};
use toolsmith_builtins::Workspace;
use toolsmith_sandbox::SandboxPolicy;

/// One model for the whole file: its worker serialises the tests' calls, as it would a
/// program's. Its prompt cache is in memory only, so that no test depends on files an earlier
/// run left in the user's cache directory.
fn model() -> LocalModel {
    static MODEL: OnceLock<LocalModel> = OnceLock::new();
    MODEL
        .get_or_init(|| match LocalModel::from_name("") {
            Ok(model) => model.with_prompt_cache(None),
            Err(err) => panic!("{err}"),
        })
        .clone()
}

fn builtins(root: &std::path::Path) -> Toolset {
    let workspace = Workspace::new(SandboxPolicy::new(root)).unwrap();
    toolsmith_builtins::all(&workspace)
}

/// The fixed prompts of the benchmark (`examples/local-prompts.json`).
fn prompts() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/local-prompts.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

async fn one_turn(request: &ModelRequest) -> Vec<ModelPart> {
    let stream = model().stream(request).await.unwrap();
    stream.map(|p| p.unwrap()).collect().await
}

fn request(prompt: &str, tools: &Toolset, choice: ToolChoice) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user(prompt)],
        tools: tools.declarations(),
        tool_choice: choice,
        ..Default::default()
    }
}

/// The complete tool calls of a turn.
fn calls_in(parts: &[ModelPart]) -> Vec<&ModelToolCall> {
    parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect()
}

/// Panics unless `call` names a tool on offer and its input matches that tool's full schema.
fn assert_schema_valid(declarations: &ToolDeclarations, call: &ModelToolCall, context: &str) {
    let declaration = declarations
        .entries()
        .iter()
        .find(|d| *d.name == call.tool_name)
        .unwrap_or_else(|| panic!("{context}: unknown tool {}", call.tool_name));
    let input: Value = serde_json::from_str(&call.input)
        .unwrap_or_else(|e| panic!("{context}: {e} in {}", call.input));
    let validator = SchemaValidator::compile(&declaration.input_schema).unwrap();
    if let Err(errors) = validator.validate(&input) {
        panic!(
            "{context}: {} {input} breaks its schema: {errors:?}",
            call.tool_name
        );
    }
}

fn finish_of(parts: &[ModelPart]) -> (UnifiedFinishReason, toolsmith::Usage) {
    match parts.last() {
        Some(ModelPart::Finish {
            finish_reason,
            usage,
            ..
        }) => (finish_reason.unified, *usage),
        other => panic!("the stream did not end with finish: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_writes_a_file_through_the_loop_and_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let agent = Agent::builder(model()).tools(tools).max_steps(4).build();

    let out = agent.run("Create notes.txt saying hello").await.unwrap();
    let write = out.steps[0]
        .tool_results
        .iter()
        .find(|r| r.tool_name == "write")
        .unwrap_or_else(|| panic!("no write call: {:?}", out.steps));
    assert!(matches!(write.outcome, CallOutcome::Output(_)), "{write:?}");
    let written = std::fs::read_to_string(dir.path().join("notes.txt")).unwrap();
    assert!(written.to_lowercase().contains("hello"), "{written:?}");
    // The step after a tool result is an answer (the tool-round policy), so the run ends.
    assert_eq!(out.steps.len(), 2, "{:?}", out.steps);
    assert!(!out.text.is_empty());

    let out = agent.run("Read the file notes.txt").await.unwrap();
    let read = out.steps[0]
        .tool_results
        .iter()
        .find(|r| r.tool_name == "read")
        .unwrap_or_else(|| panic!("no read call: {:?}", out.steps));
    let shown = read
        .output_value()
        .unwrap_or_else(|| panic!("the read failed: {read:?}"))
        .to_string();
    assert!(shown.contains(&written.trim().to_string()), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_matches_its_tools_schema_for_twenty_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let declarations = tools.declarations();
    let prompts = prompts();
    assert_eq!(prompts.len(), 20);
    for case in &prompts {
        let prompt = case["prompt"].as_str().unwrap();
        let parts = one_turn(&request(prompt, &tools, ToolChoice::Required)).await;
        let calls = calls_in(&parts);
        assert!(!calls.is_empty(), "{prompt}: no call in {parts:?}");
        for call in calls {
            assert_schema_valid(&declarations, call, prompt);
            let deltas: String = parts
                .iter()
                .filter_map(|p| match p {
                    ModelPart::ToolInputDelta { id, delta } if **id == *call.tool_call_id => {
                        Some(delta.as_str())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(deltas, call.input, "{prompt}");
        }
        assert_eq!(
            finish_of(&parts).0,
            UnifiedFinishReason::ToolCalls,
            "{prompt}: {parts:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_choice_none_gives_streamed_text() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let parts = one_turn(&request("Say hello to me", &tools, ToolChoice::None)).await;
    assert!(!parts.iter().any(|p| matches!(p, ModelPart::ToolCall(_))));
    let text: String = parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(!text.trim().is_empty(), "{parts:?}");
    let (finish, usage) = finish_of(&parts);
    assert_eq!(finish, UnifiedFinishReason::Stop);
    assert!(usage.input.total.unwrap() > 100 && usage.output.total.unwrap() > 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_named_tool_is_the_only_choice_and_the_prefix_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let choice = ToolChoice::Tool {
        tool_name: "calculator".into(),
    };
    let first = one_turn(&request("What is 6 times 7?", &tools, choice.clone())).await;
    let second = one_turn(&request("What is 6 times 8?", &tools, choice)).await;
    for parts in [&first, &second] {
        let names: Vec<_> = calls_in(parts)
            .iter()
            .map(|call| call.tool_name.as_str())
            .collect();
        assert!(
            !names.is_empty() && names.iter().all(|n| *n == "calculator"),
            "{names:?}"
        );
    }
    // The prompts differ only in their last line: the preamble and examples come from the cache
    // (unless another test's call ran in between, which only shortens the shared prefix).
    let (_, usage) = finish_of(&second);
    let reused = usage.input.cache_read.unwrap();
    assert!(reused > 100, "reused {reused} of {:?}", usage.input.total);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_limit_ends_a_turn_with_length_and_keeps_the_partial_call() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let mut request = request(
        "Create notes.txt saying hello",
        &tools,
        ToolChoice::Required,
    );
    request.settings = CallSettings {
        max_output_tokens: Some(16),
        ..Default::default()
    };
    let parts = one_turn(&request).await;
    let (finish, usage) = finish_of(&parts);
    assert_eq!(finish, UnifiedFinishReason::Length);
    assert_eq!(usage.output.total, Some(16));
    let call = calls_in(&parts).first().copied();
    // Sixteen tokens reach into the arguments: the cut call is delivered (the loop then tells
    // the model its arguments are invalid), not lost.
    let call = call.unwrap_or_else(|| panic!("{parts:?}"));
    assert!(
        serde_json::from_str::<Value>(&call.input).is_err(),
        "{}",
        call.input
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_is_not_a_model_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.gguf");
    std::fs::write(&bogus, b"not a model").unwrap();
    let model: Arc<dyn LanguageModel> = Arc::new(LocalModel::new(&bogus));
    let err = match model.stream(&ModelRequest::default()).await {
        Ok(stream) => stream
            .filter_map(|p| std::future::ready(p.err()))
            .next()
            .await
            .expect("an error part"),
        Err(err) => err,
    };
    assert!(
        err.message.contains("could not be loaded") && err.message.contains("bogus.gguf"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sampled_turns_stay_valid() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let declarations = tools.declarations();
    let sampled = |seed| {
        let mut request = request(
            "Create notes.txt saying hello",
            &tools,
            ToolChoice::Required,
        );
        request.settings = CallSettings {
            temperature: Some(1.5),
            top_k: Some(40),
            top_p: Some(0.95),
            seed: Some(seed),
            ..Default::default()
        };
        request
    };
    // (The same seed gives the same turn only from the same cache state: llama.cpp's numerics
    // depend on how the prompt was split into batches, so that is not asserted.)
    for seed in [7, 8] {
        let parts = one_turn(&sampled(seed)).await;
        let calls = calls_in(&parts);
        assert!(!calls.is_empty(), "seed {seed}: {parts:?}");
        for call in calls {
            assert_schema_valid(&declarations, call, &format!("seed {seed}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_the_model_cannot_serve_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let choice = ToolChoice::Tool {
        tool_name: "teleport".into(),
    };
    let err = model()
        .stream(&request("Go", &tools, choice))
        .await
        .err()
        .expect("an unknown named tool is refused before the call");
    assert_eq!(err.kind, toolsmith::ModelErrorKind::InvalidRequest);
    assert_eq!(
        err.message,
        "The tool choice names \"teleport\", which is not on offer."
    );

    let mut too_long = request("Say hello", &tools, ToolChoice::None);
    too_long.settings = CallSettings {
        max_output_tokens: Some(5000),
        ..Default::default()
    };
    let stream = model().stream(&too_long).await.unwrap();
    let err = stream
        .filter_map(|p| std::future::ready(p.err()))
        .next()
        .await
        .expect("an error part");
    assert_eq!(err.kind, toolsmith::ModelErrorKind::InvalidRequest);
    assert!(
        err.message
            .contains("the turn may take 5000 more, but the local model's context holds 4096"),
        "{err}"
    );
}

/// The finish part's `local` metadata.
fn local_metadata(parts: &[ModelPart]) -> Value {
    match parts.last() {
        Some(ModelPart::Finish {
            provider_metadata, ..
        }) => provider_metadata.0["local"].clone(),
        other => panic!("the stream did not end with finish: {other:?}"),
    }
}

/// What a turn said: its text and its calls (tool and input).
fn said(parts: &[ModelPart]) -> Vec<String> {
    parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::TextDelta { delta, .. } => Some(delta.clone()),
            ModelPart::ToolCall(call) => Some(format!("{} {}", call.tool_name, call.input)),
            _ => None,
        })
        .collect()
}

/// The files of a prompt cache directory.
fn cache_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_context_restores_the_shared_start_from_the_prompt_cache_and_refuses_damaged_files() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let request = request("Open Cargo.toml", &tools, ToolChoice::Required);
    // Each call on a model of its own: a new worker and context, as in a new process (the
    // weights are loaded once per process either way).
    let turn = || async {
        let model = LocalModel::from_name("")
            .unwrap()
            .with_prompt_cache(Some(cache.path().to_path_buf()));
        let parts: Vec<ModelPart> = model
            .stream(&request)
            .await
            .unwrap()
            .map(|p| p.unwrap())
            .collect()
            .await;
        let meta = local_metadata(&parts);
        (said(&parts), meta)
    };

    let (first, meta) = turn().await;
    assert_eq!(meta["promptCache"], "saved", "{meta}");
    assert_eq!(meta["reusedTokens"], 0, "{meta}");
    let shared = meta["sharedTokens"].as_u64().unwrap();
    assert!(
        shared > 500 && shared < meta["promptTokens"].as_u64().unwrap(),
        "{meta}"
    );
    let files = cache_files(cache.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(!first.is_empty());

    let (second, meta) = turn().await;
    assert_eq!(meta["promptCache"], "restored", "{meta}");
    assert_eq!(meta["reusedTokens"].as_u64(), Some(shared), "{meta}");
    assert_eq!(second, first, "the restored state gives the same turn");

    // A damaged file is deleted and replaced, never loaded; the turn is the same.
    let file = &files[0];
    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(file, &bytes).unwrap();
    let (third, meta) = turn().await;
    assert_eq!(meta["promptCache"], "saved", "{meta}");
    assert_eq!(third, first);

    // So is a short one.
    let whole = std::fs::read(file).unwrap();
    std::fs::write(file, &whole[..whole.len() / 3]).unwrap();
    let (fourth, meta) = turn().await;
    assert_eq!(meta["promptCache"], "saved", "{meta}");
    assert_eq!(fourth, first);

    let (fifth, meta) = turn().await;
    assert_eq!(meta["promptCache"], "restored", "{meta}");
    assert_eq!(fifth, first);
    assert_eq!(
        cache_files(cache.path()),
        files,
        "one file, no temporaries left"
    );
}

/// The answer step after `call` returned `result`, with the request's `local` provider options:
/// its text and parts.
async fn answer_to(
    prompt: &str,
    call: (&str, Value),
    result: &str,
    options: Value,
) -> (String, Vec<ModelPart>) {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtins(dir.path());
    let (name, input) = call;
    let messages = vec![
        Message::user(prompt),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCallPart {
                tool_call_id: "c1".into(),
                tool_name: name.into(),
                input,
                provider_executed: false,
                provider_metadata: Default::default(),
            })],
        ),
        Message::tool_results(vec![ToolResultPart {
            tool_call_id: "c1".into(),
            tool_name: name.into(),
            output: ModelOutput::text(result),
            provider_executed: false,
            provider_metadata: Default::default(),
        }]),
    ];
    let mut request = request(prompt, &tools, ToolChoice::Auto);
    request.messages = messages;
    request.provider_options = serde_json::from_value(json!({ "local": options })).unwrap();
    let parts = one_turn(&request).await;
    let text: String = parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    (text, parts)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_to_a_result_is_short_grounded_and_ends_at_its_sentence_limit() {
    let (text, parts) = answer_to(
        "What is 17 * 23 + 4?",
        ("calculator", json!({"expression": "17 * 23 + 4"})),
        "17 * 23 + 4 = 395",
        json!({}),
    )
    .await;
    assert!(text.contains("395"), "{text:?}");
    assert!(
        (1..=answer::SENTENCES).contains(&sentences(&text)),
        "{text:?}"
    );
    assert_eq!(finish_of(&parts).0, UnifiedFinishReason::Stop);

    let readme = "# Sample workspace\n\nThis folder is the demo agent's workspace. The demo \
                  copies it to a temporary directory. The agent's tools read and write there, \
                  and nowhere else.\n\n- `todo.md` lists what is left to do.\n";
    let read_me = |sentences: u32| {
        answer_to(
            "Read README.md to me",
            ("read", json!({"path": "README.md"})),
            readme,
            json!({"answerSentences": sentences}),
        )
    };
    // Without a sentence limit the model goes on, as far as the length bound.
    let (text, parts) = read_me(0).await;
    let (_, usage) = finish_of(&parts);
    assert!(sentences(&text) > 2, "{text:?}");
    assert!(usage.output.total.unwrap() <= u64::from(answer::MAX_TOKENS));
    for limit in [1, 2] {
        let (text, parts) = read_me(limit).await;
        assert_eq!(sentences(&text), limit, "{text:?}");
        assert_eq!(finish_of(&parts).0, UnifiedFinishReason::Stop, "{text:?}");
    }
}
