//! Many streamed runs at once, on SQLite (the service's default store): every one answered in
//! full, every conversation stored whole. The long form, 1 000 clients for 10 minutes with
//! memory and latency, is the service bench's `soak` (`docs/reliability.md`, "Load and soak").

use futures::future::join_all;
use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;

use crate::common::{self, config, parse_sse};
use crate::runs::calculating_model;

/// How many runs stream at once: the most the console lists in one page (each is checked there).
const RUNS: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_streamed_runs_at_once_all_finish_and_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = toolsmith_store::SqliteStore::open(dir.path().join("service.db"))
        .await
        .unwrap();
    let service = common::start_on(std::sync::Arc::new(store), ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = calculating_model();
    service
        .agent("acme", "calc", config(&base, json!({"calculator": {}})))
        .await;

    let runs = (0..RUNS).map(|i| {
        let body = json!({"id": format!("chat-{i}"), "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is 6 * 7?"}]}
        ]});
        let (service, secret) = (&service, &secret);
        async move { service.post("/agents/calc/chat", secret, &body).await }
    });
    for (i, (status, stream)) in join_all(runs).await.into_iter().enumerate() {
        assert_eq!(status, 200, "run {i}: {stream}");
        let (parts, _) = parse_sse(stream.trim_end_matches("data: [DONE]\n\n"));
        let said: String = parts
            .iter()
            .filter(|p| p["type"] == "text-delta")
            .filter_map(|p| p["delta"].as_str())
            .collect();
        assert_eq!(said, "The answer is 6 * 7 = 42.", "run {i}: {stream}");
        let outputs = parts
            .iter()
            .filter(|p| p["type"] == "tool-output-available")
            .count();
        assert_eq!(outputs, 1, "run {i}: {stream}");
    }

    let (status, list) = service
        .get(&format!("/console/api/runs?limit={RUNS}"), &secret)
        .await;
    assert_eq!(status, 200, "{list}");
    let stored = list["runs"].as_array().unwrap();
    assert_eq!(stored.len(), RUNS);
    for run in stored {
        // The user's message, the call, its result, the answer.
        assert_eq!(
            (&run["status"], &run["messageCount"], &run["pending"]),
            (&Value::from("idle"), &Value::from(4), &Value::from(0)),
            "{run}"
        );
    }
}
