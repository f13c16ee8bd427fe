//! The run stream and the run's output: part sequences, usage, and agreement between `run` and
//! `stream`.

use crate::common::*;
use serde_json::json;
use toolsmith_agent::Agent;
use toolsmith_core::{Message, RunPart, ToolError, UnifiedFinishReason, Usage, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

#[tokio::test]
async fn text_only_run_streams_start_step_text_and_finish() {
    let agent = Agent::builder(ScriptedModel::new([Turn::text("Hello!")])).build();

    let (parts, out) = stream_run(
        &agent,
        toolsmith_agent::RunInput::from("hi").with_run_id("r9"),
    )
    .await;

    assert_eq!(
        part_types(&parts),
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
        ]
    );
    assert_eq!(
        serde_json::to_value(&parts[0]).unwrap(),
        json!({"type": "start", "runId": "r9"})
    );
    assert_eq!(
        parts[3],
        RunPart::TextDelta {
            id: "text_0".into(),
            text: "Hello!".into()
        }
    );
    assert_eq!(out.unwrap().text, "Hello!");
}

#[tokio::test]
async fn one_call_then_answer_streams_both_steps_in_order() {
    let model = ScriptedModel::new([Turn::call("add", json!({"a": 2, "b": 3})), Turn::text("5")]);
    let add = from_fn("add", "Add.", |args: Args, _cx| async move {
        Ok::<_, ToolError>(args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap())
    });
    let agent = Agent::builder(model).tool(add).build();

    let (parts, out) = stream_run(&agent, "2 + 3?").await;

    assert_eq!(
        part_types(&parts),
        [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-end",
            "tool-call",
            "tool-result",
            "finish-step",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
        ]
    );
    let steps: Vec<u32> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::StartStep { step } | RunPart::FinishStep { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [0, 0, 1, 1]);
    assert_eq!(
        serde_json::to_value(&parts[6]).unwrap(),
        json!({
            "type": "tool-result",
            "toolCallId": "call_0_0",
            "toolName": "add",
            "input": {"a": 2, "b": 3},
            "output": 5
        })
    );
    let finish_reasons: Vec<UnifiedFinishReason> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::FinishStep { finish_reason, .. } | RunPart::Finish { finish_reason, .. } => {
                Some(*finish_reason)
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        finish_reasons,
        [
            UnifiedFinishReason::ToolCalls,
            UnifiedFinishReason::Stop,
            UnifiedFinishReason::Stop
        ]
    );
    assert_eq!(out.unwrap().text, "5");
}

#[tokio::test]
async fn reasoning_is_streamed_and_recorded_before_text() {
    let turn = Turn {
        reasoning: Some("thinking".into()),
        chunk_chars: Some(4),
        ..Turn::text("answer")
    };
    let agent = Agent::builder(ScriptedModel::new([turn])).build();

    let (parts, out) = stream_run(&agent, "hi").await;
    let out = out.unwrap();

    assert_eq!(
        part_types(&parts)[2..9],
        [
            "reasoning-start",
            "reasoning-delta",
            "reasoning-delta",
            "reasoning-end",
            "text-start",
            "text-delta",
            "text-delta",
        ]
    );
    assert_eq!(out.steps[0].reasoning, "thinking");
    assert_eq!(out.text, "answer");
    assert_eq!(out.messages[1].text(), "answer");
}

#[tokio::test]
async fn usage_is_reported_per_step_and_summed_for_the_run() {
    let model = ScriptedModel::new([
        Turn::call("ping", json!({})).with_usage(Usage::new(100, 20)),
        Turn::call("ping", json!({})).with_usage(Usage::new(150, 5)),
        Turn::text("done").with_usage(Usage::new(200, 7)),
    ]);
    let agent = Agent::builder(model)
        .tool(ok_tool("ping", Counter::default()))
        .build();

    let (parts, out) = stream_run(&agent, "hi").await;
    let out = out.unwrap();

    let per_step: Vec<Usage> = out.steps.iter().map(|s| s.usage).collect();
    assert_eq!(
        per_step,
        [Usage::new(100, 20), Usage::new(150, 5), Usage::new(200, 7)]
    );
    assert_eq!(out.usage, Usage::new(450, 32));
    let streamed: Vec<Usage> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::FinishStep { usage, .. } => Some(*usage),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, per_step);
    match parts.last().unwrap() {
        RunPart::Finish { usage, .. } => assert_eq!(*usage, Usage::new(450, 32)),
        other => panic!("expected the finish part, got {other:?}"),
    }
}

#[tokio::test]
async fn run_and_stream_leave_the_same_output() {
    let turns = || {
        [
            Turn::tool_calls([
                ScriptedCall::new("ping", json!({})).with_id("c1"),
                ScriptedCall::new("nope", json!({})).with_id("c2"),
            ]),
            Turn::text("done"),
        ]
    };
    let build = || {
        Agent::builder(ScriptedModel::new(turns()))
            .instructions("Be brief.")
            .tool(ok_tool("ping", Counter::default()))
            .build()
    };

    let ran = build().run("hi").await.unwrap();
    let (_, streamed) = stream_run(&build(), "hi").await;
    let streamed = streamed.unwrap();

    // The same thread; only the steps' times may differ.
    assert_eq!(plain(&ran.messages), plain(&streamed.messages));
    assert_eq!(ran.text, streamed.text);
    assert_eq!(ran.steps.len(), streamed.steps.len());
    // Instructions are not part of the thread.
    assert_eq!(ran.messages[0], Message::user("hi"));
    assert_eq!(ran.input_len, 1);
    assert_eq!(ran.response_messages().len(), 3);
    assert_thread_valid(&ran.messages, &[]);
}

#[tokio::test]
async fn tool_events_arrive_as_data_parts_between_call_and_result() {
    let tool = from_fn("work", "Works.", |_: Args, cx| async move {
        cx.emit("progress", json!({"pct": 50}));
        Ok::<_, ToolError>("worked")
    });
    let agent = Agent::builder(ScriptedModel::new([
        Turn::call("work", json!({})),
        Turn::text("done"),
    ]))
    .tool(tool)
    .build();

    let (parts, _) = stream_run(&agent, "hi").await;

    let types = part_types(&parts);
    assert_eq!(types[5..8], ["tool-call", "data", "tool-result"]);
    assert_eq!(
        serde_json::to_value(&parts[6]).unwrap(),
        json!({"type": "data", "toolCallId": "call_0_0", "name": "progress", "data": {"pct": 50}})
    );
}
