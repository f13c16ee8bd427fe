//! The Smithers-compatible warning for side-effecting, non-idempotent tools that ignore their
//! idempotency key.

use std::sync::Arc;

use serde_json::Value;
use toolsmith_agent::{Agent, Committed, LogBatch, RunInput, RunLog, RunLogError};
use toolsmith_core::{Message, ToolError, ToolMeta, async_trait, from_fn};
use toolsmith_providers::{ScriptedModel, Turn};

use crate::common::Logs;

/// A log that records nothing: only its presence matters here.
struct NoLog;

#[async_trait]
impl RunLog for NoLog {
    async fn commit(&self, _: LogBatch<'_>) -> Result<Committed, RunLogError> {
        Ok(Committed::default())
    }
}

#[tokio::test]
async fn a_run_with_a_log_warns_once_of_each_side_effect_tool_that_ignores_its_key() {
    let (logs, _guard) = Logs::capture();
    // Names of their own: the warning is once per tool name per process, and other tests of
    // this binary run agents too.
    let unkeyed = from_fn("wire_funds", "Wire.", |_: Value, _cx| async {
        Ok::<_, ToolError>("sent")
    })
    .with_meta(ToolMeta::new().side_effect(true));
    let keyed = from_fn("wire_funds_keyed", "Wire.", |_: Value, _cx| async {
        Ok::<_, ToolError>("sent")
    })
    .with_meta(
        ToolMeta::new()
            .side_effect(true)
            .accepts_idempotency_key(true),
    );
    let agent = Agent::builder(ScriptedModel::new([
        Turn::text("done"),
        Turn::text("done"),
        Turn::text("done"),
    ]))
    .tool(unkeyed)
    .tool(keyed)
    .build();
    for _ in 0..2 {
        let input = RunInput::new(vec![Message::user("go")]).with_log(Arc::new(NoLog));
        agent.run(input).await.unwrap();
    }
    // Without a log nothing retries: no warning.
    agent.run("go").await.unwrap();
    let logs = logs.text();
    let warning = "[toolsmith] tool wire_funds: side_effect: true, idempotent: false tools \
                   should read ToolContext::idempotency_key() (and declare \
                   accepts_idempotency_key) so that a retried call can be deduplicated.";
    assert_eq!(logs.matches(warning).count(), 1, "{logs}");
    assert!(!logs.contains("wire_funds_keyed:"), "{logs}");
}
