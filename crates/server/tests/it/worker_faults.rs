//! Workers that misbehave: a webhook that never answers (its call fails at the tool's time
//! limit and the run goes on), an external worker that answers twice (the second answer is
//! refused and changes nothing) and one that answers after its call's result has expired (a
//! clear 404, nothing continued).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::async_tools::{dispatched, external_service};
use crate::common::{self, config, endpoint, parse_sse, run_body};
use crate::webhooks::{open, reversing_model, webhook};

#[tokio::test]
async fn a_webhook_that_never_answers_fails_at_its_time_limit_and_the_run_goes_on() {
    let service = common::start(open()).await;
    let secret = service.account("acme").await;
    let (url, hits) = endpoint(|_| (200, r#""never""#.into(), Duration::from_secs(120)));
    let tools = json!({"reverse": webhook(&url, json!({"timeoutMs": 300}))});
    service
        .agent("acme", "a", config(&reversing_model(), tools))
        .await;
    let began = Instant::now();
    let (status, body) = service
        .post("/", &secret, &run_body("a", "e1", "c", "go"))
        .await;
    assert_eq!(status, 200, "{body}");
    // Not bounded as a performance figure: the run must not wait for the worker.
    assert!(
        began.elapsed() < Duration::from_secs(30),
        "{:?}",
        began.elapsed()
    );
    let (events, _) = parse_sse(&body);
    let error = events
        .iter()
        .find(|e| e["type"] == "tool-error")
        .unwrap_or_else(|| panic!("{body}"));
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("300 ms"), "the limit is named: {error}");
    assert_eq!(events.last().unwrap()["type"], "finish", "{body}");
    assert_eq!(hits.lock().unwrap().len(), 1, "asked once, not retried");
    let done = service.settled(&secret, "a", "e1").await;
    assert_eq!(done["status"], "completed", "{done}");
}

#[tokio::test]
async fn a_worker_answering_twice_or_too_late_changes_nothing() {
    let (service, secret) = external_service().await;
    let id = dispatched(&service, &secret, "e1").await;
    let path = format!("/async-tools/{id}/complete");
    let first = json!({"status": "completed", "response": {"answer": "first"}});
    let (status, _) = service.post(&path, &secret, &first).await;
    assert_eq!(status, 202);
    let done = service.settled(&secret, "calc", "e1").await;
    assert_eq!(done["text"], r#"Got: {"answer":"first"}"#, "{done}");
    // The same worker answers again, differently: refused, the run's outcome unchanged.
    let again = json!({"status": "completed", "response": {"answer": "second"}});
    let (status, body) = service.post(&path, &secret, &again).await;
    assert_eq!(
        (status, body.as_str()),
        (
            409,
            r#"{"error":"Async tool result is already settled","status":"completed"}"#
        )
    );
    let (_, after) = service.get("/status/e1?agentId=calc", &secret).await;
    assert_eq!(after["text"], done["text"]);

    // A call whose worker answers only after its result expired (and was purged).
    let late = dispatched(&service, &secret, "e2").await;
    let purged = service.store.purge_expired(u64::MAX / 2).await.unwrap();
    assert!(purged >= 1, "{purged}");
    let (status, body) = service
        .post(&format!("/async-tools/{late}/complete"), &secret, &first)
        .await;
    assert_eq!(
        (status, body.as_str()),
        (404, r#"{"error":"Async tool result not found"}"#)
    );
    assert!(
        service
            .store
            .event("acme", "calc", "e2:async-tools")
            .await
            .unwrap()
            .is_none(),
        "nothing continued"
    );
}
