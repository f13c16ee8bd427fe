//! The order in which a run records itself in its log: the step saved before its calls, the
//! intent before each call, the outcome after it, and the thread saved before the next call
//! (sequential) or the next step (parallel). Sequential execution saves the step with
//! `save_before_calls` and hands each outcome over with `settle_before_save`, so a log can
//! commit the step with the first intent and each outcome with the save that follows it;
//! parallel execution, where other calls still run before the save, saves the step at once
//! and settles each call as it ends.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolsmith_agent::{
    Agent, DurabilitySnapshot, ExecutionPolicy, Intent, LoggedCall, RunInput, RunLog, RunLogError,
    RunState, Settled,
};
use toolsmith_core::{Message, ToolError, ToolMeta, async_trait, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

/// Records each call the run makes to its log, as `"<what> <call id or state>"`.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn note(&self, what: String) {
        self.0.lock().unwrap().push(what);
    }

    fn events(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

#[async_trait]
impl RunLog for Recorder {
    async fn save(
        &self,
        _messages: &[Message],
        _unchanged: usize,
        state: RunState<'_>,
    ) -> Result<(), RunLogError> {
        let state = match state {
            RunState::Running => "running",
            RunState::Paused(_) => "paused",
            RunState::Finished => "finished",
            RunState::Failed => "failed",
        };
        self.note(format!("save {state}"));
        Ok(())
    }

    async fn save_before_calls(
        &self,
        _messages: &[Message],
        _unchanged: usize,
        _state: RunState<'_>,
    ) -> Result<(), RunLogError> {
        self.note("save_before_calls".to_string());
        Ok(())
    }

    async fn intend(&self, call: &LoggedCall<'_>) -> Result<Intent, RunLogError> {
        self.note(format!("intend {}", call.tool_name));
        Ok(Intent::Execute)
    }

    async fn settle(&self, call: &LoggedCall<'_>, _: Settled<'_>) -> Result<(), RunLogError> {
        self.note(format!("settle {}", call.tool_name));
        Ok(())
    }

    async fn settle_before_save(
        &self,
        call: &LoggedCall<'_>,
        _: Settled<'_>,
    ) -> Result<(), RunLogError> {
        self.note(format!("settle_before_save {}", call.tool_name));
        Ok(())
    }
}

struct NoSnapshot;

#[async_trait]
impl DurabilitySnapshot for NoSnapshot {
    async fn snapshot(&self, _: &str, _: &str) -> Result<(), String> {
        Ok(())
    }
}

fn agent(policy: ExecutionPolicy, snapshot: bool) -> Agent {
    let pay = from_fn("pay", "Pay.", |_: Value, _cx| async {
        Ok::<_, ToolError>("paid")
    })
    .with_meta(ToolMeta::new().side_effect(true));
    let read = from_fn("read", "Read.", |_: Value, _cx| async {
        Ok::<_, ToolError>("contents")
    });
    let model = ScriptedModel::new([
        Turn::tool_calls([
            ScriptedCall::new("pay", json!({})),
            ScriptedCall::new("read", json!({})),
        ]),
        Turn::text("done"),
    ]);
    let builder = Agent::builder(model).tool(pay).tool(read).execution(policy);
    match snapshot {
        true => builder.durability_snapshot(NoSnapshot).build(),
        false => builder.build(),
    }
}

async fn events(policy: ExecutionPolicy, snapshot: bool) -> Vec<String> {
    let log = Recorder::default();
    let input = RunInput::new(vec![Message::user("go")]).with_log(Arc::new(log.clone()));
    let out = agent(policy, snapshot).run(input).await.unwrap();
    assert_eq!(out.text, "done");
    log.events()
}

#[tokio::test]
async fn sequential_execution_hands_each_outcome_to_the_save_that_follows_it() {
    let events = events(ExecutionPolicy::Sequential, false).await;
    let calls: Vec<&str> = events
        .iter()
        .map(String::as_str)
        .skip_while(|e| *e != "save_before_calls")
        .take(7)
        .collect();
    assert_eq!(
        calls,
        [
            "save_before_calls",
            "intend pay",
            "settle_before_save pay",
            "save running",
            "intend read",
            "settle_before_save read",
            "save running",
        ],
        "{events:?}"
    );
    assert_eq!(events.last().map(String::as_str), Some("save finished"));
}

#[tokio::test]
async fn parallel_execution_settles_each_call_as_it_ends() {
    let events = events(ExecutionPolicy::Parallel { max: 2 }, false).await;
    assert!(
        !events.iter().any(|e| e.starts_with("settle_before_save")),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| e == "save_before_calls"),
        "calls that run together are saved before any starts: {events:?}"
    );
    let settled = events.iter().filter(|e| e.starts_with("settle ")).count();
    assert_eq!(settled, 2, "{events:?}");
    let last_settle = events
        .iter()
        .rposition(|e| e.starts_with("settle "))
        .unwrap();
    assert_eq!(
        events[last_settle + 1],
        "save running",
        "the step is saved once its calls are settled: {events:?}"
    );
}

#[tokio::test]
async fn with_a_snapshot_hook_between_call_and_save_outcomes_are_settled_at_once() {
    let events = events(ExecutionPolicy::Sequential, true).await;
    assert!(
        !events.iter().any(|e| e.starts_with("settle_before_save")),
        "{events:?}"
    );
    assert!(events.contains(&"settle pay".to_string()), "{events:?}");
}
