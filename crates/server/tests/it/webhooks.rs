//! Webhook tools: synchronous answers, the private-address guard, an external worker process
//! settling dispatched calls with its per-call token, and a slow same-invocation call waited
//! for with heartbeats and drained at the deadline.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_config::WebhookPolicy;
use toolsmith_server::ServiceOptions;

use crate::common::{self, call, config, endpoint, last, mock_model, parse_sse, run_body, text};

pub(crate) fn open() -> ServiceOptions {
    ServiceOptions {
        webhooks: WebhookPolicy::any(),
        ..ServiceOptions::default()
    }
}

pub(crate) fn webhook(url: &str, extra: Value) -> Value {
    let mut entry = json!({
        "type": "webhook",
        "url": url,
        "description": "Reverse a text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    });
    entry
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    entry
}

/// A model that calls `reverse` with "hello", then says what it got (the tool's result, or an
/// injected message's).
pub(crate) fn reversing_model() -> String {
    mock_model(|body| match last(body) {
        (role, said) if role == "user" && said.starts_with("Async tool result") => text(&format!(
            "Injected: {}",
            said.rsplit("Result:\n").next().unwrap_or_default()
        )),
        (role, said) if role == "tool" => text(&format!("Tool said: {said}")),
        _ => call("call_1", "reverse", json!({"text": "hello"})),
    })
}

#[tokio::test]
async fn a_synchronous_webhook_answers_with_its_body() {
    let service = common::start(open()).await;
    let secret = service.account("acme").await;
    let (url, hits) = endpoint(|_| (200, r#"{"reversed":"olleh"}"#.into(), Duration::ZERO));
    let tools = json!({"reverse": webhook(&url, json!({"headers": {"x-api-key": "k-123"}}))});
    service
        .agent("acme", "a", config(&reversing_model(), tools))
        .await;
    let (status, body) = service
        .post("/", &secret, &run_body("a", "e1", "c", "go"))
        .await;
    assert_eq!(status, 200, "{body}");
    let (events, _) = parse_sse(&body);
    let result = events.iter().find(|e| e["type"] == "tool-result").unwrap();
    assert_eq!(result["output"], json!({"reversed": "olleh"}), "{result}");
    let hit = hits.lock().unwrap()[0].clone();
    assert_eq!(
        hit.body,
        json!({"toolName": "reverse", "toolCallId": "call_1", "input": {"text": "hello"}})
    );
    assert!(hit.headers.contains(&("x-api-key".into(), "k-123".into())));
}

#[tokio::test]
async fn a_failing_webhook_is_a_tool_error_the_model_sees() {
    let service = common::start(open()).await;
    let secret = service.account("acme").await;
    let (url, _) = endpoint(|_| (503, "overloaded".into(), Duration::ZERO));
    let tools = json!({"reverse": webhook(&url, json!({}))});
    service
        .agent("acme", "a", config(&reversing_model(), tools))
        .await;
    let (_, body) = service
        .post("/", &secret, &run_body("a", "e1", "c", "go"))
        .await;
    let (events, _) = parse_sse(&body);
    let error = events.iter().find(|e| e["type"] == "tool-error").unwrap();
    assert_eq!(error["error"]["code"], "WEBHOOK_FAILED", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("answered 503: overloaded"), "{message}");
    assert!(
        !message.contains("/hook"),
        "the path stays out of errors: {message}"
    );
}

#[tokio::test]
async fn webhooks_cannot_reach_private_addresses_by_default() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let (url, hits) = endpoint(|_| (200, "{}".into(), Duration::ZERO));
    let by_name = url.replace("127.0.0.1", "localhost");
    for (event, url, code) in [
        ("e1", &url, "WEBHOOK_FORBIDDEN"),
        ("e2", &by_name, "WEBHOOK_UNREACHABLE"),
    ] {
        let tools = json!({"reverse": webhook(url, json!({}))});
        service
            .agent("acme", "a", config(&reversing_model(), tools))
            .await;
        let (_, body) = service
            .post("/", &secret, &run_body("a", event, event, "go"))
            .await;
        let (events, _) = parse_sse(&body);
        let error = events
            .iter()
            .find(|e| e["type"] == "tool-error")
            .unwrap_or_else(|| panic!("{body}"));
        assert_eq!(error["error"]["code"], code, "{error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("private address"),
            "{error}"
        );
    }
    assert!(
        hits.lock().unwrap().is_empty(),
        "nothing reached the endpoint"
    );
}

/// The example worker, started on a free port: the process and its URL.
fn worker() -> (Child, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/worker.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg("0")
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs examples/worker.py");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let port = line.trim().rsplit(' ').next().unwrap().to_string();
    (child, format!("http://127.0.0.1:{port}/"))
}

#[tokio::test]
async fn an_external_worker_process_settles_a_dispatched_call_with_its_token() {
    let service = common::start(open()).await;
    let secret = service.account("acme").await;
    let (mut worker, url) = worker();
    let entry = webhook(
        &url,
        json!({"async": true, "execution": "external-dispatch"}),
    );
    service
        .agent(
            "acme",
            "a",
            config(&reversing_model(), json!({"reverse": entry})),
        )
        .await;
    let (status, body) = service
        .post("/async", &secret, &run_body("a", "e1", "c", "go"))
        .await;
    assert_eq!(status, 202, "{body}");
    let done = service.settled(&secret, "a", "e1").await;
    let _ = worker.kill();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], r#"Injected: {"reversed":"olleh"}"#);
}

#[tokio::test]
async fn a_slow_call_is_waited_for_with_heartbeats_then_drained_at_the_deadline() {
    let options = ServiceOptions {
        heartbeat: Duration::from_millis(100),
        async_wait: Duration::from_millis(700),
        ..open()
    };
    let service = common::start(options).await;
    let secret = service.account("acme").await;
    let (url, _) = endpoint(|_| (200, r#""late""#.into(), Duration::from_secs(3)));
    let entry = webhook(&url, json!({"async": true}));
    service
        .agent(
            "acme",
            "a",
            config(&reversing_model(), json!({"reverse": entry})),
        )
        .await;
    let (status, body) = service
        .post("/", &secret, &run_body("a", "e1", "c", "go"))
        .await;
    assert_eq!(status, 200, "{body}");
    let (events, comments) = parse_sse(&body);
    assert!(
        comments
            .iter()
            .any(|c| c == "waiting for async work pending=1"),
        "{comments:?}"
    );
    let last_text: String = events
        .iter()
        .filter(|e| e["type"] == "text-delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(
        last_text.ends_with(
            "Injected: Async tool call is still pending near the parent request timeout."
        ),
        "{last_text}"
    );
    let row = &service.store.async_results_of("acme/a/e1").await.unwrap()[0];
    assert_eq!(row.status.as_str(), "failed");
    // The late answer changes nothing: the row stays as drained.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let row = service
        .store
        .async_result(&row.result_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.error.as_deref(),
        Some("Async tool call is still pending near the parent request timeout.")
    );
}
