//! Runs handed back (a service shutting down): the run stops at a safe point — the call
//! running finishes and is journaled, no model call is made after it — and its thread stays
//! running with no holder, so that another process resumes it at once, where it stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
use toolsmith::agent::RunErrorKind;
use toolsmith::durable::StoredRun;
use toolsmith::prelude::*;
use toolsmith::providers::{ScriptedModel, Turn};
use toolsmith::store::{EffectStatus, SqliteStore, Store, ThreadStatus};
use toolsmith::{CancellationToken, RunPart};

/// A side-effecting payment that says when it starts, takes 150 ms, and counts its runs.
fn slow_pay(count: Arc<AtomicU32>, started: Arc<Notify>) -> impl Tool {
    from_fn("pay", "Pay someone.", move |_: Value, _cx| {
        let (count, started) = (count.clone(), started.clone());
        async move {
            started.notify_one();
            tokio::time::sleep(Duration::from_millis(150)).await;
            count.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(json!({"paid": true}))
        }
    })
    .with_meta(ToolMeta::new().side_effect(true))
}

#[tokio::test]
async fn a_run_handed_back_finishes_its_call_and_is_resumed_at_once_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("runs.db")).await.unwrap());
    let (count, started) = (Arc::new(AtomicU32::new(0)), Arc::new(Notify::new()));
    let model = Arc::new(
        ScriptedModel::new([
            Turn::call("pay", json!({"to": "bob"})),
            Turn::text("never asked"),
        ])
        .recording(),
    );
    let agent = Agent::builder_shared(model.clone())
        .tool(slow_pay(count.clone(), started.clone()))
        .build();
    let (run, messages) = StoredRun::start(store.clone(), "t", vec![Message::user("Pay Bob.")])
        .await
        .unwrap();
    let token = CancellationToken::new();
    let handback = token.clone();
    tokio::spawn(async move {
        started.notified().await;
        handback.cancel();
    });

    let mut stream = agent.stream(run.input(messages).with_handback(token));
    let mut parts = Vec::new();
    while let Some(part) = stream.next().await {
        parts.push(part);
    }
    let err = stream.output().await.unwrap_err();

    assert_eq!(err.kind, RunErrorKind::HandedBack);
    assert_eq!(err.code(), "HANDED_BACK");
    assert_eq!(count.load(Ordering::SeqCst), 1, "the call running finished");
    assert_eq!(model.call_count(), 1, "no model call after the handback");
    match parts.last() {
        Some(RunPart::Abort {
            reason: Some(reason),
        }) => assert!(reason.contains("handed back")),
        other => panic!("the stream ends with an abort part saying why: {other:?}"),
    }
    let thread = store.thread("t").await.unwrap().unwrap();
    assert_eq!(thread.status, ThreadStatus::Running, "the run is not over");
    assert_eq!(thread.holder, None, "and no process holds it");
    assert_eq!(
        store.messages("t").await.unwrap(),
        err.output.messages,
        "all of it saved"
    );
    let journal = store.journal("t").await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].status, EffectStatus::Succeeded);

    // Another process, within any lease: resumed at once, the call's result reused.
    let (run, messages) = StoredRun::resume(store.clone(), "t", Duration::from_secs(3600))
        .await
        .expect("a thread handed back is free at once");
    let elsewhere = Agent::builder(ScriptedModel::new([Turn::text("Paid Bob.")]))
        .tool(slow_pay(count.clone(), Arc::new(Notify::new())))
        .build();
    let out = elsewhere.run(run.input(messages)).await.unwrap();
    assert_eq!(out.text, "Paid Bob.");
    assert_eq!(count.load(Ordering::SeqCst), 1, "no side effect ran twice");
    assert_eq!(
        store.thread("t").await.unwrap().unwrap().status,
        ThreadStatus::Idle
    );
}

#[tokio::test]
async fn a_run_handed_back_while_the_model_answers_drops_the_answer_and_saves_nothing_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> =
        Arc::new(SqliteStore::open(dir.path().join("runs.db")).await.unwrap());
    let agent = Agent::builder(ScriptedModel::new(
        [Turn::text("slow").with_delay_ms(5_000)],
    ))
    .build();
    let (run, messages) = StoredRun::start(store.clone(), "t", vec![Message::user("Hi")])
        .await
        .unwrap();
    let token = CancellationToken::new();
    let handback = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        handback.cancel();
    });
    let begun = std::time::Instant::now();
    let err = agent
        .run(run.input(messages).with_handback(token))
        .await
        .unwrap_err();
    assert_eq!(err.kind, RunErrorKind::HandedBack);
    assert!(
        begun.elapsed() < Duration::from_secs(4),
        "the model call was dropped"
    );
    let thread = store.thread("t").await.unwrap().unwrap();
    assert_eq!(
        (thread.status, thread.holder),
        (ThreadStatus::Running, None)
    );
    assert_eq!(store.messages("t").await.unwrap(), [Message::user("Hi")]);
}
