//! `POST /`, `POST /async`, `GET /status`, approvals, auth and account scoping, bad and slow
//! requests.

use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;

use crate::common::{self, call, config, last, mock_model, parse_sse, run_body, text, types};

/// A model that calls `calculator` on the first turn and answers with its result after.
pub(crate) fn calculating_model() -> String {
    mock_model(|body| match last(body) {
        (role, result) if role == "tool" => text(&format!("The answer is {result}.")),
        _ => call("call_1", "calculator", json!({"expression": "6 * 7"})),
    })
}

#[tokio::test]
async fn a_run_is_streamed_as_run_parts_and_its_status_kept() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = calculating_model();
    service
        .agent("acme", "calc", config(&base, json!({"calculator": {}})))
        .await;

    let (status, body) = service
        .post(
            "/",
            &secret,
            &run_body("calc", "e1", "conv-1", "What is 6 * 7?"),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (events, _) = parse_sse(&body);
    let kinds = types(&events);
    assert_eq!(kinds.first(), Some(&"start"), "{kinds:?}");
    assert!(
        kinds.contains(&"tool-call") && kinds.contains(&"tool-result"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"finish"), "{kinds:?}");
    let result = events.iter().find(|e| e["type"] == "tool-result").unwrap();
    assert_eq!(result["toolName"], "calculator");

    let done = service.settled(&secret, "calc", "e1").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], "The answer is 6 * 7 = 42.");
    assert_eq!(done["conversationKey"], "conv-1");
}

#[tokio::test]
async fn a_duplicate_event_id_gets_an_empty_stream() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = mock_model(|_| text("hello"));
    service.agent("acme", "a", config(&base, json!({}))).await;
    let body = run_body("a", "e1", "c", "hi");
    let (status, first) = service.post("/", &secret, &body).await;
    assert_eq!(status, 200);
    assert!(first.contains("\"text-delta\""), "{first}");
    let (status, second) = service.post("/", &secret, &body).await;
    assert_eq!(status, 200);
    assert_eq!(second, "", "a duplicate event runs nothing");
}

#[tokio::test]
async fn a_duplicate_event_id_on_a_new_conversation_starts_nothing() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = mock_model(|_| text("hello"));
    service.agent("acme", "a", config(&base, json!({}))).await;
    let (status, first) = service
        .post("/", &secret, &run_body("a", "e1", "c1", "hi"))
        .await;
    assert_eq!(status, 200);
    assert!(first.contains("\"text-delta\""), "{first}");
    // The event id again, for a conversation that has no thread yet: its event and its thread
    // are written together or not at all, so nothing is, and the conversation stays free.
    let (status, again) = service
        .post("/", &secret, &run_body("a", "e1", "c2", "hi"))
        .await;
    assert_eq!((status, again.as_str()), (200, ""));
    let (status, fresh) = service
        .post("/", &secret, &run_body("a", "e2", "c2", "hi"))
        .await;
    assert_eq!(status, 200);
    assert!(fresh.contains("\"text-delta\""), "{fresh}");
}

#[tokio::test]
async fn requests_without_a_valid_secret_are_unauthorized() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let body = run_body("a", "e1", "c", "hi");
    for token in ["", "nope", &format!("{secret}0"), "ts_acme_00"] {
        let (status, text) = service.post("/", token, &body).await;
        assert_eq!(status, 401, "{token}: {text}");
        assert_eq!(text, r#"{"error":"Unauthorized"}"#);
    }
    let (status, text) = service.post("/async", "", &body).await;
    assert_eq!(
        (status, text.as_str()),
        (401, r#"{"error":"Unauthorized"}"#)
    );
}

#[tokio::test]
async fn another_accounts_agent_and_events_answer_as_missing_ones() {
    let service = common::start(ServiceOptions::default()).await;
    let acme = service.account("acme").await;
    let rival = service.account("rival").await;
    let base = mock_model(|_| text("secret plans"));
    service.agent("acme", "a", config(&base, json!({}))).await;

    let (status, missing) = service
        .post("/", &rival, &run_body("none", "e1", "c", "hi"))
        .await;
    let (status2, foreign) = service
        .post("/", &rival, &run_body("a", "e1", "c", "hi"))
        .await;
    assert_eq!((status, status2), (404, 404));
    assert_eq!(missing, foreign);
    assert_eq!(foreign, r#"{"error":"Agent not found"}"#);

    let (status, _) = service
        .post("/", &acme, &run_body("a", "e1", "c", "hi"))
        .await;
    assert_eq!(status, 200);
    let (status, missing) = service.get("/status/e2?agentId=a", &rival).await;
    let (status2, foreign) = service.get("/status/e1?agentId=a", &rival).await;
    assert_eq!((status, status2), (404, 404));
    assert_eq!(missing, foreign);
}

#[tokio::test]
async fn an_async_run_answers_202_with_a_status_url() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = calculating_model();
    service
        .agent("acme", "calc", config(&base, json!({"calculator": {}})))
        .await;
    let (status, body) = service
        .post("/async", &secret, &run_body("calc", "e 1", "c", "6 * 7?"))
        .await;
    assert_eq!(status, 202, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"], "processing");
    let url = body["statusUrl"].as_str().unwrap();
    assert_eq!(url, format!("{}/status/e%201?agentId=calc", service.url));
    let done = service.settled(&secret, "calc", "e%201").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], "The answer is 6 * 7 = 42.");
}

#[tokio::test]
async fn an_approval_is_streamed_stored_and_answered_in_a_later_request() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = calculating_model();
    service
        .agent(
            "acme",
            "calc",
            config(&base, json!({"calculator": {"needsApproval": true}})),
        )
        .await;
    let (status, body) = service
        .post("/", &secret, &run_body("calc", "e1", "c", "6 * 7?"))
        .await;
    assert_eq!(status, 200);
    let (events, _) = parse_sse(&body);
    let request = events
        .iter()
        .find(|e| e["type"] == "tool-approval-request")
        .unwrap_or_else(|| panic!("no approval request in {:?}", types(&events)));
    let approval_id = request["approvalId"].as_str().unwrap().to_string();

    let waiting = service.settled(&secret, "calc", "e1").await;
    assert_eq!(waiting["status"], "awaiting_approval", "{waiting}");
    assert_eq!(waiting["approvals"][0]["approvalId"], approval_id.as_str());
    assert_eq!(waiting["approvals"][0]["toolName"], "calculator");
    assert_eq!(
        waiting["approvals"][0]["input"],
        json!({"expression": "6 * 7"})
    );

    // A new message while it waits is refused; the answer resumes it.
    let (status, refused) = service
        .post("/", &secret, &run_body("calc", "e2", "c", "hello?"))
        .await;
    assert_eq!(status, 409, "{refused}");
    let answer = json!({
        "agentId": "calc", "eventId": "e3", "conversationKey": "c",
        "events": [{"role": "tool", "content": [
            {"type": "tool-approval-response", "approvalId": approval_id, "approved": true}
        ]}],
    });
    let (status, body) = service.post("/", &secret, &answer).await;
    assert_eq!(status, 200, "{body}");
    let (events, _) = parse_sse(&body);
    assert!(
        types(&events).contains(&"tool-result"),
        "{:?}",
        types(&events)
    );
    let done = service.settled(&secret, "calc", "e3").await;
    assert_eq!(done["text"], "The answer is 6 * 7 = 42.");
}

#[tokio::test]
async fn malformed_and_oversized_bodies_get_clear_errors() {
    let options = ServiceOptions {
        max_body_bytes: 4096,
        ..ServiceOptions::default()
    };
    let service = common::start(options).await;
    let secret = service.account("acme").await;
    let send = |body: String| {
        service
            .client
            .post(format!("{}/", service.url))
            .bearer_auth(&secret)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let response = send("{".into()).await.unwrap();
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid request JSON: ")
    );
    let response = send("x".repeat(10_000)).await.unwrap();
    assert_eq!(response.status(), 413);
}

#[tokio::test]
async fn health_answers_any_get_and_other_methods_get_405() {
    let service = common::start(ServiceOptions::default()).await;
    let (status, body) = service.get("/anything/at/all", "").await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    let response = service
        .client
        .delete(format!("{}/", service.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": "Method not allowed", "method": "DELETE", "allowedMethods": ["GET", "POST"]})
    );
}

#[tokio::test]
async fn cors_headers_only_for_the_configured_origins() {
    let options = ServiceOptions {
        cors_origins: vec!["https://app.example.com".into()],
        ..ServiceOptions::default()
    };
    let service = common::start(options).await;
    let preflight = |origin: &'static str| {
        service
            .client
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/agents/a/chat", service.url),
            )
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization,content-type",
            )
            .send()
    };
    let allowed = preflight("https://app.example.com").await.unwrap();
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let other = preflight("https://evil.example.com").await.unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());
    // Without origins configured, no CORS headers at all.
    let plain = common::start(ServiceOptions::default()).await;
    let response = plain
        .client
        .get(format!("{}/", plain.url))
        .header("origin", "https://app.example.com")
        .send()
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
}

/// Writes `head` to a new connection to `service`, then waits for the service to answer or
/// hang up: what it sent back, and how long that took.
async fn trickle(service: &common::Running, head: &str) -> (String, Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = service.url.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    tcp.write_all(head.as_bytes()).await.unwrap();
    let begun = std::time::Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the service hung up within 10 s");
    (
        String::from_utf8_lossy(&answer).into_owned(),
        begun.elapsed(),
    )
}

#[tokio::test]
async fn a_client_slow_to_send_its_head_or_body_is_cut_off() {
    let service = common::start(ServiceOptions {
        head_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_millis(300),
        ..ServiceOptions::default()
    })
    .await;
    // Half a head, then nothing: the connection is closed.
    let (answer, took) = trickle(&service, "POST / HTTP/1.1\r\nHost: x\r\n").await;
    assert!(!answer.contains(" 200 "), "{answer}");
    assert!(took >= Duration::from_millis(250), "{took:?}");
    // A head, then a tenth of the body it announced: 408.
    let head = "POST / HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n\
                content-length: 100\r\nconnection: close\r\n\r\n{\"agentId\"";
    let (answer, took) = trickle(&service, head).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.ends_with(r#"{"error":"Request timed out: no answer within 300 ms"}"#),
        "{answer}"
    );
    assert!(took >= Duration::from_millis(250), "{took:?}");
}

#[tokio::test]
async fn a_stored_config_cannot_name_a_file_of_the_server() {
    let service = common::start(ServiceOptions::default()).await;
    service.account("acme").await;
    let dir = tempfile::tempdir().unwrap();
    let planted = dir.path().join("operator.json");
    std::fs::write(
        &planted,
        r#"{"tools": {"tavilySearch": {"apiKey": "tvly-operator"}}}"#,
    )
    .unwrap();
    let config = json!({
        "model": "openai:gpt-4o-mini",
        "subagents": [{"name": "reader", "description": "Reads.", "config": planted}],
    });
    let refused = service
        .service
        .put_agent("acme", "sneaky", &config)
        .await
        .unwrap_err();
    assert_eq!(refused.status, 400);
    let message = refused.body["error"].as_str().unwrap();
    assert!(
        message.starts_with("config.subagents[0].config: a config file's path is not accepted"),
        "{message}"
    );
}

/// When a run's stream ends its event's status is final: written with the run's last save when
/// the run finishes or pauses (one commit for both), after the run when it fails — on SQLite
/// as in memory, read at once.
#[tokio::test]
async fn the_status_is_final_when_the_stream_ends() {
    let dir = tempfile::tempdir().unwrap();
    for store in common::stores(dir.path()).await {
        let service = common::start_on(store, ServiceOptions::default()).await;
        let secret = service.account("acme").await;
        let base = calculating_model();
        let tools = json!({"calculator": {}});
        service.agent("acme", "calc", config(&base, tools)).await;
        let asking = json!({"calculator": {"needsApproval": true}});
        service.agent("acme", "asks", config(&base, asking)).await;
        // A model that is not there: the run fails.
        let gone = config("http://127.0.0.1:9/v1", json!({}));
        service.agent("acme", "gone", gone).await;

        let ask = |agent: &str, event: &str| run_body(agent, event, event, "What is 6 * 7?");
        let (status, body) = service.post("/", &secret, &ask("calc", "e1")).await;
        assert_eq!(status, 200, "{body}");
        let (status, done) = service.get("/status/e1?agentId=calc", &secret).await;
        assert_eq!(status, 200, "{done}");
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["text"], "The answer is 6 * 7 = 42.");

        let (_, body) = service.post("/", &secret, &ask("asks", "e2")).await;
        assert!(body.contains("tool-approval-request"), "{body}");
        let (_, paused) = service.get("/status/e2?agentId=asks", &secret).await;
        assert_eq!(paused["status"], "awaiting_approval", "{paused}");
        let approvals = paused["approvals"].as_array().unwrap();
        assert_eq!(approvals.len(), 1, "{paused}");
        assert_eq!(approvals[0]["toolName"], "calculator");
        assert_eq!(approvals[0]["input"], json!({"expression": "6 * 7"}));

        let (_, body) = service.post("/", &secret, &ask("gone", "e3")).await;
        assert!(body.contains("\"error\""), "{body}");
        let (_, failed) = service.get("/status/e3?agentId=gone", &secret).await;
        assert_eq!(failed["status"], "failed", "{failed}");
    }
}
