//! Async tools: same-invocation results injected into the run, external-dispatch calls settled
//! through the completion endpoint and continued exactly once.

use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;

use crate::common::{self, call, config, last, mock_model, parse_sse, run_body, text};

const INJECTED: &str = "Async tool result injected into parent conversation.";

/// A model that calls `calculator`, says it waits while the call is out, and answers with
/// what an injected result says.
fn async_model() -> String {
    mock_model(|body| match last(body) {
        (role, injected) if role == "user" && injected.starts_with(INJECTED) => {
            let result = injected.rsplit("Result:\n").next().unwrap_or_default();
            text(&format!("Got: {result}"))
        }
        (role, _) if role == "tool" => text("Working on it."),
        _ => call("call_1", "calculator", json!({"expression": "6 * 7"})),
    })
}

#[tokio::test]
async fn a_same_invocation_result_is_injected_and_the_run_goes_on() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = async_model();
    let tools = json!({"calculator": {"async": true}});
    service.agent("acme", "calc", config(&base, tools)).await;
    let (status, body) = service
        .post("/", &secret, &run_body("calc", "e1", "c", "6 * 7?"))
        .await;
    assert_eq!(status, 200, "{body}");
    let (events, _) = parse_sse(&body);
    let result = events.iter().find(|e| e["type"] == "tool-result").unwrap();
    assert_eq!(result["output"]["status"], "running", "{result}");
    let id = result["output"]["resultId"].as_str().unwrap();
    assert!(id.starts_with("async_tool_"), "{id}");
    assert_eq!(
        result["output"]["statusReference"],
        json!({"table": "AsyncToolResult", "resultId": id})
    );
    let done = service.settled(&secret, "calc", "e1").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], r#"Got: {"expression":"6 * 7","result":42}"#);
    let row = service.store.async_result(id).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "completed");
    assert_eq!(
        row.response,
        Some(json!({"expression": "6 * 7", "result": 42})),
        "{row:?}"
    );
}

#[tokio::test]
async fn a_streamed_request_refuses_external_dispatch_tools() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = async_model();
    let tools = json!({"calculator": {"async": true, "execution": "external-dispatch"}});
    service.agent("acme", "calc", config(&base, tools)).await;
    let (status, body) = service
        .post("/", &secret, &run_body("calc", "e1", "c", "hi"))
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        r#"{"error":"Async tool calculator uses external-dispatch, which is not supported by this request path"}"#
    );
}

/// Starts an external-dispatch run on `/async` and returns the call's result id once the run
/// has handed it out.
pub(crate) async fn dispatched(service: &common::Running, secret: &str, event: &str) -> String {
    let (status, body) = service
        .post("/async", secret, &run_body("calc", event, "c", "6 * 7?"))
        .await;
    assert_eq!(status, 202, "{body}");
    let key = format!("acme/calc/{event}");
    for _ in 0..600 {
        let sealed = service
            .store
            .group(&key)
            .await
            .unwrap()
            .is_some_and(|g| g.sealed);
        if sealed {
            let rows = service.store.async_results_of(&key).await.unwrap();
            return rows[0].result_id.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the group of {event} was never sealed");
}

pub(crate) async fn external_service() -> (common::Running, String) {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = async_model();
    let tools = json!({"calculator": {"async": true, "execution": "external-dispatch"}});
    service.agent("acme", "calc", config(&base, tools)).await;
    (service, secret)
}

#[tokio::test]
async fn an_external_completion_continues_the_run_once() {
    let (service, secret) = external_service().await;
    let id = dispatched(&service, &secret, "e1").await;
    let waiting = service.get("/status/e1?agentId=calc", &secret).await.1;
    assert_eq!(waiting["status"], "processing", "{waiting}");

    let path = format!("/async-tools/{id}/complete");
    let completion = json!({"status": "completed", "response": {"answer": "done"}});
    let (status, body) = service.post(&path, &secret, &completion).await;
    assert_eq!(status, 202, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        json!({"status": "accepted", "resultId": id, "eventId": format!("async-tools-{id}"), "invoked": true})
    );
    let done = service.settled(&secret, "calc", "e1").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], r#"Got: {"answer":"done"}"#);

    // Settled: a second completion is refused with the row's status.
    let (status, body) = service.post(&path, &secret, &completion).await;
    assert_eq!(status, 409);
    assert_eq!(
        body,
        r#"{"error":"Async tool result is already settled","status":"completed"}"#
    );
}

#[tokio::test]
async fn completions_of_unknown_and_foreign_results_answer_alike() {
    let (service, secret) = external_service().await;
    let rival = service.account("rival").await;
    let id = dispatched(&service, &secret, "e1").await;
    let completion = json!({"status": "failed", "error": "nope"});
    let (status, foreign) = service
        .post(&format!("/async-tools/{id}/complete"), &rival, &completion)
        .await;
    let (status2, unknown) = service
        .post(
            "/async-tools/async_tool_none/complete",
            &secret,
            &completion,
        )
        .await;
    assert_eq!((status, status2), (404, 404));
    assert_eq!(foreign, unknown);
    assert_eq!(foreign, r#"{"error":"Async tool result not found"}"#);
    let (status, body) = service
        .post(&format!("/async-tools/{id}/complete"), "", &completion)
        .await;
    assert_eq!(
        (status, body.as_str()),
        (401, r#"{"error":"Unauthorized"}"#)
    );
    // Still processing: the failed attempts settled nothing.
    let row = service.store.async_result(&id).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "processing");
}

#[tokio::test]
async fn racing_completions_settle_a_call_once() {
    let (service, secret) = external_service().await;
    let id = dispatched(&service, &secret, "e1").await;
    let path = format!("/async-tools/{id}/complete");
    let attempts = (0..8).map(|i| {
        let completion = json!({"status": "completed", "response": i});
        let (service, secret, path) = (&service, &secret, &path);
        async move { service.post(path, secret, &completion).await }
    });
    let answers = futures::future::join_all(attempts).await;
    let accepted: Vec<_> = answers.iter().filter(|(s, _)| *s == 202).collect();
    assert_eq!(accepted.len(), 1, "{answers:?}");
    assert!(
        answers.iter().all(|(s, _)| *s == 202 || *s == 409),
        "{answers:?}"
    );
    let done = service.settled(&secret, "calc", "e1").await;
    assert_eq!(done["status"], "completed", "{done}");
    // One continuation: its event exists once, and the model was asked once more.
    let continuation = service
        .store
        .event("acme", "calc", "e1:async-tools")
        .await
        .unwrap();
    assert!(continuation.is_some());
}

#[tokio::test]
async fn a_sub_agents_same_invocation_result_reaches_the_sub_agent_which_goes_on() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    // The parent hands the task to `helper`; the helper calls `calculator` asynchronously,
    // waits, and answers with the injected result; the parent answers with the helper's.
    let base = mock_model(|body| {
        let (role, said) = last(body);
        if common::declared(body).iter().any(|t| t == "helper") {
            return match role.as_str() {
                "tool" => text(&format!("Parent got: {said}")),
                _ => call("call_p", "helper", json!({"prompt": "What is 6 * 7?"})),
            };
        }
        match role.as_str() {
            "user" if said.starts_with("Async tool result") => text(&format!(
                "Helper got: {}",
                said.rsplit("Result:\n").next().unwrap_or_default()
            )),
            "tool" => text("Waiting for the calculator."),
            _ => call("call_c", "calculator", json!({"expression": "6 * 7"})),
        }
    });
    let config = json!({
        "model": {"provider": "openai-compatible", "name": "mock", "baseUrl": base},
        "subagents": [{"name": "helper", "description": "Helps.",
                       "config": {"tools": {"calculator": {"async": true}}}}],
    });
    service.agent("acme", "boss", config).await;
    let (status, body) = service
        .post("/async", &secret, &run_body("boss", "e1", "c", "go"))
        .await;
    assert_eq!(status, 202, "{body}");
    let done = service.settled(&secret, "boss", "e1").await;
    assert_eq!(done["status"], "completed", "{done}");
    let text = done["text"].as_str().unwrap();
    assert!(text.starts_with("Parent got: "), "{text}");
    assert!(
        text.ends_with(r#"Helper got: {"expression":"6 * 7","result":42}"#),
        "{text}"
    );
    // The call's row belongs to the event of the run that called the helper.
    let rows = service
        .store
        .async_results_of("acme/boss/e1")
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].tool_name, "calculator");
}

#[tokio::test]
async fn a_streamed_request_refuses_a_sub_agents_external_dispatch_tool() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let config = json!({
        "model": {"provider": "openai-compatible", "name": "mock", "baseUrl": "http://127.0.0.1:9/v1"},
        "subagents": [{"name": "helper", "description": "Helps.",
                       "config": {"tools": {"calculator": {"async": true, "execution": "external-dispatch"}}}}],
    });
    service.agent("acme", "boss", config).await;
    let (status, body) = service
        .post("/", &secret, &run_body("boss", "e1", "c", "go"))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("Async tool calculator uses external-dispatch"),
        "{body}"
    );
}
