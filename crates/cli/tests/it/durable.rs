//! Stored runs in process, on a real SQLite file: what the journal decides for each call a
//! crash left behind. The crash is staged in the store as a killed process leaves it: the
//! assistant message with its calls saved, the calls journaled `intended` (or settled), no
//! results. (`cli_crash.rs` kills real processes.)

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Value, json};
use toolsmith::agent::{EFFECT_REVERTED, EFFECT_UNKNOWN, RunErrorKind};
use toolsmith::durable::{DurableError, StoredRun};
use toolsmith::prelude::*;
use toolsmith::providers::{ScriptedCall, ScriptedModel, Turn};
use toolsmith::store::{
    Batch, EffectStatus, Holder, JournalEntry, NewThread, Settlement, SqliteStore, Store,
    ThreadStatus, ThreadWrite,
};
use toolsmith::{Part, Reconcile, Revert, Role, ToolCallPart, VariableKind};

const RUN: &str = "run-1";

/// A side-effecting, non-idempotent tool that counts its executions.
fn pay(count: Arc<AtomicU32>, meta: ToolMeta) -> impl Tool {
    from_fn("pay", "Pay someone.", move |_: Value, _cx| {
        let count = count.clone();
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(json!({"paid": true}))
        }
    })
    .with_meta(meta)
}

fn side_effect() -> ToolMeta {
    ToolMeta::new().side_effect(true)
}

/// A thread as a process killed during call `call_1` of `tool` leaves it.
async fn crashed(store: &dyn Store, thread: &str, tool: &str, unsafe_call: bool) {
    crashed_with(store, thread, tool, json!({"to": "bob"}), unsafe_call).await;
}

async fn crashed_with(
    store: &dyn Store,
    thread: &str,
    tool: &str,
    input: Value,
    unsafe_call: bool,
) {
    interrupted_step(store, thread, tool, input.clone()).await;
    let entry = JournalEntry {
        thread_id: thread.into(),
        run_id: RUN.into(),
        tool_call_id: "call_1".into(),
        tool_name: tool.into(),
        seq: 0,
        attempt: 1,
        input,
        side_effect: true,
        idempotent: !unsafe_call,
        idempotency_key: Some(format!("{RUN}:call_1")),
        accepts_idempotency_key: false,
        has_revert: false,
        status: EffectStatus::Intended,
        output: None,
    };
    // Recorded, and its key claimed when the call is unsafe to repeat.
    store.commit(Batch::new().intend(&entry)).await.unwrap();
}

/// A thread as a process killed during call `call_1` of `tool` leaves it, before any journal
/// entry of the call.
async fn interrupted_step(store: &dyn Store, thread: &str, tool: &str, input: Value) {
    store.create_thread(NewThread::new(thread)).await.unwrap();
    store
        .claim(thread, 0, RUN, &Holder::current())
        .await
        .unwrap();
    let call = ToolCallPart {
        tool_call_id: "call_1".into(),
        tool_name: tool.into(),
        input,
        provider_executed: false,
        provider_metadata: Default::default(),
    };
    let messages = [
        Message::user("Pay Bob."),
        Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
    ];
    let write = ThreadWrite::new(thread, 1, 0, &messages, ThreadStatus::Running);
    store.commit(Batch::new().write(write)).await.unwrap();
}

/// Resumes `thread` (its lease is long past: the test set the clock) with `agent`.
async fn resume(store: Arc<dyn Store>, thread: &str, agent: &Agent) -> RunOutput {
    let (run, messages) = StoredRun::resume(store, thread, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        run.run_id(),
        RUN,
        "a resumed run keeps its id, and so its keys"
    );
    agent.run(run.input(messages)).await.unwrap()
}

fn result_of(out: &RunOutput, call: &str) -> ModelOutput {
    out.messages
        .iter()
        .flat_map(|m| m.tool_results_iter())
        .find(|r| r.tool_call_id == call)
        .map(|r| r.output.clone())
        .expect("the call has a result")
}

async fn sqlite() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
    (dir, Arc::new(store))
}

#[tokio::test]
async fn an_unsettled_side_effect_is_not_run_again_and_the_model_is_warned() {
    let (_dir, store) = sqlite().await;
    crashed(&*store, "t", "pay", true).await;
    let count = Arc::new(AtomicU32::new(0));
    let agent = Agent::builder(ScriptedModel::new([Turn::text("I will check first.")]))
        .tool(pay(count.clone(), side_effect()))
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(count.load(Ordering::SeqCst), 0, "never re-run blindly");
    let output = serde_json::to_value(result_of(&out, "call_1")).unwrap();
    assert!(
        output
            .to_string()
            .contains("may or may not have taken effect")
    );
    let warning = out
        .messages
        .iter()
        .find(|m| m.role == Role::User && m.text().contains("[smithers:tool-resume-warning]"))
        .expect("the resume warning");
    assert!(
        warning
            .text()
            .contains("- pay (attempt 1, seq 0, status unknown)"),
        "{}",
        warning.text()
    );
    let journal = store.journal("t").await.unwrap();
    assert_eq!(journal[0].status, EffectStatus::Unknown);
    assert_eq!(journal[0].output.as_ref().unwrap()["code"], EFFECT_UNKNOWN);
    let thread = store.thread("t").await.unwrap().unwrap();
    assert_eq!(thread.status, ThreadStatus::Idle, "the run finished");
    assert_eq!(store.messages("t").await.unwrap(), out.messages);
}

struct FoundPayment;

#[async_trait]
impl Reconcile for FoundPayment {
    async fn reconcile(
        &self,
        _: &Value,
        cx: &ToolContext,
    ) -> Result<Option<ToolOutput>, ToolError> {
        assert_eq!(
            cx.idempotency_key(),
            "run-1:call_1",
            "the interrupted call's key"
        );
        Ok(Some(ToolOutput::json(
            json!({"paid": true, "reconciled": true}),
        )))
    }
}

struct NoPayment;

#[async_trait]
impl Reconcile for NoPayment {
    async fn reconcile(&self, _: &Value, _: &ToolContext) -> Result<Option<ToolOutput>, ToolError> {
        Ok(None)
    }
}

#[tokio::test]
async fn a_reconcile_hook_settles_an_interrupted_call() {
    // It had happened: its result, without running again.
    let (_dir, store) = sqlite().await;
    crashed(&*store, "t", "pay", true).await;
    let count = Arc::new(AtomicU32::new(0));
    let meta = side_effect().reconcile(FoundPayment).unwrap();
    let agent = Agent::builder(ScriptedModel::new([Turn::text("Paid.")]))
        .tool(pay(count.clone(), meta))
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert_eq!(
        result_of(&out, "call_1"),
        ModelOutput::json(json!({"paid": true, "reconciled": true}))
    );
    assert_eq!(
        store.journal("t").await.unwrap()[0].status,
        EffectStatus::Succeeded
    );

    // It had not: the call runs now, once.
    let (_dir, store) = sqlite().await;
    crashed(&*store, "t", "pay", true).await;
    let meta = side_effect().reconcile(NoPayment).unwrap();
    let agent = Agent::builder(ScriptedModel::new([Turn::text("Paid.")]))
        .tool(pay(count.clone(), meta))
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(
        result_of(&out, "call_1"),
        ModelOutput::json(json!({"paid": true}))
    );
}

struct Refund(Arc<AtomicU32>);

#[async_trait]
impl Revert for Refund {
    async fn revert(&self, _: &Value, _: &ToolContext) -> Result<(), ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn a_revert_hook_undoes_an_interrupted_call_and_the_model_is_told() {
    let (_dir, store) = sqlite().await;
    crashed(&*store, "t", "pay", true).await;
    let (count, refunds) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let meta = side_effect().revert(Refund(refunds.clone())).unwrap();
    let agent = Agent::builder(ScriptedModel::new([Turn::text("Reverted.")]))
        .tool(pay(count.clone(), meta))
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(
        (count.load(Ordering::SeqCst), refunds.load(Ordering::SeqCst)),
        (0, 1)
    );
    let output = serde_json::to_value(result_of(&out, "call_1")).unwrap();
    assert!(output.to_string().contains("has been reverted"), "{output}");
    let journal = store.journal("t").await.unwrap();
    assert_eq!(journal[0].status, EffectStatus::Failed);
    assert_eq!(journal[0].output.as_ref().unwrap()["code"], EFFECT_REVERTED);
}

#[tokio::test]
async fn an_idempotent_call_is_run_again_as_a_second_attempt() {
    let (_dir, store) = sqlite().await;
    crashed(&*store, "t", "pay", false).await;
    let count = Arc::new(AtomicU32::new(0));
    let agent = Agent::builder(ScriptedModel::new([Turn::text("Paid.")]))
        .tool(pay(
            count.clone(),
            side_effect()
                .idempotent(true)
                .accepts_idempotency_key(true)
                .revert(Refund(Arc::new(AtomicU32::new(0))))
                .unwrap(),
        ))
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(
        result_of(&out, "call_1"),
        ModelOutput::json(json!({"paid": true}))
    );
    let journal = store.journal("t").await.unwrap();
    let attempts: Vec<(u32, EffectStatus)> =
        journal.iter().map(|e| (e.attempt, e.status)).collect();
    assert_eq!(
        attempts,
        [(1, EffectStatus::Intended), (2, EffectStatus::Succeeded)]
    );
    // The attempt this run recorded carries Smithers' tool metadata.
    assert!(journal[1].accepts_idempotency_key && journal[1].has_revert);
    assert_eq!(journal[1].idempotency_key.as_deref(), Some("run-1:call_1"));
}

#[tokio::test]
async fn a_settled_call_whose_result_was_not_saved_is_not_run_again() {
    let (_dir, store) = sqlite().await;
    crashed(&*store, "t", "pay", true).await;
    // The call finished and was journaled; the process died before the tool message.
    let output = serde_json::to_value(ToolOutput::json(json!({"paid": "earlier"}))).unwrap();
    let entry = store.journal("t").await.unwrap().remove(0);
    let settled = Settlement {
        entry: &entry,
        status: EffectStatus::Succeeded,
        output: &output,
    };
    store.commit(Batch::new().settle(settled)).await.unwrap();
    let count = Arc::new(AtomicU32::new(0));
    let agent = Agent::builder(ScriptedModel::new([Turn::text("Paid.")]))
        .tool(pay(count.clone(), side_effect()))
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert_eq!(
        result_of(&out, "call_1"),
        ModelOutput::json(json!({"paid": "earlier"}))
    );
    // The result came from the journal: the call did not run here, so it has no time; the
    // stored thread says so too.
    let stored = store.messages("t").await.unwrap();
    assert_eq!(stored, out.messages);
    let tool = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    let times = tool.meta.as_ref().expect("the results' record");
    assert!(times.calls.is_empty(), "{times:?}");
    assert!(times.duration_ms.is_some());
}

#[tokio::test]
async fn a_sub_agent_interrupted_mid_run_is_not_run_again_when_its_tools_have_effects() {
    let (_dir, store) = sqlite().await;
    let input = json!({"prompt": "Pay Bob."});
    crashed_with(&*store, "t", "helper", input, true).await;
    let count = Arc::new(AtomicU32::new(0));
    let child = Agent::builder(ScriptedModel::new([
        Turn::call("pay", json!({"to": "bob"})),
        Turn::text("Paid."),
    ]))
    .tool(pay(count.clone(), side_effect()))
    .build();
    let helper = toolsmith::agent::SubagentTool::new("helper", "Pays people.", child);
    assert!(helper.meta().side_effect && !helper.meta().is_idempotent());
    let agent = Agent::builder(ScriptedModel::new([Turn::text("I will check first.")]))
        .tool(helper)
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(
        count.load(Ordering::SeqCst),
        0,
        "the child's payment is not repeated"
    );
    let output = serde_json::to_value(result_of(&out, "call_1")).unwrap();
    assert!(
        output
            .to_string()
            .contains("may or may not have taken effect")
    );
}

#[tokio::test]
async fn a_stored_run_records_every_call_and_its_thread() {
    let (_dir, store) = sqlite().await;
    let count = Arc::new(AtomicU32::new(0));
    let agent = Agent::builder(ScriptedModel::new([
        Turn::call("pay", json!({"to": "bob"})),
        Turn::text("Paid."),
    ]))
    .tool(pay(count.clone(), side_effect()))
    .build();
    let prompt = vec![Message::user("Pay Bob.")];
    let (run, messages) = StoredRun::start(store.clone(), "t", prompt).await.unwrap();
    let run_id = run.run_id().to_string();
    let out = agent.run(run.input(messages)).await.unwrap();
    assert_eq!(out.text, "Paid.");
    // The thread is stored as the run left it, each step's record included.
    let stored = store.messages("t").await.unwrap();
    assert_eq!(stored, out.messages);
    let step = stored[1].meta.as_ref().expect("the step's record");
    assert_eq!(step.provider.as_deref(), Some("scripted"));
    assert!(step.duration_ms.is_some());
    let times = stored[2].meta.as_ref().expect("the results' record");
    let call = stored[1].tool_calls().next().unwrap();
    assert!(times.calls.contains_key(&call.tool_call_id), "{times:?}");
    let journal = store.journal("t").await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].status, EffectStatus::Succeeded);
    // The tool does not declare it reads its key: recorded null, as Smithers does; the ledger
    // knows the call by run and call id.
    assert_eq!(journal[0].idempotency_key, None);
    assert_eq!(
        journal[0].ledger_key(),
        format!("{run_id}:{}", journal[0].tool_call_id)
    );
    // A finished thread takes a new run, not a resumption.
    let resumed = StoredRun::resume(store.clone(), "t", std::time::Duration::ZERO).await;
    assert!(matches!(resumed, Err(DurableError::NothingToResume { .. })));
    // A running thread held by a live process cannot be taken over within its lease.
    let prompt = vec![Message::user("Again.")];
    let (_held, _) = StoredRun::start(store.clone(), "t", prompt).await.unwrap();
    let taken = StoredRun::resume(store.clone(), "t", std::time::Duration::from_secs(60)).await;
    assert!(matches!(taken, Err(DurableError::Held { .. })), "{taken:?}");
    let again = StoredRun::start(store.clone(), "t", vec![]).await;
    assert!(matches!(again, Err(DurableError::Unfinished { .. })));
}

#[tokio::test]
async fn a_call_without_side_effects_is_recorded_once_with_its_outcome_and_run_again_after_a_crash()
{
    let (_dir, store) = sqlite().await;
    let count = Arc::new(AtomicU32::new(0));
    let read = || pay(count.clone(), ToolMeta::new());
    let agent = Agent::builder(ScriptedModel::new([
        Turn::call("pay", json!({"to": "bob"})),
        Turn::text("Read."),
    ]))
    .tool(read())
    .build();
    let prompt = vec![Message::user("Read.")];
    let (run, messages) = StoredRun::start(store.clone(), "t", prompt).await.unwrap();
    let out = agent.run(run.input(messages)).await.unwrap();
    assert_eq!(out.text, "Read.");
    assert_eq!(store.messages("t").await.unwrap(), out.messages);
    let journal = store.journal("t").await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(
        (
            journal[0].attempt,
            journal[0].status,
            journal[0].side_effect
        ),
        (1, EffectStatus::Succeeded, false)
    );
    assert_eq!(
        journal[0].output,
        Some(serde_json::to_value(ToolOutput::json(json!({"paid": true}))).unwrap())
    );
    // Interrupted during the call, its step saved (with a side-effecting call's intent, say):
    // no entry of it. Resumed, it runs again, once.
    let (_dir, store) = sqlite().await;
    interrupted_step(&*store, "t", "pay", json!({"to": "bob"})).await;
    let agent = Agent::builder(ScriptedModel::new([Turn::text("Read.")]))
        .tool(read())
        .build();
    let out = resume(store.clone(), "t", &agent).await;
    assert_eq!(count.load(Ordering::SeqCst), 2);
    assert_eq!(
        result_of(&out, "call_1"),
        ModelOutput::json(json!({"paid": true}))
    );
    let journal = store.journal("t").await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].status, EffectStatus::Succeeded);
}

#[tokio::test]
async fn a_tools_error_is_journaled_with_its_effect_unknown_as_smithers_records_it() {
    let (_dir, store) = sqlite().await;
    let failing = from_fn("pay", "Pay someone.", |_: Value, _cx| async move {
        Err::<Value, _>(ToolError::new("BANK_DOWN", "The bank did not answer."))
    })
    .with_meta(side_effect());
    let agent = Agent::builder(ScriptedModel::new([
        Turn::call("pay", json!({"to": "bob"})),
        Turn::text("It failed."),
    ]))
    .tool(failing)
    .build();
    let (run, messages) = StoredRun::start(store.clone(), "t", vec![Message::user("Pay.")])
        .await
        .unwrap();
    agent.run(run.input(messages)).await.unwrap();
    let journal = store.journal("t").await.unwrap();
    // Phase `failed`, effect status `unknown`: an error does not say whether the payment was
    // made before it.
    assert_eq!(journal[0].status, EffectStatus::Unknown);
    assert_eq!(journal[0].status.phase(), "failed");
    assert_eq!(journal[0].output.as_ref().unwrap()["code"], "BANK_DOWN");
    // Settled: a resumption of the thread does not run it again.
    let resumed = StoredRun::resume(store.clone(), "t", std::time::Duration::ZERO).await;
    assert!(matches!(resumed, Err(DurableError::NothingToResume { .. })));
}

/// A model that gives a second, different call the id of an earlier one: the journal cannot
/// tell the two apart, so the run stops before the second runs, instead of answering it with
/// the first one's recorded outcome.
#[tokio::test]
async fn a_call_id_the_model_reuses_for_another_call_stops_the_run_before_it_runs() {
    let (_dir, store) = sqlite().await;
    let count = Arc::new(AtomicU32::new(0));
    let agent = Agent::builder(ScriptedModel::new([
        Turn::tool_calls([ScriptedCall::new("pay", json!({"to": "bob"})).with_id("dup")]),
        Turn::tool_calls([ScriptedCall::new("pay", json!({"to": "eve"})).with_id("dup")]),
        Turn::text("Paid both."),
    ]))
    .tool(pay(count.clone(), side_effect()))
    .build();
    let (run, messages) = StoredRun::start(store.clone(), "t", vec![Message::user("Pay.")])
        .await
        .unwrap();
    let error = agent.run(run.input(messages)).await.unwrap_err();
    assert_eq!(count.load(Ordering::SeqCst), 1, "the second call never ran");
    let RunErrorKind::Tool(tool_error) = &error.kind else {
        panic!("{error}")
    };
    assert_eq!(tool_error.code(), "STORE_FAILED");
    let detail = tool_error.operator_detail().unwrap();
    assert!(
        detail.contains("tool call id dup of run")
            && detail.contains("was used before for another call (pay)"),
        "{detail}"
    );
    assert_eq!(store.journal("t").await.unwrap().len(), 1);
}

#[tokio::test]
async fn variables_a_run_sets_are_kept_with_the_thread_and_secrets_only_as_ciphertext() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let setter = from_fn("login", "Log in.", |_: Value, cx: ToolContext| async move {
        cx.set_variable(
            "SESSION_TOKEN",
            "tok-4f9a1c77e2",
            Some(VariableKind::Secret),
        );
        cx.set_variable("REGION", "eu-west", Some(VariableKind::Text));
        Ok::<_, ToolError>("logged in")
    });
    let agent = Agent::builder(ScriptedModel::new([
        Turn::call("login", json!({})),
        Turn::text("In."),
    ]))
    .tool(setter)
    .build();
    let prompt = vec![Message::user("Log in.")];
    let (run, messages) = StoredRun::start(store.clone(), "t", prompt).await.unwrap();
    let out = agent.run(run.input(messages)).await.unwrap();
    let key = toolsmith::store::SecretKey::generate();
    toolsmith::durable::keep_variables(&*store, "t", &key, &out.variables_set)
        .await
        .unwrap();
    let kept = toolsmith::durable::thread_variables(&*store, "t", &key)
        .await
        .unwrap();
    assert_eq!(
        kept.get("SESSION_TOKEN").map(String::as_str),
        Some("tok-4f9a1c77e2")
    );
    assert_eq!(kept.get("REGION").map(String::as_str), Some("eu-west"));
    drop(store);
    let bytes = std::fs::read(&path).unwrap();
    let wal = std::fs::read(dir.path().join("runs.db-wal")).unwrap_or_default();
    for file in [&bytes, &wal] {
        let text = String::from_utf8_lossy(file);
        assert!(
            !text.contains("tok-4f9a1c77e2"),
            "the secret is stored only sealed"
        );
    }
    assert!(
        String::from_utf8_lossy(&bytes).contains("eu-west")
            || String::from_utf8_lossy(&wal).contains("eu-west"),
        "a plain variable is stored as text"
    );
}

/// Set in the process the test below starts: the SQLite file in which it claims a thread.
const HOLDER_DB: &str = "TOOLSMITH_TEST_HOLDER_DB";
/// The test below, as the child runs it.
const HOLDER_TEST: &str = "a_run_killed_with_sigkill_on_this_host_is_resumed_at_once";

/// A child process, killed and reaped when dropped (should the test fail before it does).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_run_killed_with_sigkill_on_this_host_is_resumed_at_once() {
    if let Ok(db) = std::env::var(HOLDER_DB) {
        // The child: starts a run on thread `held` (its claim records this process as the
        // holder) and stays, as a run in a tool call does, until it is killed.
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db).await.unwrap());
        let prompt = vec![Message::user("Pay Bob.")];
        let (_run, _) = StoredRun::start(store, "held", prompt).await.unwrap();
        // Killed long before: a bound on its life should the parent not kill it.
        tokio::time::sleep(std::time::Duration::from_secs(120)).await;
        return;
    }
    let (dir, store) = sqlite().await;
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        // A filter, not `--exact`: the name the harness gives it carries its module's path.
        .args([HOLDER_TEST, "--test-threads=1"])
        .env(HOLDER_DB, dir.path().join("runs.db"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Child(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let holder = loop {
        let thread = store.thread("held").await.unwrap();
        if let Some(holder) = thread.and_then(|t| t.holder) {
            break holder;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the child claims the thread"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(holder.pid, child.0.id(), "the claim records its process");
    assert_eq!(holder.host, Holder::current().host);

    // Alive: its thread is its own for the lease, as before.
    let lease = std::time::Duration::from_secs(600);
    let held = StoredRun::resume(store.clone(), "held", lease).await;
    assert!(
        matches!(held, Err(DurableError::Held { .. })),
        "a live holder keeps its thread: {held:?}"
    );

    // SIGKILL (what `Child::kill` sends): no exit handler runs, nothing is written.
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let thread = store.thread("held").await.unwrap().unwrap();
    assert_eq!(thread.status, ThreadStatus::Running);
    let (run, messages) = StoredRun::resume(store.clone(), "held", lease)
        .await
        .expect("a killed holder's thread is taken over at once, the lease notwithstanding");
    assert_eq!(Some(run.run_id()), thread.run_id.as_deref(), "the same run");
    assert_eq!(messages, [Message::user("Pay Bob.")]);
    let taken = store.thread("held").await.unwrap().unwrap();
    assert_eq!(
        taken.holder,
        Some(Holder::current()),
        "held by this process now"
    );

    let agent = Agent::builder(ScriptedModel::new([Turn::text("Paid.")])).build();
    let out = agent.run(run.input(messages)).await.unwrap();
    assert_eq!(out.text, "Paid.");
    let done = store.thread("held").await.unwrap().unwrap();
    assert_eq!(
        (done.status, done.holder),
        (ThreadStatus::Idle, None),
        "a finished run holds the thread no more"
    );
}
