//! When a run ends: a step without calls, the step cap, stop conditions, pauses, cancellation
//! and model failures.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use serde_json::json;
use tokio::sync::Notify;
use toolsmith_agent::{
    Agent, ExecutionPolicy, RunErrorKind, RunInput, StepResult, has_tool_call, step_count_is,
};
use toolsmith_core::{
    CancellationToken, Message, ModelErrorKind, Pause, PauseKind, RunPart, ToolError, from_fn,
};
use toolsmith_providers::{ScriptedCall, ScriptedError, ScriptedModel, Turn};

fn pinging(model: ScriptedModel, runs: &Counter) -> toolsmith_agent::AgentBuilder {
    Agent::builder(model).tool(ok_tool("ping", runs.clone()))
}

#[tokio::test]
async fn a_step_without_tool_calls_ends_the_run() {
    let model = recording([Turn::text("hello"), Turn::text("never asked")]);
    let agent = builder(&model).build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(model.call_count(), 1);
    assert_eq!(out.text, "hello");
    assert_eq!(
        plain(&out.messages),
        [Message::user("hi"), Message::assistant("hello")]
    );
}

#[tokio::test]
async fn default_max_steps_is_ten() {
    let runs = Counter::default();
    let model = Arc::new(ScriptedModel::cycle([Turn::call("ping", json!({}))]));
    let agent = builder(&model).tool(ok_tool("ping", runs.clone())).build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(model.call_count(), 10);
    assert_eq!(out.steps.len(), 10);
    assert_eq!(runs.get(), 10);
    assert_eq!(out.steps.last().unwrap().step, 9);
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn max_steps_caps_the_run() {
    let runs = Counter::default();
    let model = Arc::new(ScriptedModel::cycle([Turn::call("ping", json!({}))]));
    let agent = builder(&model)
        .tool(ok_tool("ping", runs.clone()))
        .max_steps(3)
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!((model.call_count(), out.steps.len(), runs.get()), (3, 3, 3));
    // The last step's calls are still answered.
    assert_thread_valid(&out.messages, &[]);
    assert_eq!(
        out.messages.last().unwrap().role,
        toolsmith_core::Role::Tool
    );
}

#[tokio::test]
async fn step_count_is_stops_after_that_many_steps() {
    let runs = Counter::default();
    let agent = pinging(ScriptedModel::cycle([Turn::call("ping", json!({}))]), &runs)
        .stop_when(step_count_is(2))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!((out.steps.len(), runs.get()), (2, 2));
}

#[tokio::test]
async fn has_tool_call_stops_after_the_step_that_called_it() {
    let (searches, done) = (Counter::default(), Counter::default());
    let model = recording([
        Turn::call("search", json!({})),
        Turn::call("done", json!({})),
        Turn::call("search", json!({})),
        Turn::text("never"),
    ]);
    let agent = builder(&model)
        .tool(ok_tool("search", searches.clone()))
        .tool(ok_tool("done", done.clone()))
        .stop_when(has_tool_call("done"))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(model.call_count(), 2);
    assert_eq!((searches.get(), done.get()), (1, 1));
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn custom_stop_condition_is_checked_after_each_step() {
    let runs = Counter::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = seen.clone();
    let two_calls = Turn::tool_calls([
        ScriptedCall::new("ping", json!({})),
        ScriptedCall::new("ping", json!({})),
    ]);
    let agent = pinging(ScriptedModel::cycle([two_calls]), &runs)
        .stop_when(move |steps: &[StepResult]| {
            let results: usize = steps.iter().map(|s| s.tool_results.len()).sum();
            recorder.lock().unwrap().push(results);
            results >= 5
        })
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(*seen.lock().unwrap(), [2, 4, 6]);
    assert_eq!((out.steps.len(), runs.get()), (3, 6));
}

#[tokio::test]
async fn a_tool_returning_a_pause_pauses_the_run() {
    let tool = from_fn("dispatch", "Dispatch.", |_: Args, cx| async move {
        Err::<String, _>(ToolError::pause(
            Pause::new(
                PauseKind::External,
                cx.tool_call_id(),
                cx.tool_name(),
                json!({}),
            )
            .with_data(json!({"job": 7})),
        ))
    });
    let model = recording([Turn::call("dispatch", json!({})), Turn::text("never")]);
    let agent = builder(&model).tool(tool).build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(model.call_count(), 1);
    assert_eq!(out.pending.len(), 1);
    assert_eq!(out.pending[0].kind, PauseKind::External);
    assert_eq!(out.pending[0].data, json!({"job": 7}));
    assert_thread_valid(&out.messages, &["call_0_0"]);
}

/// A tool that says when it started and then sleeps for a long time (logging if it ever ends).
fn stuck(name: &'static str, started: Arc<Notify>, log: Log) -> impl toolsmith_core::Tool {
    from_fn(name, "Sleeps.", move |_: Args, _cx| {
        let (started, log) = (started.clone(), log.clone());
        async move {
            log.push(format!("start {name}"));
            started.notify_one();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            log.push(format!("end {name}"));
            Ok::<_, ToolError>("woke")
        }
    })
}

async fn cancel_while_stuck(policy: ExecutionPolicy) {
    let (started, log, other) = (Arc::new(Notify::new()), Log::default(), Counter::default());
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("stuck", json!({})).with_id("c1"),
            ScriptedCall::new("other", json!({})).with_id("c2"),
        ]),
        Turn::text("never"),
    ]);
    let agent = builder(&model)
        .execution(policy)
        .tool(stuck("stuck", started.clone(), log.clone()))
        .tool(ok_tool("other", other.clone()))
        .build();
    let token = CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        started.notified().await;
        canceller.cancel();
    });

    let (parts, result) = stream_run(&agent, RunInput::from("hi").with_cancellation(token)).await;
    let err = result.unwrap_err();

    assert_eq!(err.kind, RunErrorKind::Cancelled, "{policy:?}");
    assert_eq!(err.code(), "ABORTED");
    assert_eq!(part_types(&parts).last().map(String::as_str), Some("abort"));
    assert_eq!(log.entries(), ["start stuck"], "{policy:?}");
    assert_thread_valid(&err.output.messages, &[]);
    // The call cut off while running is told apart from one that never started.
    let cut_off = error_text("Tool call was cancelled before it finished; it may have partly run.");
    let (c2, other_runs) = match policy {
        // Under the parallel policy `other` ran alongside and finished before the cancellation:
        // it keeps its real result.
        ExecutionPolicy::Parallel { .. } => (text("other ok"), 1),
        ExecutionPolicy::Sequential => (error_text("Not executed: the run was cancelled."), 0),
    };
    assert_eq!(other.get(), other_runs, "{policy:?}");
    assert_eq!(
        results(&err.output.messages),
        [("c1".to_string(), cut_off), ("c2".to_string(), c2)],
        "{policy:?}"
    );
    let codes: Vec<&str> = err.output.steps[0]
        .tool_results
        .iter()
        .map(|r| r.error().map_or("ok", |e| e.code()))
        .collect();
    let expected = match policy {
        ExecutionPolicy::Parallel { .. } => ["CANCELLED", "ok"],
        ExecutionPolicy::Sequential => ["CANCELLED", "NOT_EXECUTED"],
    };
    assert_eq!(codes, expected, "{policy:?}");
    assert_eq!(model.call_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn cancelling_while_a_tool_runs_aborts_and_answers_the_call() {
    cancel_while_stuck(ExecutionPolicy::Sequential).await;
}

#[tokio::test(start_paused = true)]
async fn cancelling_under_the_parallel_policy_aborts_and_answers_the_running_call() {
    cancel_while_stuck(ExecutionPolicy::parallel()).await;
}

#[tokio::test(start_paused = true)]
async fn cancelling_before_the_model_answers_aborts() {
    let model = recording([Turn::text("too late").with_delay_ms(60_000)]);
    let agent = builder(&model).build();
    let token = CancellationToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        canceller.cancel();
    });

    let started = tokio::time::Instant::now();
    let (parts, result) = stream_run(&agent, RunInput::from("hi").with_cancellation(token)).await;
    let err = result.unwrap_err();

    assert_eq!(err.kind, RunErrorKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(part_types(&parts), ["start", "start-step", "abort"]);
    assert!(err.output.steps.is_empty());
    assert_eq!(err.output.messages, [Message::user("hi")]);
}

#[tokio::test]
async fn a_run_cancelled_before_it_starts_never_calls_the_model() {
    let model = recording([Turn::text("never")]);
    let agent = builder(&model).build();
    let token = CancellationToken::new();
    token.cancel();

    let err = agent
        .run(RunInput::from("hi").with_cancellation(token))
        .await
        .unwrap_err();

    assert_eq!(err.kind, RunErrorKind::Cancelled);
    assert_eq!(model.call_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn run_stream_cancel_aborts_the_run() {
    let (started, log) = (Arc::new(Notify::new()), Log::default());
    let model = ScriptedModel::new([Turn::call("stuck", json!({})), Turn::text("never")]);
    let agent = Agent::builder(model)
        .tool(stuck("stuck", started.clone(), log.clone()))
        .build();

    let stream = agent.stream("hi");
    started.notified().await;
    stream.cancel();
    let err = stream.output().await.unwrap_err();

    assert_eq!(err.kind, RunErrorKind::Cancelled);
    assert_thread_valid(&err.output.messages, &[]);
    assert_eq!(log.entries(), ["start stuck"]);
}

/// Sets a flag when dropped: tells whether the loop let go of a tool's future.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn dropping_a_run_stream_cancels_the_run() {
    let token_slot: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let dropped = Arc::new(AtomicBool::new(false));
    let (slot, flag) = (token_slot.clone(), dropped.clone());
    let tool = from_fn("watch", "Waits.", move |_: Args, cx| {
        let (slot, flag) = (slot.clone(), flag.clone());
        async move {
            *slot.lock().unwrap() = Some(cx.cancellation().clone());
            let _guard = DropFlag(flag);
            cx.cancellation().cancelled().await;
            Ok::<_, ToolError>("cancelled")
        }
    });
    let agent = Agent::builder(ScriptedModel::new([Turn::call("watch", json!({}))]))
        .tool(tool)
        .build();

    let mut stream = agent.stream("hi");
    // Read until the call is made, so the tool is running.
    while let Some(part) = stream.next().await {
        if matches!(part, RunPart::ToolCall { .. }) {
            break;
        }
    }
    tokio::task::yield_now().await;
    let token = token_slot
        .lock()
        .unwrap()
        .clone()
        .expect("the tool started");
    assert!(!token.is_cancelled());

    drop(stream);

    assert!(token.is_cancelled());
    // The run lets go of the tool soon after.
    tokio::time::timeout(Duration::from_secs(5), async {
        while !dropped.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the tool's future is dropped");
}

#[tokio::test]
async fn model_error_fails_the_run_with_an_error_part() {
    let runs = Counter::default();
    let model = recording([
        Turn::call("ping", json!({})),
        Turn::error(ScriptedError::new("overloaded")),
    ]);
    let agent = builder(&model).tool(ok_tool("ping", runs.clone())).build();

    let (parts, result) = stream_run(&agent, "hi").await;
    let err = result.unwrap_err();

    let RunErrorKind::Model(error) = &err.kind else {
        panic!("expected a model error, got {:?}", err.kind);
    };
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(error.message, "overloaded");
    assert_eq!(err.code(), "MODEL_SERVER");
    match parts.last().unwrap() {
        RunPart::Error { error } => {
            assert_eq!(
                (error.code.as_str(), error.message.as_str()),
                ("MODEL_SERVER", "overloaded")
            );
        }
        other => panic!("expected an error part, got {other:?}"),
    }
    // The first step is kept, answered.
    assert_eq!(err.output.steps.len(), 1);
    assert_eq!(runs.get(), 1);
    assert_eq!(err.output.messages.len(), 3);
    assert_thread_valid(&err.output.messages, &[]);
}

#[tokio::test]
async fn truncated_stream_is_an_invalid_response() {
    let model = recording([Turn {
        truncate: true,
        ..Turn::text("half an ans")
    }]);
    let agent = builder(&model).build();

    let err = agent.run("hi").await.unwrap_err();

    let RunErrorKind::Model(error) = &err.kind else {
        panic!("expected a model error, got {:?}", err.kind);
    };
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error.message.contains("without a finish part"),
        "{}",
        error.message
    );
    assert_eq!(err.code(), "MODEL_INVALID_RESPONSE");
    assert_eq!(err.output.messages, [Message::user("hi")]);
}

#[tokio::test]
async fn stream_error_after_text_leaves_no_partial_message_in_the_thread() {
    let model = recording([Turn {
        stream_error: Some(ScriptedError::new("connection reset")),
        ..Turn::text("partial")
    }]);
    let agent = builder(&model).build();

    let (parts, result) = stream_run(&agent, "hi").await;
    let err = result.unwrap_err();

    assert!(matches!(&err.kind, RunErrorKind::Model(e) if e.message == "connection reset"));
    // The text was streamed before the failure ...
    assert_eq!(
        part_types(&parts),
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "error"
        ]
    );
    // ... but the thread holds no half-finished assistant message.
    assert_eq!(err.output.messages, [Message::user("hi")]);
    assert!(err.output.steps.is_empty());
    assert_eq!(err.output.text, "");
}
