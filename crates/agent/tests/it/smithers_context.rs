//! The Smithers-compatible context a call sees: the run's Smithers idempotency key (and what the
//! run's log records of it), the tool's flags, and the run's call sequence (`seq`).

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use toolsmith_agent::{Agent, Committed, ExecutionPolicy, LogBatch, RunInput, RunLog, RunLogError};
use toolsmith_core::{Message, ToolError, ToolMeta, async_trait, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

/// What the calls saw, one line per call.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Records the idempotency key of each call the run intends, as `<tool>=<key or null>`.
#[derive(Clone, Default)]
struct Keys(Seen);

#[async_trait]
impl RunLog for Keys {
    async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError> {
        if let Some(call) = batch.intend {
            let key = call.idempotency_key.as_deref().unwrap_or("null");
            self.0.push(format!("{}={key}", call.tool_name));
        }
        Ok(Committed::default())
    }
}

fn metadata(value: Value) -> Map<String, Value> {
    serde_json::from_value(value).unwrap()
}

/// An agent whose tools `pay` (side effect, reads its key), `charge` (side effect, does not
/// declare it reads its key) and `read` (no side effect) each report what their context says;
/// the model calls `calls` in one step (ids `c1`, `c2`, …), then one more `read` in a second.
fn agent(seen: &Seen, calls: &[&str], policy: ExecutionPolicy) -> Agent {
    let tool = |name: &'static str, meta: ToolMeta| {
        let seen = seen.clone();
        from_fn(name, "Report the context.", move |_: Value, cx| {
            let seen = seen.clone();
            async move {
                seen.push(format!(
                    "{name} key={} side_effect={} idempotent={} seq={}",
                    cx.idempotency_key(),
                    cx.side_effect(),
                    cx.idempotent(),
                    cx.seq()
                ));
                Ok::<_, ToolError>("ok")
            }
        })
        .with_meta(meta)
    };
    let first = calls
        .iter()
        .enumerate()
        .map(|(i, name)| ScriptedCall::new(*name, json!({})).with_id(format!("c{}", i + 1)));
    let model = ScriptedModel::new([
        Turn::tool_calls(first),
        Turn::tool_calls([ScriptedCall::new("read", json!({})).with_id("last")]),
        Turn::text("done"),
    ]);
    let keyed = ToolMeta::new()
        .side_effect(true)
        .accepts_idempotency_key(true);
    Agent::builder(model)
        .tool(tool("pay", keyed))
        .tool(tool("charge", ToolMeta::new().side_effect(true)))
        .tool(tool("read", ToolMeta::new()))
        .execution(policy)
        .build()
}

async fn run(calls: &[&str], meta: Value, log: Option<&Keys>) -> Vec<String> {
    let seen = Seen::default();
    let mut input = RunInput::new(vec![Message::user("go")])
        .with_run_id("run-1")
        .with_metadata(metadata(meta));
    if let Some(log) = log {
        input = input.with_log(Arc::new(log.clone()));
    }
    let out = agent(&seen, calls, ExecutionPolicy::Sequential)
        .run(input)
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    seen.lines()
}

/// The value of `field=` in each line.
fn field<'a>(lines: &'a [String], name: &str) -> Vec<&'a str> {
    let prefix = format!("{name}=");
    lines
        .iter()
        .map(|l| {
            l.split(' ')
                .find_map(|w| w.strip_prefix(prefix.as_str()))
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn with_smithers_metadata_a_call_sees_the_smithers_key_and_without_it_its_own() {
    let smithers = json!({"nodeId": "review", "iteration": 2});
    let seen = run(&["pay", "charge"], smithers, None).await;
    assert_eq!(
        field(&seen, "key"),
        ["smithers:run-1:review:2"; 3],
        "one key for every call of the task iteration: {seen:?}"
    );
    let own = json!({"nodeId": "review", "idempotencyKey": "order-7"});
    let seen = run(&["pay"], own, None).await;
    assert_eq!(field(&seen, "key"), ["order-7"; 2], "{seen:?}");
    // No node id (or a falsy one): no Smithers context, the per-call key.
    for plain in [json!({}), json!({"nodeId": ""}), json!({"iteration": 2})] {
        let seen = run(&["pay", "charge"], plain.clone(), None).await;
        assert_eq!(
            field(&seen, "key"),
            ["run-1:c1", "run-1:c2", "run-1:last"],
            "{plain}"
        );
    }
}

#[tokio::test]
async fn the_log_records_the_key_only_for_a_tool_that_reads_it() {
    let smithers = json!({"nodeId": "review", "iteration": 2});
    let log = Keys::default();
    run(&["pay", "charge"], smithers, Some(&log)).await;
    assert_eq!(
        log.0.lines(),
        ["pay=smithers:run-1:review:2", "charge=null", "read=null"]
    );
    let log = Keys::default();
    run(&["pay", "charge"], json!({}), Some(&log)).await;
    assert_eq!(log.0.lines(), ["pay=run-1:c1", "charge=null", "read=null"]);
}

#[tokio::test]
async fn a_call_sees_its_tools_flags() {
    let seen = run(&["pay", "charge", "read"], json!({}), None).await;
    assert_eq!(
        field(&seen, "side_effect"),
        ["true", "true", "false", "false"]
    );
    // `idempotent` defaults to `!side_effect`.
    assert_eq!(
        field(&seen, "idempotent"),
        ["false", "false", "true", "true"]
    );
}

#[tokio::test]
async fn the_sequence_counts_the_runs_calls_from_the_metadatas_seq() {
    let seq = |lines: Vec<String>| field(&lines, "seq").join(",");
    assert_eq!(seq(run(&["pay", "read"], json!({}), None).await), "1,2,3");
    assert_eq!(
        seq(run(&["pay", "read"], json!({"seq": 4}), None).await),
        "5,6,7"
    );
    for restart in [json!({"seq": null}), json!({"seq": false})] {
        let lines = run(&["read"], restart.clone(), None).await;
        assert_eq!(seq(lines), "1,2", "{restart}");
    }
}

#[tokio::test]
async fn parallel_calls_are_numbered_in_the_order_they_start() {
    let seen = Seen::default();
    let calls = ["pay", "charge", "read", "pay"];
    agent(&seen, &calls, ExecutionPolicy::Parallel { max: 4 })
        .run(RunInput::new(vec![Message::user("go")]).with_run_id("run-1"))
        .await
        .unwrap();
    let mut lines = seen.lines();
    lines.sort_by_key(|l| l.split(' ').nth(1).map(str::to_string));
    // Sorted by key (`run-1:c1` …): the model's order; each call's number follows it.
    assert_eq!(field(&lines, "seq"), ["1", "2", "3", "4", "5"], "{lines:?}");
}
