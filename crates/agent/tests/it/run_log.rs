//! What each commit of a run's log holds: the step saved before its calls, the intent before
//! each call, the outcome after it, and the thread saved before the next call (sequential) or
//! the next step (parallel) — two commits per side-effecting call. Sequential execution writes
//! the step with the first intent and each outcome with the save that follows it; parallel
//! execution, where other calls still run before the save, saves the step at once and settles
//! each side-effecting call as it ends. A call without side effects is only asked about before
//! it runs (nothing waiting is written then) and its outcome always waits for the next save. A
//! call stopped before it returned is settled `unknown` with the next commit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_agent::{
    Agent, Committed, DurabilitySnapshot, ExecutionPolicy, LogBatch, RunInput, RunLog, RunLogError,
    RunState, Settled,
};
use toolsmith_core::{Message, ToolError, ToolMeta, async_trait, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

/// Records each commit the run makes to its log, as `"settle <tool>:<outcome> + save <state> +
/// intend <tool>"` (the parts it holds).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn events(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

#[async_trait]
impl RunLog for Recorder {
    async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError> {
        let mut parts: Vec<String> = batch
            .settled
            .iter()
            .map(|s| {
                let outcome = match &s.settled {
                    Settled::Succeeded(_) => "ok",
                    Settled::Failed(_) => "failed",
                    Settled::Unknown(_) => "unknown",
                };
                format!("settle {}:{outcome}", s.call.tool_name)
            })
            .collect();
        if let Some(save) = batch.save {
            let state = match save.state {
                RunState::Running => "running",
                RunState::Paused(_) => "paused",
                RunState::Finished => "finished",
                RunState::Failed => "failed",
                RunState::HandedBack => "handed back",
            };
            parts.push(format!("save {state}"));
        }
        if let Some(call) = batch.intend {
            parts.push(format!("intend {}", call.tool_name));
        }
        self.0.lock().unwrap().push(parts.join(" + "));
        Ok(Committed::default())
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

/// The commits from the first one that records an intent.
fn from_first_intent(events: &[String]) -> Vec<&str> {
    events
        .iter()
        .map(String::as_str)
        .skip_while(|e| !e.contains("intend"))
        .collect()
}

#[tokio::test]
async fn sequential_execution_writes_each_call_in_two_commits() {
    let events = events(ExecutionPolicy::Sequential, false).await;
    assert_eq!(
        from_first_intent(&events),
        [
            "save running + intend pay",
            "settle pay:ok + save running",
            "intend read",
            "settle read:ok + save running",
            "save finished",
        ],
        "{events:?}"
    );
}

#[tokio::test]
async fn parallel_execution_settles_each_side_effecting_call_as_it_ends() {
    let events = events(ExecutionPolicy::Parallel { max: 2 }, false).await;
    let commits = from_first_intent(&events);
    let intents = commits.iter().filter(|e| e.starts_with("intend")).count();
    assert_eq!(intents, 2, "one commit each: {events:?}");
    assert!(
        commits.contains(&"settle pay:ok"),
        "the side-effecting call is settled as it ends: {events:?}"
    );
    let save = commits
        .iter()
        .position(|e| e.ends_with("save running"))
        .unwrap();
    assert_eq!(
        commits[save], "settle read:ok + save running",
        "the step is saved once its calls are settled, with the call without side effects: \
         {events:?}"
    );
    assert!(commits[..save].contains(&"settle pay:ok"), "{events:?}");
}

#[tokio::test]
async fn a_call_without_side_effects_is_one_commit_with_the_save_of_its_result() {
    let read = from_fn("read", "Read.", |_: Value, _cx| async {
        Ok::<_, ToolError>("contents")
    });
    let model = ScriptedModel::new([
        Turn::tool_calls([ScriptedCall::new("read", json!({}))]),
        Turn::text("done"),
    ]);
    let log = Recorder::default();
    let input = RunInput::new(vec![Message::user("go")]).with_log(Arc::new(log.clone()));
    let out = Agent::builder(model)
        .tool(read)
        .build()
        .run(input)
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    let events = log.events();
    // The step's assistant message waits past the intent: it is written with the result.
    assert_eq!(
        from_first_intent(&events),
        [
            "intend read",
            "settle read:ok + save running",
            "save finished"
        ],
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .take_while(|e| !e.contains("intend"))
            .all(|e| e == "save running"),
        "{events:?}"
    );
}

#[tokio::test]
async fn with_a_snapshot_hook_between_call_and_save_outcomes_are_settled_at_once() {
    let events = events(ExecutionPolicy::Sequential, true).await;
    let commits = from_first_intent(&events);
    assert!(commits.contains(&"settle pay:ok"), "{events:?}");
    assert!(commits.contains(&"save running"), "{events:?}");
}

#[tokio::test]
async fn a_call_stopped_by_its_timeout_is_settled_unknown_with_the_next_commit() {
    let slow = from_fn("slow", "Slow.", |_: Value, _cx| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok::<_, ToolError>("late")
    })
    .with_meta(ToolMeta::new().side_effect(true));
    let model = ScriptedModel::new([
        Turn::tool_calls([ScriptedCall::new("slow", json!({}))]),
        Turn::text("done"),
    ]);
    let agent = Agent::builder(model)
        .tool(slow)
        .tool_timeout(Duration::from_millis(50))
        .build();
    let log = Recorder::default();
    let input = RunInput::new(vec![Message::user("go")]).with_log(Arc::new(log.clone()));
    let out = agent.run(input).await.unwrap();
    assert_eq!(out.text, "done");
    let events = log.events();
    assert_eq!(
        from_first_intent(&events)[..2],
        [
            "save running + intend slow",
            "settle slow:unknown + save running"
        ],
        "{events:?}"
    );
}
