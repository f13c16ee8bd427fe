//! Pause and resume: a thread of 100 steps, paused on an approval, serialised to JSON, loaded
//! back and continued with the answer, to the end of the run (the target: under 1 ms plus
//! model time).
//!
//! The model answers instantly (a text turn, so the resumed run ends after one step): the time
//! is the thread's round trip through JSON, the resume (finding the waiting call, checking the
//! answer's HMAC, running the approved call, putting its result in order, repairing the
//! thread), and one step of the loop over a 200-message history.
//!
//! Run: `cargo bench -p toolsmith-agent --bench pause_resume`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolsmith_agent::{Agent, ApprovalKey, RunInput};
use toolsmith_core::{Approval, Message, ToolApprovalResponse, ToolError, ToolMeta, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

/// Steps before the pause.
const STEPS: usize = 100;

fn agent(turns: Vec<Turn>) -> Agent {
    let lookup = from_fn(
        "lookup",
        "Look a key up.",
        |args: Map<String, Value>, _cx| async move {
            Ok::<_, ToolError>(
                json!({"key": args.get("key"), "value": "some value of moderate length"}),
            )
        },
    );
    let transfer = from_fn(
        "transfer",
        "Move money.",
        |_: Map<String, Value>, _cx| async { Ok::<_, ToolError>("moved") },
    )
    .with_meta(ToolMeta::new().approval(Approval::Always));
    Agent::builder(ScriptedModel::new(turns))
        .tool(lookup)
        .tool(transfer)
        .max_steps(STEPS as u32 + 2)
        .approval_key(ApprovalKey::new([3u8; 32]))
        .build()
}

/// The paused thread (JSON) and the approval id it waits on.
fn paused_thread(runtime: &tokio::runtime::Runtime) -> (String, String) {
    let mut turns: Vec<Turn> = (0..STEPS)
        .map(|i| {
            Turn::tool_calls([ScriptedCall::new(
                "lookup",
                json!({ "key": format!("k{i}") }),
            )])
        })
        .collect();
    turns.push(Turn::tool_calls([ScriptedCall::new(
        "transfer",
        json!({"amount": 5}),
    )
    .with_id("pay")]));
    let out = runtime
        .block_on(agent(turns).run("look everything up, then pay"))
        .expect("the run pauses");
    assert_eq!(out.steps.len(), STEPS + 1);
    let id = out.pending[0].approval_id().unwrap().to_string();
    (serde_json::to_string(&out.messages).unwrap(), id)
}

fn pause_resume(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (json, id) = paused_thread(&runtime);
    eprintln!(
        "pause_resume: {} steps, thread {} bytes of JSON",
        STEPS,
        json.len()
    );
    c.bench_function("pause_resume/100_steps", |b| {
        b.iter_batched(
            // A fresh agent per iteration (its scripted model plays one text turn), built
            // outside the measurement.
            || agent(vec![Turn::text("done")]),
            |agent| {
                let thread: Vec<Message> = serde_json::from_str(black_box(&json)).unwrap();
                let input =
                    RunInput::from(thread).with_approval(ToolApprovalResponse::approve(&id));
                let out = runtime.block_on(agent.run(input)).unwrap();
                black_box(serde_json::to_string(&out.messages).unwrap())
            },
            criterion::BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, pause_resume);
criterion_main!(benches);
