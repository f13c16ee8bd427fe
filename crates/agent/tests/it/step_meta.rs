//! What the thread records of each step beside its messages ([`MessageMeta`]): the model call on
//! the assistant message (model, provider, finish reason, usage, start and length), the calls'
//! times on the tool message — under both execution policies, through a store's JSON, on
//! resume (a call answered later adds its time to the step's tool message) and under a journal
//! (a call whose outcome an earlier attempt recorded has no time). Times are checked for
//! presence, never against a bound.

use std::sync::{Arc, Mutex};

use crate::common::*;
use serde_json::json;
use toolsmith_agent::{
    Agent, CallOutcome, Committed, ExecutionPolicy, Intent, LogBatch, RunInput, RunLog, RunLogError,
};
use toolsmith_core::LanguageModel;
use toolsmith_core::{
    Approval, Message, MessageMeta, ModelOutput, Role, ToolApprovalResponse, ToolError, ToolMeta,
    ToolOutput, UnifiedFinishReason, Usage, async_trait, from_fn,
};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

/// The model calls `ping` (`c1`) and a tool that does not exist (`c2`), then answers.
fn two_steps() -> Arc<ScriptedModel> {
    recording([
        Turn::tool_calls([
            ScriptedCall::new("ping", json!({})).with_id("c1"),
            ScriptedCall::new("nope", json!({})).with_id("c2"),
        ])
        .with_usage(Usage::new(100, 10)),
        Turn::text("done").with_usage(Usage::new(120, 5)),
    ])
}

fn meta(message: &Message) -> &MessageMeta {
    message.meta.as_ref().expect("the message has its record")
}

#[tokio::test]
async fn every_step_records_its_model_call_and_its_calls_times() {
    for policy in [ExecutionPolicy::Sequential, ExecutionPolicy::parallel()] {
        let model = two_steps();
        let agent = builder(&model)
            .tool(ok_tool("ping", Counter::default()))
            .execution(policy)
            .build();
        let out = agent.run("hi").await.unwrap();
        // Through a store's JSON: the record is kept as it is.
        let messages = stored(&out.messages);
        assert_eq!(messages, out.messages);
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert_eq!(messages[0].meta, None, "the input is as given");

        let step = meta(&messages[1]);
        assert_eq!(step.model.as_deref(), Some(model.model_id()));
        assert_eq!(step.provider.as_deref(), Some("scripted"));
        assert_eq!(step.response_id, None, "the scripted model gives no id");
        assert_eq!(step.finish_reason, Some(UnifiedFinishReason::ToolCalls));
        assert_eq!(step.usage, Some(Usage::new(100, 10)));
        assert!(step.started_at.is_some_and(|at| at > 0));
        assert!(step.duration_ms.is_some());
        assert!(step.calls.is_empty());

        let results = meta(&messages[2]);
        assert!(results.started_at >= step.started_at);
        assert!(results.duration_ms.is_some());
        // The call that ran has its time; the unknown tool never ran.
        assert_eq!(
            results.calls.keys().collect::<Vec<_>>(),
            ["c1"],
            "{policy:?}"
        );
        assert_eq!(results.usage, None);
        assert_eq!(results.model, None);

        let last = meta(&messages[3]);
        assert_eq!(last.finish_reason, Some(UnifiedFinishReason::Stop));
        assert_eq!(last.usage, Some(Usage::new(120, 5)));
    }
}

#[tokio::test]
async fn a_model_call_that_reports_no_usage_records_none() {
    let model = recording([Turn::text("hello")]);
    let out = builder(&model).build().run("hi").await.unwrap();
    let step = meta(&out.messages[1]);
    assert_eq!(step.usage, None);
    assert_eq!(step.finish_reason, Some(UnifiedFinishReason::Stop));
    let json = serde_json::to_value(&out.messages[1]).unwrap();
    assert!(json["meta"].get("usage").is_none(), "{json}");
    assert!(json["meta"]["durationMs"].is_u64(), "{json}");
}

#[tokio::test]
async fn a_call_answered_on_resume_adds_its_time_to_the_steps_tool_message() {
    let ask = from_fn(
        "ask",
        "Needs approval.",
        |_: serde_json::Value, _cx| async { Ok::<_, ToolError>("asked") },
    )
    .with_meta(ToolMeta::new().approval(Approval::Always));
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("ping", json!({})).with_id("free"),
            ScriptedCall::new("ask", json!({})).with_id("held"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(ok_tool("ping", Counter::default()))
        .tool(ask)
        .approval_key(key())
        .build();
    let paused = agent.run("go").await.unwrap();
    let before = meta(paused.messages.last().unwrap()).clone();
    assert_eq!(before.calls.keys().collect::<Vec<_>>(), ["free"]);

    let id = paused.pending[0].approval_id().unwrap().to_string();
    let input =
        RunInput::from(stored(&paused.messages)).with_approval(ToolApprovalResponse::approve(&id));
    let out = agent.run(input).await.unwrap();
    let tool = out
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("the step's tool message");
    let after = meta(tool);
    assert_eq!(after.calls.keys().collect::<Vec<_>>(), ["free", "held"]);
    assert_eq!(after.calls["free"], before.calls["free"]);
    // The step's own start and length stay the first run's.
    assert_eq!(
        (after.started_at, after.duration_ms),
        (before.started_at, before.duration_ms)
    );
}

/// A log that holds an earlier attempt's outcome for call `c1`, and lets every other call run.
#[derive(Default)]
struct Remembers(Mutex<Vec<String>>);

#[async_trait]
impl RunLog for Remembers {
    async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError> {
        let intent = batch.intend.map(|call| {
            self.0.lock().unwrap().push(call.tool_call_id.clone());
            if call.tool_call_id == "c1" {
                let output = ToolOutput::json(json!({"paid": "earlier"}));
                Intent::Recorded(Box::new(CallOutcome::Output(output)))
            } else {
                Intent::Execute
            }
        });
        Ok(Committed { intent })
    }
}

#[tokio::test]
async fn a_call_whose_outcome_the_journal_recorded_has_no_time() {
    let pay = from_fn("pay", "Pays.", |_: serde_json::Value, _cx| async {
        Ok::<_, ToolError>(json!({"paid": "now"}))
    })
    .with_meta(ToolMeta::new().side_effect(true));
    let agent = Agent::builder(ScriptedModel::new([
        Turn::tool_calls([
            ScriptedCall::new("pay", json!({"to": "ann"})).with_id("c1"),
            ScriptedCall::new("pay", json!({"to": "bob"})).with_id("c2"),
        ]),
        Turn::text("done"),
    ]))
    .tool(pay)
    .build();
    let log = Arc::new(Remembers::default());
    let out = agent
        .run(RunInput::from("pay").with_log(log.clone()))
        .await
        .unwrap();
    assert_eq!(*log.0.lock().unwrap(), ["c1", "c2"]);
    assert_eq!(
        result_of(&out.messages, "c1"),
        ModelOutput::json(json!({"paid": "earlier"}))
    );
    let tool = out.messages.iter().find(|m| m.role == Role::Tool).unwrap();
    let times = meta(tool);
    assert_eq!(times.calls.keys().collect::<Vec<_>>(), ["c2"]);
    assert!(times.duration_ms.is_some());
}
