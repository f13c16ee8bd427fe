//! Two replicas of the service on one real PostgreSQL database: a run started on one is
//! continued by a completion that reaches the other, completions racing on both continue it
//! exactly once, and a run handed back by one shutting down is taken over by the other at
//! once (woken by a notification).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;
use toolsmith_store::{PostgresStore, ServiceStore};

use crate::common::{self, last, mock_model, run_body, text};

#[path = "../../../store/tests/it/common/pg_server.rs"]
mod pg_server;

const INJECTED: &str = "Async tool result injected into parent conversation.";

#[tokio::test]
async fn completions_on_two_replicas_continue_a_run_once() {
    let Some(server) = pg_server::PgServer::start() else {
        return;
    };
    let url = server.database().await;
    // The model hands two calls out, then answers with how many results were injected.
    let continuations = Arc::new(Mutex::new(Vec::new()));
    let seen = continuations.clone();
    let base = mock_model(move |body| match last(body) {
        (role, said) if role == "user" && said.starts_with(INJECTED) => {
            let injected = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["content"].to_string().contains(INJECTED))
                .count();
            seen.lock().unwrap().push(injected);
            text(&format!("Both in: {injected} results."))
        }
        (role, _) if role == "tool" => text("Handed out."),
        _ => {
            let calls = [("call_1", "6 * 7"), ("call_2", "2 + 2")];
            let tool_calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (id, expression))| {
                    json!({"index": i, "id": id, "type": "function", "function": {
                        "name": "calculator",
                        "arguments": json!({"expression": expression}).to_string()}})
                })
                .collect();
            vec![
                json!({"id": "c", "model": "mock", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": tool_calls}}]}),
                json!({"id": "c", "model": "mock", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ]
        }
    });
    let store_a: Arc<dyn ServiceStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
    let store_b: Arc<dyn ServiceStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
    let a = common::start_on(store_a, ServiceOptions::default()).await;
    // The replicas share the secret key (approval ids, sealed configs, completion tokens).
    let b = common::start_like(&a, store_b).await;
    let secret = a.account("acme").await;
    let tools = json!({"calculator": {"async": true, "execution": "external-dispatch"}});
    a.agent("acme", "calc", common::config(&base, tools)).await;

    let (status, body) = a
        .post("/async", &secret, &run_body("calc", "e1", "c", "go"))
        .await;
    assert_eq!(status, 202, "{body}");
    let key = "acme/calc/e1";
    let rows = loop {
        let sealed = a.store.group(key).await.unwrap().is_some_and(|g| g.sealed);
        if sealed {
            break a.store.async_results_of(key).await.unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(rows.len(), 2);
    let completion = json!({"status": "completed", "response": {"ok": true}});
    let path = |i: usize| format!("/async-tools/{}/complete", rows[i].result_id);
    let (path_a, path_b) = (path(0), path(1));
    let (first, second) = tokio::join!(
        a.post(&path_a, &secret, &completion),
        b.post(&path_b, &secret, &completion)
    );
    assert_eq!((first.0, second.0), (202, 202), "{first:?} {second:?}");
    let done = b.settled(&secret, "calc", "e1").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], "Both in: 2 results.");
    assert_eq!(
        *continuations.lock().unwrap(),
        [2],
        "one continuation, with both results"
    );
    // Of the two settlers, one sees the other's settlement and starts the continuation: a
    // settle commits before its own readiness read, so both cannot miss the other.
    let answers: Vec<Value> = [first.1, second.1]
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    let invoked = answers.iter().filter(|a| a["invoked"] == true).count();
    assert_eq!(invoked, 1, "the last settler starts it: {answers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_handed_back_on_one_replica_is_taken_over_by_the_other_at_once() {
    let Some(server) = pg_server::PgServer::start() else {
        return;
    };
    let url = server.database().await;
    let store_a: Arc<dyn ServiceStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
    let store_b: Arc<dyn ServiceStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
    crate::shutdown::handed_over(store_a, store_b).await;
}
