//! Cached results (a config's `tools.<name>.cache`) live in the service's store: a
//! conversation's later request is served them by another replica; another conversation is not.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;
use toolsmith_store::{ServiceStore, SqliteStore};

use crate::common::{self, call, config, last, mock_model, parse_sse, run_body, text};

/// Whether the run's stream marked a result as served from the cache.
fn served_from_cache(events: &[Value]) -> bool {
    events
        .iter()
        .any(|e| e["type"] == "data" && e["name"] == "cached")
}

/// One request of `conversation` to `replica`: whether its result came from the cache.
async fn run(replica: &common::Running, secret: &str, event: &str, conversation: &str) -> bool {
    let body = run_body("calc", event, conversation, "What is 6 * 7?");
    let (status, body) = replica.post("/", secret, &body).await;
    assert_eq!(status, 200, "{body}");
    let (events, _) = parse_sse(&body);
    assert!(events.iter().any(|e| e["type"] == "tool-result"), "{body}");
    served_from_cache(&events)
}

#[tokio::test]
async fn a_conversations_cached_result_serves_its_next_request_on_another_replica() {
    let base = mock_model(|body| match last(body) {
        (role, result) if role == "tool" => text(&format!("The answer is {result}.")),
        _ => call("call_1", "calculator", json!({"expression": "6 * 7"})),
    });
    let dir = tempfile::tempdir().unwrap();
    let open = || async {
        let store = SqliteStore::open(dir.path().join("service.db")).await;
        Arc::new(store.unwrap()) as Arc<dyn ServiceStore>
    };
    let a = common::start_on(open().await, ServiceOptions::default()).await;
    let b = common::start_like(&a, open().await).await;
    let secret = a.account("acme").await;
    let tools = json!({"calculator": {"cache": {"ttl": 600_000}}});
    a.agent("acme", "calc", config(&base, tools)).await;

    assert!(
        !run(&a, &secret, "e1", "conv-1").await,
        "the first call runs"
    );
    assert!(
        run(&b, &secret, "e2", "conv-1").await,
        "the same conversation, on the other replica"
    );
    assert!(
        !run(&b, &secret, "e3", "conv-2").await,
        "another conversation runs its own"
    );
}
