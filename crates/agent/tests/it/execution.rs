//! The execution policy: sequential order, the parallel window, the exclusive barrier, fatal
//! errors under each policy, and one result per call in every case.

use std::sync::Arc;

use crate::common::*;
use serde_json::json;
use toolsmith_agent::{Agent, ExecutionPolicy, RunErrorKind};
use toolsmith_core::{Concurrency, RunPart, ToolError, ToolMeta, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

fn calls(ids: &[(&str, &str)]) -> Turn {
    Turn::tool_calls(
        ids.iter()
            .map(|(name, id)| ScriptedCall::new(*name, json!({})).with_id(*id)),
    )
}

fn result_ids(parts: &[RunPart]) -> Vec<String> {
    parts
        .iter()
        .filter_map(|p| match p {
            RunPart::ToolResult { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn sequential_runs_calls_in_order_one_at_a_time() {
    let (log, flight) = (Log::default(), Arc::new(Flight::default()));
    let model = recording([
        calls(&[("a", "c1"), ("b", "c2"), ("c", "c3")]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(timed_tool(
            "a",
            30,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .tool(timed_tool(
            "b",
            10,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .tool(timed_tool(
            "c",
            20,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .build();

    let out = agent.run("go").await.unwrap();

    assert_eq!(
        log.entries(),
        ["start a", "end a", "start b", "end b", "start c", "end c"]
    );
    assert_eq!(flight.high_water(), 1);
    assert_eq!(
        results(&out.messages),
        [
            ("c1".to_string(), text("a done")),
            ("c2".to_string(), text("b done")),
            ("c3".to_string(), text("c done")),
        ]
    );
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn sequential_reports_each_result_before_the_next_call_starts() {
    let tool = |name: &'static str| {
        from_fn(name, "Emits.", move |_: Args, cx| async move {
            cx.emit("started", json!(name));
            Ok::<_, ToolError>(name)
        })
    };
    let model = ScriptedModel::new([calls(&[("a", "c1"), ("b", "c2")]), Turn::text("done")]);
    let agent = Agent::builder(model)
        .tool(tool("a"))
        .tool(tool("b"))
        .build();

    let (parts, out) = stream_run(&agent, "go").await;
    out.unwrap();

    let events: Vec<String> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::Data { data, .. } => Some(format!("started {}", data.as_str().unwrap())),
            RunPart::ToolResult { tool_call_id, .. } => Some(format!("result {tool_call_id}")),
            _ => None,
        })
        .collect();
    assert_eq!(events, ["started a", "result c1", "started b", "result c2"]);
}

#[tokio::test(start_paused = true)]
async fn parallel_keeps_at_most_max_in_flight_and_appends_in_call_order() {
    let (log, flight) = (Log::default(), Arc::new(Flight::default()));
    let delays = [("t0", 50), ("t1", 10), ("t2", 45), ("t3", 20), ("t4", 30)];
    let model = recording([
        calls(&[
            ("t0", "c0"),
            ("t1", "c1"),
            ("t2", "c2"),
            ("t3", "c3"),
            ("t4", "c4"),
        ]),
        Turn::text("done"),
    ]);
    let mut agent = builder(&model).execution(ExecutionPolicy::Parallel { max: 2 });
    for (name, delay) in delays {
        agent = agent.tool(timed_tool(
            name,
            delay,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ));
    }
    let agent = agent.build();

    let (parts, out) = stream_run(&agent, "go").await;
    let out = out.unwrap();

    assert_eq!(flight.high_water(), 2);
    // t0 and t1 start; t1 ends at 10 and t2 starts; t0 ends at 50 and t3 starts; t2 ends at 55
    // and t4 starts; t3 ends at 70, t4 at 85.
    assert_eq!(
        log.entries(),
        [
            "start t0", "start t1", "end t1", "start t2", "end t0", "start t3", "end t2",
            "start t4", "end t3", "end t4",
        ]
    );
    // Reported as they finish, appended in call order.
    assert_eq!(result_ids(&parts), ["c1", "c0", "c2", "c3", "c4"]);
    let appended: Vec<String> = results(&out.messages)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(appended, ["c0", "c1", "c2", "c3", "c4"]);
    let in_step: Vec<&str> = out.steps[0]
        .tool_results
        .iter()
        .map(|r| r.tool_call_id.as_str())
        .collect();
    assert_eq!(in_step, ["c0", "c1", "c2", "c3", "c4"]);
    assert_eq!(result_of(&out.messages, "c3"), text("t3 done"));
    assert_thread_valid(&out.messages, &[]);
    // The model's next request holds them in call order too.
    let next: Vec<String> = request_results(&model.requests()[1])
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(next, ["c0", "c1", "c2", "c3", "c4"]);
}

#[tokio::test(start_paused = true)]
async fn exclusive_tool_is_a_barrier_under_parallel() {
    let (log, flight) = (Log::default(), Arc::new(Flight::default()));
    let model = recording([
        calls(&[("s1", "c1"), ("s2", "c2"), ("x", "c3"), ("s3", "c4")]),
        Turn::text("done"),
    ]);
    let exclusive = ToolMeta::new().concurrency(Concurrency::Exclusive);
    let agent = builder(&model)
        .execution(ExecutionPolicy::Parallel { max: 5 })
        .tool(timed_tool(
            "s1",
            20,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .tool(timed_tool(
            "s2",
            30,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .tool(timed_tool("x", 10, exclusive, log.clone(), flight.clone()))
        .tool(timed_tool(
            "s3",
            10,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .build();

    let out = agent.run("go").await.unwrap();

    // s1 and s2 overlap; x waits for both; s3 waits for x.
    assert_eq!(
        log.entries(),
        [
            "start s1", "start s2", "end s1", "end s2", "start x", "end x", "start s3", "end s3",
        ]
    );
    assert_eq!(flight.high_water(), 2);
    let appended: Vec<String> = results(&out.messages)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(appended, ["c1", "c2", "c3", "c4"]);
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_that_cannot_run_still_get_results_in_call_order() {
    let (log, flight) = (Log::default(), Arc::new(Flight::default()));
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("slow", json!({})).with_id("c1"),
            ScriptedCall::new("missing", json!({})).with_id("c2"),
            ScriptedCall::raw("slow", "{oops").with_id("c3"),
            ScriptedCall::new("slow", json!({})).with_id("c4"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .execution(ExecutionPolicy::parallel())
        .tool(timed_tool(
            "slow",
            10,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .build();

    let out = agent.run("go").await.unwrap();

    assert_eq!(flight.high_water(), 2);
    let outcomes: Vec<(String, bool)> = results(&out.messages)
        .into_iter()
        .map(|(id, o)| (id, o.is_error()))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("c1".into(), false),
            ("c2".into(), true),
            ("c3".into(), true),
            ("c4".into(), false),
        ]
    );
    assert_thread_valid(&out.messages, &[]);
}

/// A fatal error stops the step: calls already running finish, calls not yet started do not
/// start and are answered `NOT_EXECUTED`, as under the sequential policy.
#[tokio::test(start_paused = true)]
async fn parallel_fatal_error_starts_no_further_calls() {
    let (log, flight) = (Log::default(), Arc::new(Flight::default()));
    let fatal = from_fn("fatal", "Fails.", |_: Args, _cx| async {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        Err::<String, _>(ToolError::new("BROKEN", "broken").fatal())
    });
    let model = recording([
        calls(&[
            ("slow", "c1"),
            ("fatal", "c2"),
            ("later", "c3"),
            ("later", "c4"),
        ]),
        Turn::text("never"),
    ]);
    let agent = builder(&model)
        .execution(ExecutionPolicy::Parallel { max: 2 })
        .tool(timed_tool(
            "slow",
            30,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .tool(fatal)
        .tool(timed_tool(
            "later",
            5,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .build();

    let err = agent.run("go").await.unwrap_err();

    assert!(matches!(&err.kind, RunErrorKind::Tool(e) if e.code() == "BROKEN"));
    assert_eq!(log.entries(), ["start slow", "end slow"]);
    let not_run = "Not executed: the run stopped after a fatal error in another tool call.";
    assert_eq!(
        results(&err.output.messages),
        [
            ("c1".to_string(), text("slow done")),
            ("c2".to_string(), error_text("broken")),
            ("c3".to_string(), error_text(not_run)),
            ("c4".to_string(), error_text(not_run)),
        ]
    );
    assert_thread_valid(&err.output.messages, &[]);
    assert_eq!(model.call_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn parallel_fatal_error_before_an_exclusive_barrier_skips_the_rest() {
    let (log, flight) = (Log::default(), Arc::new(Flight::default()));
    let fatal = from_fn("fatal", "Fails.", |_: Args, _cx| async {
        Err::<String, _>(ToolError::new("BROKEN", "broken").fatal())
    });
    let exclusive = ToolMeta::new().concurrency(Concurrency::Exclusive);
    let model = recording([calls(&[("fatal", "c1"), ("x", "c2"), ("s", "c3")])]);
    let agent = builder(&model)
        .execution(ExecutionPolicy::parallel())
        .tool(fatal)
        .tool(timed_tool("x", 5, exclusive, log.clone(), flight.clone()))
        .tool(timed_tool(
            "s",
            5,
            ToolMeta::new(),
            log.clone(),
            flight.clone(),
        ))
        .build();

    let err = agent.run("go").await.unwrap_err();

    assert!(log.entries().is_empty());
    let codes: Vec<&str> = err.output.steps[0]
        .tool_results
        .iter()
        .map(|r| r.error().unwrap().code())
        .collect();
    assert_eq!(codes, ["BROKEN", "NOT_EXECUTED", "NOT_EXECUTED"]);
    assert_thread_valid(&err.output.messages, &[]);
}

#[tokio::test(start_paused = true)]
async fn every_call_gets_exactly_one_result_across_policies_and_steps() {
    for policy in [
        ExecutionPolicy::Sequential,
        ExecutionPolicy::Parallel { max: 1 },
        ExecutionPolicy::Parallel { max: 3 },
    ] {
        let (log, flight) = (Log::default(), Arc::new(Flight::default()));
        let model = recording([
            calls(&[("a", "s0a"), ("b", "s0b"), ("nope", "s0c")]),
            Turn::tool_calls([
                ScriptedCall::new("b", json!({})).with_id("s1a"),
                ScriptedCall::raw("a", "[]").with_id("s1b"),
                ScriptedCall::new("a", json!({})).with_id("s1c"),
            ]),
            Turn::text("done"),
        ]);
        let agent = builder(&model)
            .execution(policy)
            .tool(timed_tool(
                "a",
                7,
                ToolMeta::new(),
                log.clone(),
                flight.clone(),
            ))
            .tool(timed_tool(
                "b",
                3,
                ToolMeta::new(),
                log.clone(),
                flight.clone(),
            ))
            .build();

        let out = agent.run("go").await.unwrap();

        assert_thread_valid(&out.messages, &[]);
        let ids: Vec<String> = results(&out.messages)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(
            ids,
            ["s0a", "s0b", "s0c", "s1a", "s1b", "s1c"],
            "{policy:?}"
        );
        assert_eq!(log.entries().len(), 8, "{policy:?}");
    }
}
