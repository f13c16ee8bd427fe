//! The Smithers-compatible durability snapshot: after each successful call of a side-effecting
//! tool, never after a read-only or a failed one; its failure is logged and swallowed.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolsmith_agent::{Agent, DurabilitySnapshot};
use toolsmith_core::{ToolError, ToolMeta, async_trait, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

#[derive(Clone, Default)]
struct Snapshots {
    taken: Arc<Mutex<Vec<(String, String)>>>,
    fail: bool,
}

#[async_trait]
impl DurabilitySnapshot for Snapshots {
    async fn snapshot(&self, tool_name: &str, tool_call_id: &str) -> Result<(), String> {
        self.taken
            .lock()
            .unwrap()
            .push((tool_name.to_string(), tool_call_id.to_string()));
        if self.fail {
            return Err("the disk is full".to_string());
        }
        Ok(())
    }
}

fn agent(snapshots: Snapshots) -> Agent {
    let write = from_fn("write", "Write.", |_: Value, _cx| async {
        Ok::<_, ToolError>("written")
    })
    .with_meta(ToolMeta::new().side_effect(true));
    let broken = from_fn("broken_write", "Fails.", |_: Value, _cx| async {
        Err::<Value, _>(ToolError::new("DISK", "no space"))
    })
    .with_meta(ToolMeta::new().side_effect(true));
    let read = from_fn("read", "Read.", |_: Value, _cx| async {
        Ok::<_, ToolError>("contents")
    });
    let model = ScriptedModel::new([
        Turn::tool_calls([
            ScriptedCall::new("write", json!({})),
            ScriptedCall::new("read", json!({})),
            ScriptedCall::new("broken_write", json!({})),
        ]),
        Turn::text("done"),
    ]);
    Agent::builder(model)
        .tool(write)
        .tool(broken)
        .tool(read)
        .durability_snapshot(snapshots)
        .build()
}

#[tokio::test]
async fn a_snapshot_follows_each_successful_side_effect_only() {
    let snapshots = Snapshots::default();
    let out = agent(snapshots.clone()).run("go").await.unwrap();
    let taken = snapshots.taken.lock().unwrap().clone();
    let write_id = out.steps[0].tool_results[0].tool_call_id.clone();
    assert_eq!(taken, [("write".to_string(), write_id)]);
}

#[tokio::test]
async fn a_failing_snapshot_is_swallowed() {
    let snapshots = Snapshots {
        fail: true,
        ..Default::default()
    };
    let out = agent(snapshots.clone()).run("go").await.unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(
        out.steps[0].tool_results[0].output_value(),
        Some(&json!("written")),
        "the call's result stands"
    );
    assert_eq!(snapshots.taken.lock().unwrap().len(), 1);
}
