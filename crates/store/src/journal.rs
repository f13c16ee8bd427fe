//! The tool-call journal (Smithers' `recordToolCall`) and the idempotency ledger.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call as the journal records it: written `intended` before the call executes,
/// settled with its outcome after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEntry {
    /// The thread.
    pub thread_id: String,
    /// The run.
    pub run_id: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The order of calls within the thread, from 0.
    pub seq: u64,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The validated input.
    pub input: Value,
    /// Whether the tool changes the world.
    pub side_effect: bool,
    /// Whether running it twice is safe.
    pub idempotent: bool,
    /// The idempotency key the tool saw (`<run id>:<tool call id>`, or the run's Smithers key
    /// `smithers:<run>:<node>:<iteration>` / the caller's own when the run carries Smithers
    /// context), recorded as Smithers records it: only when the tool accepts it
    /// ([`accepts_idempotency_key`](Self::accepts_idempotency_key)), `None` (null) otherwise.
    /// It is a record, never a lookup key: a Smithers key is shared by every call of one task
    /// iteration, so the ledger keys each call by [`ledger_key`](Self::ledger_key) instead.
    pub idempotency_key: Option<String>,
    /// Whether the tool declares that it uses the key (Smithers' `acceptsIdempotencyKey`).
    #[serde(default)]
    pub accepts_idempotency_key: bool,
    /// Whether the tool has a revert hook (Smithers' `hasRevert`).
    #[serde(default)]
    pub has_revert: bool,
    /// Where the call stands.
    pub status: EffectStatus,
    /// The result, once settled: the app value, or the error (`{code, message}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

/// A call's outcome to record ([`Op::Settle`](crate::Op::Settle)).
#[derive(Debug, Clone, Copy)]
pub struct Settlement<'a> {
    /// The call's entry, as intended.
    pub entry: &'a JournalEntry,
    /// What became of it.
    pub status: EffectStatus,
    /// Its output: the app value, or the error (`{code, message}`).
    pub output: &'a Value,
}

impl JournalEntry {
    /// The key the idempotency ledger knows this call by: `<run id>:<tool call id>`, the same
    /// for every attempt of the call (a resumed run keeps its run id) and different for every
    /// other call — also when the calls share a Smithers
    /// [`idempotency_key`](Self::idempotency_key), so that two different calls of one task
    /// iteration both run, and the same call resumed is still recognised.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolsmith_store::{EffectStatus, JournalEntry};
    ///
    /// let call = |id: &str| JournalEntry {
    ///     thread_id: "t".into(),
    ///     run_id: "r".into(),
    ///     tool_call_id: id.into(),
    ///     tool_name: "pay".into(),
    ///     seq: 0,
    ///     attempt: 1,
    ///     input: json!({}),
    ///     side_effect: true,
    ///     idempotent: false,
    ///     idempotency_key: Some("smithers:r:review:0".into()),
    ///     accepts_idempotency_key: true,
    ///     has_revert: false,
    ///     status: EffectStatus::Intended,
    ///     output: None,
    /// };
    /// assert_eq!(call("c1").ledger_key(), "r:c1");
    /// assert_eq!(call("c2").key_to_claim().as_deref(), Some("r:c2"));
    /// ```
    pub fn ledger_key(&self) -> String {
        format!("{}:{}", self.run_id, self.tool_call_id)
    }

    /// The key the ledger claims for this call: its [`ledger_key`](Self::ledger_key), when the
    /// call is unsafe to repeat (`side_effect && !idempotent`).
    pub fn key_to_claim(&self) -> Option<String> {
        (self.side_effect && !self.idempotent).then(|| self.ledger_key())
    }

    /// Whether `other` records the same attempt of the same call: the journal's key (thread,
    /// run, tool call id, attempt).
    pub(crate) fn same_attempt(&self, other: &JournalEntry) -> bool {
        self.thread_id == other.thread_id
            && self.run_id == other.run_id
            && self.tool_call_id == other.tool_call_id
            && self.attempt == other.attempt
    }

    /// How errors name its record: `journal entry <run>/<call>/<attempt>`.
    pub(crate) fn record_name(&self) -> String {
        format!(
            "journal entry {}/{}/{}",
            self.run_id, self.tool_call_id, self.attempt
        )
    }
}

/// Smithers' effect statuses. The phase follows: `started` while `intended`, `finished`
/// once `succeeded`, `failed` once `failed` or `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EffectStatus {
    /// About to execute; if it stays so, the process died during the call.
    Intended,
    /// Executed and returned a result.
    Succeeded,
    /// Failed, its effect known not to stand (a revert hook undid it).
    Failed,
    /// Failed, and whether it had its effect is not known: the tool returned an error
    /// (Smithers records every thrown error so), or a crash interrupted it and nothing could tell.
    Unknown,
}

impl EffectStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            EffectStatus::Intended => "intended",
            EffectStatus::Succeeded => "succeeded",
            EffectStatus::Failed => "failed",
            EffectStatus::Unknown => "unknown",
        }
    }

    /// Smithers' phase: `started` or `finished` / `failed`.
    pub fn phase(self) -> &'static str {
        match self {
            EffectStatus::Intended => "started",
            EffectStatus::Succeeded => "finished",
            EffectStatus::Failed | EffectStatus::Unknown => "failed",
        }
    }

    /// The status a stored name names.
    pub fn parse(name: &str) -> Option<EffectStatus> {
        [
            EffectStatus::Intended,
            EffectStatus::Succeeded,
            EffectStatus::Failed,
            EffectStatus::Unknown,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// What the idempotency ledger knows of a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The key was not there: it is recorded `intended` now, and the call may execute.
    New,
    /// The key was claimed before: the effect may have happened. Do not execute blindly.
    Existing {
        /// Its status.
        status: EffectStatus,
        /// Its result, when settled.
        output: Option<Value>,
    },
}

#[cfg(test)]
mod tests {
    //! The ledger under a Smithers key, end to end: a stored run whose calls all see one key.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use serde_json::{Map, Value, json};
    use toolsmith_agent::{Agent, EFFECT_UNKNOWN, RunOutput};
    use toolsmith_core::{
        Message, ModelOutput, Part, Role, Tool, ToolCallPart, ToolError, ToolMeta, from_fn,
    };
    use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

    use super::*;
    use crate::{Batch, Holder, NewThread, SqliteStore, Store, StoredRun, ThreadStatus};

    const SMITHERS_KEY: &str = "smithers:run-1:review:1";

    fn smithers() -> Map<String, Value> {
        serde_json::from_value(json!({"nodeId": "review", "iteration": 1})).unwrap()
    }

    /// A side-effecting, non-idempotent tool that counts its executions and returns the key
    /// it saw; `keyed`: it declares it reads the key.
    fn tool(name: &'static str, count: &Arc<AtomicU32>, keyed: bool) -> impl Tool + use<> {
        let count = count.clone();
        from_fn(name, "Move money.", move |_: Value, cx| {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(cx.idempotency_key().to_string())
            }
        })
        .with_meta(
            ToolMeta::new()
                .side_effect(true)
                .accepts_idempotency_key(keyed),
        )
    }

    async fn sqlite() -> (tempfile::TempDir, Arc<dyn Store>) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        (dir, Arc::new(store))
    }

    fn result_of(out: &RunOutput, id: &str) -> ModelOutput {
        out.messages
            .iter()
            .flat_map(|m| m.tool_results_iter())
            .find(|r| r.tool_call_id == id)
            .map(|r| r.output.clone())
            .unwrap()
    }

    #[tokio::test]
    async fn two_calls_of_one_iteration_share_the_smithers_key_and_both_run_and_are_journaled() {
        let (_dir, store) = sqlite().await;
        let (pays, charges) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let model = ScriptedModel::new([
            Turn::tool_calls([
                ScriptedCall::new("pay", json!({"to": "bob"})).with_id("c1"),
                ScriptedCall::new("pay", json!({"to": "carol"})).with_id("c2"),
                ScriptedCall::new("charge", json!({})).with_id("c3"),
            ]),
            Turn::text("Paid."),
        ]);
        let agent = Agent::builder(model)
            .tool(tool("pay", &pays, true))
            .tool(tool("charge", &charges, false))
            .build();
        let prompt = vec![Message::user("Pay Bob and Carol.")];
        let (run, messages) = StoredRun::start(store.clone(), "t", prompt).await.unwrap();
        let run_id = run.run_id().to_string();
        let input = run.input(messages).with_metadata(smithers());
        let out = agent.run(input).await.unwrap();
        assert_eq!(out.text, "Paid.");
        assert_eq!(
            (pays.load(Ordering::SeqCst), charges.load(Ordering::SeqCst)),
            (2, 1),
            "every call ran once"
        );
        let key = format!("smithers:{run_id}:review:1");
        assert_eq!(result_of(&out, "c2"), ModelOutput::text(&key));
        let journal = store.journal("t").await.unwrap();
        let recorded: Vec<(&str, EffectStatus, Option<&str>)> = journal
            .iter()
            .map(|e| {
                let key = e.idempotency_key.as_deref();
                (e.tool_call_id.as_str(), e.status, key)
            })
            .collect();
        assert_eq!(
            recorded,
            [
                ("c1", EffectStatus::Succeeded, Some(key.as_str())),
                ("c2", EffectStatus::Succeeded, Some(key.as_str())),
                // Smithers records the key only for a tool that reads it.
                ("c3", EffectStatus::Succeeded, None),
            ]
        );
    }

    /// A thread as a process killed during call `c1` of two `pay` calls leaves it: both calls
    /// in the assistant message, `c1` journaled `intended` with its key claimed, no results.
    async fn crashed(store: &dyn Store) {
        store.create_thread(NewThread::new("t")).await.unwrap();
        store
            .claim("t", 0, "run-1", &Holder::current())
            .await
            .unwrap();
        let call = |id: &str, to: &str| {
            Part::ToolCall(ToolCallPart {
                tool_call_id: id.into(),
                tool_name: "pay".into(),
                input: json!({"to": to}),
                provider_executed: false,
                provider_metadata: Default::default(),
            })
        };
        let messages = [
            Message::user("Pay Bob and Carol."),
            Message::new(
                Role::Assistant,
                vec![call("c1", "bob"), call("c2", "carol")],
            ),
        ];
        let write = crate::ThreadWrite::new("t", 1, 0, &messages, ThreadStatus::Running);
        store.commit(Batch::new().write(write)).await.unwrap();
        let entry = JournalEntry {
            thread_id: "t".into(),
            run_id: "run-1".into(),
            tool_call_id: "c1".into(),
            tool_name: "pay".into(),
            seq: 0,
            attempt: 1,
            input: json!({"to": "bob"}),
            side_effect: true,
            idempotent: false,
            idempotency_key: Some(SMITHERS_KEY.into()),
            accepts_idempotency_key: true,
            has_revert: false,
            status: EffectStatus::Intended,
            output: None,
        };
        store.commit(Batch::new().intend(&entry)).await.unwrap();
    }

    #[tokio::test]
    async fn a_resumed_call_is_recognised_and_its_sibling_under_the_same_key_runs() {
        let (_dir, store) = sqlite().await;
        crashed(&*store).await;
        let pays = Arc::new(AtomicU32::new(0));
        let agent = Agent::builder(ScriptedModel::new([Turn::text("Done.")]))
            .tool(tool("pay", &pays, true))
            .build();
        let (run, messages) = StoredRun::resume(store.clone(), "t", std::time::Duration::ZERO)
            .await
            .unwrap();
        let out = agent
            .run(run.input(messages).with_metadata(smithers()))
            .await
            .unwrap();
        assert_eq!(
            pays.load(Ordering::SeqCst),
            1,
            "only the call never started ran"
        );
        let interrupted = serde_json::to_value(result_of(&out, "c1")).unwrap();
        assert!(
            interrupted
                .to_string()
                .contains("may or may not have taken effect"),
            "the interrupted call is not run blindly again: {interrupted}"
        );
        assert_eq!(result_of(&out, "c2"), ModelOutput::text(SMITHERS_KEY));
        let journal = store.journal("t").await.unwrap();
        let statuses: Vec<(&str, EffectStatus)> = journal
            .iter()
            .map(|e| (e.tool_call_id.as_str(), e.status))
            .collect();
        assert_eq!(
            statuses,
            [
                ("c1", EffectStatus::Unknown),
                ("c2", EffectStatus::Succeeded)
            ]
        );
        assert_eq!(journal[0].output.as_ref().unwrap()["code"], EFFECT_UNKNOWN);
    }
}
