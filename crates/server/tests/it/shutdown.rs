//! A graceful shutdown: the runs hand themselves back — the call running finishes and is
//! journaled, no model call follows — and another replica on the same store takes them over at
//! once, where they stopped: nothing is lost, no side effect runs twice.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolsmith_config::WebhookPolicy;
use toolsmith_server::ServiceOptions;
use toolsmith_store::{ServiceStore, SqliteStore, ThreadStatus};

use crate::common::{self, call, config, endpoint, last, mock_model, parse_sse, run_body, text};

fn options() -> ServiceOptions {
    ServiceOptions {
        webhooks: WebhookPolicy::any(),
        // Far longer than the test: only a wake-up makes the other replica look at once.
        lease: Duration::from_secs(300),
        shutdown_grace: Duration::from_secs(20),
        ..ServiceOptions::default()
    }
}

/// A payment webhook that takes `delay` to answer, and a model that pays, then says so.
fn paying(delay: Duration) -> (String, String, Arc<std::sync::Mutex<Vec<common::Hit>>>) {
    let (url, hits) = endpoint(move |_| (200, r#"{"paid":true}"#.into(), delay));
    let model = mock_model(|body| match last(body) {
        (role, said) if role == "tool" => text(&format!("Done: {said}")),
        _ => call("call_1", "pay", json!({"to": "bob"})),
    });
    (url, model, hits)
}

/// A SQLite store in `dir`.
async fn sqlite(dir: &tempfile::TempDir) -> Arc<dyn ServiceStore> {
    Arc::new(
        SqliteStore::open(dir.path().join("service.db"))
            .await
            .unwrap(),
    )
}

/// Replica A on `store` with account `acme` and its agent `payer` (`model`, `tools`): the
/// replica and the account's secret.
async fn replica_a(
    store: Arc<dyn ServiceStore>,
    model: &str,
    tools: serde_json::Value,
) -> (common::Running, String) {
    let a = common::start_on(store, options()).await;
    let secret = a.account("acme").await;
    a.agent("acme", "payer", config(model, tools)).await;
    (a, secret)
}

/// Waits until the endpoint got its first request.
async fn under_way(hits: &std::sync::Mutex<Vec<common::Hit>>) {
    while hits.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn pay_tool(url: &str) -> serde_json::Value {
    json!({"pay": {
        "type": "webhook",
        "url": url,
        "description": "Pay someone.",
        "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
    }})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_shutting_down_hands_its_run_to_another_which_goes_on_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite(&dir).await;
    handed_over(store.clone(), store).await;
}

/// Replica A on `store_a` shuts down while a payment of its run is under way; replica B on
/// `store_b` (the same database), which swept before and would not sweep again for 100 s,
/// is woken and finishes the run.
pub(crate) async fn handed_over(store_a: Arc<dyn ServiceStore>, store_b: Arc<dyn ServiceStore>) {
    let store = store_a.clone();
    let (url, model, hits) = paying(Duration::from_millis(400));
    let (a, secret) = replica_a(store_a, &model, pay_tool(&url)).await;

    let (status, body) = a
        .post("/async", &secret, &run_body("payer", "e1", "c", "Pay Bob."))
        .await;
    assert_eq!(status, 202, "{body}");
    // The payment is under way when the shutdown begins.
    under_way(&hits).await;
    let b = common::start_like(&a, store_b).await;
    let took = a.shut_down().await;
    assert!(
        took < Duration::from_secs(10),
        "the shutdown waited for the call only: {took:?}"
    );
    let thread = store
        .threads(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    // Unless the other replica was quicker still, the thread is handed back or taken over.
    assert!(
        thread.status != ThreadStatus::Failed && thread.status != ThreadStatus::Paused,
        "{thread:?}"
    );

    let settled = b.settled(&secret, "payer", "e1").await;
    assert_eq!(settled["status"], "completed", "{settled}");
    assert_eq!(settled["text"], r#"Done: {"paid":true}"#);
    assert_eq!(hits.lock().unwrap().len(), 1, "the payment ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_ends_with_an_abort_saying_it_was_handed_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite(&dir).await;
    let (url, model, hits) = paying(Duration::from_millis(300));
    let (a, secret) = replica_a(store.clone(), &model, pay_tool(&url)).await;
    let request = a
        .client
        .post(format!("{}/", a.url))
        .bearer_auth(&secret)
        .json(&run_body("payer", "e1", "c", "Pay Bob."));
    let streamed = tokio::spawn(async move { request.send().await.unwrap().text().await.unwrap() });
    under_way(&hits).await;
    let key = a.key.clone();
    let took = a.shut_down().await;
    assert!(took < Duration::from_secs(10), "{took:?}");
    let (events, _) = parse_sse(&streamed.await.unwrap());
    let result = events.iter().find(|e| e["type"] == "tool-result").unwrap();
    assert_eq!(
        result["output"],
        json!({"paid": true}),
        "the call finished first"
    );
    let end = events.last().unwrap();
    assert_eq!(end["type"], "abort", "{events:?}");
    assert!(
        end["reason"].as_str().unwrap().contains("handed back"),
        "{end}"
    );

    // Started again on the same database, the service goes on with the run at once.
    let again = common::start_with_key(store.clone(), options(), key).await;
    let settled = again.settled(&secret, "payer", "e1").await;
    assert_eq!(settled["status"], "completed", "{settled}");
    assert_eq!(hits.lock().unwrap().len(), 1, "the payment ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_invocation_call_running_at_shutdown_reaches_the_run_on_the_other_replica() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite(&dir).await;
    let (url, hits) = endpoint(|_| (200, r#"{"paid":true}"#.into(), Duration::from_millis(400)));
    let model = mock_model(|body| match last(body) {
        (role, said) if role == "user" && said.starts_with("Async tool result") => text(&format!(
            "Injected: {}",
            said.rsplit("Result:\n").next().unwrap_or_default()
        )),
        (role, _) if role == "tool" => text("Under way."),
        _ => call("call_1", "pay", json!({"to": "bob"})),
    });
    let mut tools = pay_tool(&url);
    tools["pay"]["async"] = json!(true);
    let (a, secret) = replica_a(store.clone(), &model, tools).await;
    let (status, body) = a
        .post("/async", &secret, &run_body("payer", "e1", "c", "Pay Bob."))
        .await;
    assert_eq!(status, 202, "{body}");
    under_way(&hits).await;
    let b = common::start_like(&a, store.clone()).await;
    // The shutdown waits for the call, which settles its row; the run, handed back while it
    // waited, gets the result on the other replica.
    let took = a.shut_down().await;
    assert!(
        took >= Duration::from_millis(200),
        "the call was waited for: {took:?}"
    );
    let settled = b.settled(&secret, "payer", "e1").await;
    assert_eq!(settled["status"], "completed", "{settled}");
    assert_eq!(settled["text"], r#"Injected: {"paid":true}"#);
    assert_eq!(hits.lock().unwrap().len(), 1, "the payment ran once");
}
