//! The layers around a tool call: loop detection, timeouts, hooks and caller layers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_agent::RunErrorKind;
use toolsmith_core::layer::{Call, Layer, LoopAction, LoopDetection, Next, ToolHook};
use toolsmith_core::{
    CancellationToken, ModelOutput, ToolContext, ToolError, ToolMeta, ToolOutput, async_trait,
    from_fn,
};
use toolsmith_providers::{ScriptedCall, Turn};

fn probe(runs: Counter) -> impl toolsmith_core::Tool {
    ok_tool("probe", runs)
}

/// Three identical calls (keys in different orders), one per step, then an answer.
fn three_identical_calls() -> Vec<Turn> {
    vec![
        Turn::tool_calls([ScriptedCall::raw("probe", r#"{"a":1,"b":[2,3]}"#)]),
        Turn::tool_calls([ScriptedCall::raw("probe", r#"{"b":[2,3],"a":1}"#)]),
        Turn::tool_calls([ScriptedCall::raw("probe", r#"{ "b": [2, 3], "a": 1 }"#)]),
        Turn::text("done"),
    ]
}

#[tokio::test]
async fn loop_detection_hint_answers_the_call_past_the_limit() {
    let runs = Counter::default();
    let model = recording(three_identical_calls());
    let agent = builder(&model)
        .tool(probe(runs.clone()))
        .loop_detection(LoopDetection {
            max_repeats: 2,
            action: LoopAction::Hint,
        })
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(runs.get(), 2);
    let hint = "[loop-detected] Tool \"probe\" has now been called 3 times with identical \
                arguments. Consider trying a different approach, changing the arguments, or \
                finishing the response.";
    assert_eq!(
        results(&out.messages),
        [
            ("call_0_0".to_string(), text("probe ok")),
            ("call_1_0".to_string(), text("probe ok")),
            ("call_2_0".to_string(), error_text(hint)),
        ]
    );
    assert_eq!(
        out.steps[2].tool_results[0].error().unwrap().code(),
        "LOOP_DETECTED"
    );
    assert_eq!(out.text, "done");
}

#[tokio::test]
async fn loop_detection_counts_start_fresh_on_each_run() {
    let runs = Counter::default();
    let model = Arc::new(toolsmith_providers::ScriptedModel::cycle(
        three_identical_calls(),
    ));
    let agent = builder(&model)
        .tool(probe(runs.clone()))
        .loop_detection(LoopDetection {
            max_repeats: 2,
            action: LoopAction::Hint,
        })
        .build();

    agent.run("one").await.unwrap();
    agent.run("two").await.unwrap();

    assert_eq!(runs.get(), 4);
}

#[tokio::test]
async fn loop_detection_abort_fails_the_run_with_a_fatal_error() {
    let runs = Counter::default();
    let model = recording(three_identical_calls());
    let agent = builder(&model)
        .tool(probe(runs.clone()))
        .loop_detection(LoopDetection {
            max_repeats: 2,
            action: LoopAction::Abort,
        })
        .build();

    let err = agent.run("hi").await.unwrap_err();

    let RunErrorKind::Tool(error) = &err.kind else {
        panic!("expected a tool error, got {:?}", err.kind);
    };
    assert!(error.is_fatal());
    assert_eq!(error.code(), "TOOL_LOOP");
    assert_eq!(
        error.message(),
        "Tool \"probe\" was called 3 times with identical arguments - aborting to prevent a loop"
    );
    assert_eq!(runs.get(), 2);
    assert_eq!(model.call_count(), 3);
    assert_thread_valid(&err.output.messages, &[]);
}

/// A tool that sleeps, then answers; it parks its cancellation token where the test can see it.
fn sleeper(
    name: &'static str,
    sleep_ms: u64,
    meta: ToolMeta,
    token: Arc<Mutex<Option<CancellationToken>>>,
) -> impl toolsmith_core::Tool {
    from_fn(name, "Sleeps.", move |_: Args, cx| {
        let token = token.clone();
        async move {
            *token.lock().unwrap() = Some(cx.cancellation().clone());
            tokio::time::sleep(Duration::from_millis(sleep_ms)).await;
            Ok::<_, ToolError>(format!("{name} woke"))
        }
    })
    .with_meta(meta)
}

#[tokio::test(start_paused = true)]
async fn tool_timeout_gives_tool_timeout_and_cancels_the_calls_token() {
    let token = Arc::new(Mutex::new(None));
    let model = recording([Turn::call("slow", json!({})), Turn::text("moving on")]);
    let meta = ToolMeta::new().timeout(Duration::from_millis(50));
    let agent = builder(&model)
        .tool(sleeper("slow", 10_000, meta, token.clone()))
        .build();

    let started = tokio::time::Instant::now();
    let out = agent.run("hi").await.unwrap();

    let error = out.steps[0].tool_results[0].error().unwrap();
    assert_eq!(error.code(), "TOOL_TIMEOUT");
    assert_eq!(error.message(), r#"Tool "slow" timed out after 50ms"#);
    assert_eq!(error.details(), Some(&json!({"timeoutMs": 50})));
    assert_eq!(
        result_of(&out.messages, "call_0_0"),
        error_text(r#"Tool "slow" timed out after 50ms"#)
    );
    let token = token.lock().unwrap().clone().expect("the tool ran");
    assert!(token.is_cancelled());
    assert_eq!(out.text, "moving on");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn agent_tool_timeout_applies_only_to_tools_without_their_own() {
    let (fast_token, own_token) = (Arc::new(Mutex::new(None)), Arc::new(Mutex::new(None)));
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("plain", json!({})).with_id("c1"),
            ScriptedCall::new("patient", json!({})).with_id("c2"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool_timeout(Duration::from_millis(100))
        .tool(sleeper("plain", 200, ToolMeta::new(), fast_token.clone()))
        .tool(sleeper(
            "patient",
            200,
            ToolMeta::new().timeout(Duration::from_millis(500)),
            own_token.clone(),
        ))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(
        results(&out.messages),
        [
            (
                "c1".to_string(),
                error_text(r#"Tool "plain" timed out after 100ms"#)
            ),
            ("c2".to_string(), text("patient woke")),
        ]
    );
    assert!(fast_token.lock().unwrap().as_ref().unwrap().is_cancelled());
    assert!(!own_token.lock().unwrap().as_ref().unwrap().is_cancelled());
}

/// Answers `cached` calls itself and rewrites what the model sees of every successful result.
struct Hooks {
    log: Log,
}

#[async_trait]
impl ToolHook for Hooks {
    async fn before(&self, input: &Value, cx: &ToolContext) -> Option<ToolOutput> {
        self.log.push(format!("before {} {input}", cx.tool_name()));
        (cx.tool_name() == "cached").then(|| ToolOutput::json(json!({"from": "hook"})))
    }

    async fn after(
        &self,
        _input: &Value,
        cx: &ToolContext,
        result: &mut Result<ToolOutput, ToolError>,
    ) {
        self.log.push(format!("after {}", cx.tool_name()));
        if let Ok(out) = result {
            out.model = ModelOutput::text(format!("[redacted {}]", cx.tool_name()));
        }
    }
}

#[tokio::test]
async fn before_hook_result_skips_the_tool() {
    let (cached_runs, live_runs, log) = (Counter::default(), Counter::default(), Log::default());
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("cached", json!({"k": 1})).with_id("c1"),
            ScriptedCall::new("live", json!({})).with_id("c2"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(ok_tool("cached", cached_runs.clone()))
        .tool(ok_tool("live", live_runs.clone()))
        .hook(Hooks { log: log.clone() })
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!((cached_runs.get(), live_runs.get()), (0, 1));
    assert_eq!(
        out.steps[0].tool_results[0].output_value(),
        Some(&json!({"from": "hook"}))
    );
    assert_eq!(
        log.entries(),
        [
            r#"before cached {"k":1}"#,
            "after cached",
            "before live {}",
            "after live",
        ]
    );
}

#[tokio::test]
async fn after_hook_changes_what_the_model_sees_but_not_the_app_value() {
    let model = recording([Turn::call("live", json!({})), Turn::text("done")]);
    let agent = builder(&model)
        .tool(ok_tool("live", Counter::default()))
        .hook(Hooks {
            log: Log::default(),
        })
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(
        request_results(&model.requests()[1]),
        [("call_0_0".to_string(), text("[redacted live]"))]
    );
    assert_eq!(
        out.steps[0].tool_results[0].output_value(),
        Some(&json!("live ok"))
    );
}

/// Records which calls reach it and stamps every result.
struct Stamp(Log);

#[async_trait]
impl Layer for Stamp {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        self.0.push(format!("layer {}", call.cx.tool_call_id()));
        let mut out = next.run(call).await?;
        out.model = ModelOutput::text(format!("stamped: {}", out.model.to_text()));
        Ok(out)
    }
}

#[tokio::test]
async fn caller_layers_see_only_valid_calls_of_known_tools() {
    let log = Log::default();
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("live", json!({})).with_id("c1"),
            ScriptedCall::new("ghost", json!({})).with_id("c2"),
            ScriptedCall::raw("live", "{").with_id("c3"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(ok_tool("live", Counter::default()))
        .layer(Stamp(log.clone()))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(log.entries(), ["layer c1"]);
    assert_eq!(result_of(&out.messages, "c1"), text("stamped: live ok"));
}

#[tokio::test(start_paused = true)]
async fn hooks_run_outside_the_timeout() {
    let log = Log::default();
    let token = Arc::new(Mutex::new(None));
    let model = recording([Turn::call("slow", json!({})), Turn::text("done")]);
    let agent = builder(&model)
        .tool(sleeper(
            "slow",
            1_000,
            ToolMeta::new().timeout(Duration::from_millis(10)),
            token,
        ))
        .hook(Hooks { log: log.clone() })
        .build();

    let out = agent.run("hi").await.unwrap();

    // The hook saw the timeout as an error: it did not rewrite it.
    assert_eq!(log.entries(), ["before slow {}", "after slow"]);
    assert_eq!(
        result_of(&out.messages, "call_0_0"),
        error_text(r#"Tool "slow" timed out after 10ms"#)
    );
}

#[tokio::test]
async fn every_call_logs_the_harness_lifecycle_events_with_their_fields() {
    let ok = from_fn("lookup", "Looks up.", |_: Value, _cx| async {
        Ok::<_, ToolError>(json!({"found": true}))
    });
    let failing = from_fn("break", "Fails.", |_: Value, _cx| async {
        Err::<Value, _>(ToolError::new("BROKEN", "it broke"))
    });
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("lookup", json!({})).with_id("c1"),
            ScriptedCall::new("break", json!({})).with_id("c2"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(ok).tool(failing).build();
    let (logs, _capture) = Logs::capture();
    agent.run("go").await.unwrap();
    let text = logs.text();
    let line = |event: &str, id: &str| {
        text.lines()
            .find(|l| l.contains(event) && l.contains(id))
            .unwrap_or_else(|| panic!("no {event} for {id} in:\n{text}"))
            .to_string()
    };
    for id in ["c1", "c2"] {
        let started = line("tool.call.started", id);
        assert!(started.contains("stepNumber=0"), "{started}");
        assert!(started.contains("toolCallId="), "{started}");
    }
    let finished = line("tool.call.finished", "c1");
    assert!(
        finished.contains("toolName=\"lookup\"") || finished.contains("toolName=lookup"),
        "{finished}"
    );
    assert!(finished.contains("durationMs="), "{finished}");
    let failed = line("tool.call.failed", "c2");
    assert!(
        failed.contains("errorCode=\"BROKEN\"") || failed.contains("errorCode=BROKEN"),
        "{failed}"
    );
    assert!(failed.contains("it broke"), "{failed}");
    assert!(failed.contains("durationMs="), "{failed}");
    assert!(!text.contains("found"), "outputs are not logged:\n{text}");
}
