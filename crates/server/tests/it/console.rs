//! The console's page and JSON API: auth and account scoping, agents without their secrets, a
//! run started from the console, paused on an approval, answered with edited arguments and
//! finished; a run watched live to its end.

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;

use crate::common::{self, Running, call, config, last, mock_model, parse_sse, text, types};
use crate::runs::calculating_model;

/// Polls `/console/api/runs/{thread}` until `done` holds of it (at most 30 s).
async fn run_until(
    service: &Running,
    secret: &str,
    thread: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    for _ in 0..600 {
        let (status, body) = service
            .get(&format!("/console/api/runs/{thread}"), secret)
            .await;
        assert_eq!(status, 200, "{body}");
        if done(&body) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {thread} never got there");
}

fn start(agent: &str, message: &str) -> Value {
    json!({"agentId": agent, "message": message})
}

/// Starts a run of `calc` asking for 6 * 7 from the console: its answer (202), parsed.
async fn start_run(service: &Running, secret: &str) -> Value {
    let (status, body) = service
        .post(
            "/console/api/runs",
            secret,
            &start("calc", "What is 6 * 7?"),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test]
async fn the_page_is_served_confined_and_cached_by_version() {
    let service = common::start(ServiceOptions::default()).await;
    let page = service
        .client
        .get(format!("{}/console", service.url))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    assert!(html.contains("/console/assets/console.js"), "{html}");

    let script = format!("{}/console/assets/console.js", service.url);
    let first = service.client.get(&script).send().await.unwrap();
    assert_eq!(
        first.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let etag = first.headers()["etag"].clone();
    let again = service
        .client
        .get(&script)
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    let missing = service
        .client
        .get(format!("{}/console/assets/other.js", service.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn the_api_takes_the_accounts_secret_and_hides_the_configs_credentials() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    for path in [
        "/console/api/session",
        "/console/api/agents",
        "/console/api/runs",
    ] {
        let (status, body) = service.get(path, "ts_acme_0000").await;
        assert_eq!((status, &body), (401, &json!({"error": "Unauthorized"})));
    }
    let (status, body) = service.get("/console/api/session", &secret).await;
    assert_eq!((status, body), (200, json!({"account": "acme"})));

    let base = calculating_model();
    let mut agent = config(&base, json!({"calculator": {}}));
    agent["tools"]["notify"] = json!({
        "type": "webhook",
        "url": "https://hooks.example/x?sig=canary-sig",
        "description": "Tell the team.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "headers": {"Authorization": "Bearer canary-header"},
    });
    service.agent("acme", "calc", agent).await;
    let (status, body) = service.get("/console/api/agents", &secret).await;
    assert_eq!(status, 200, "{body}");
    let text = body.to_string();
    assert!(!text.contains("canary"), "{text}");
    let agent = &body["agents"][0];
    assert_eq!(agent["agentId"], "calc");
    assert_eq!(agent["model"], "openai-compatible:mock");
    assert_eq!(
        agent["config"]["tools"]["notify"]["headers"]["Authorization"],
        "[redacted]"
    );
    let names: Vec<&str> = agent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"calculator") && names.contains(&"notify"),
        "{names:?}"
    );
    let calculator = agent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "calculator")
        .unwrap();
    assert_eq!(calculator["inputSchema"]["type"], "object", "{calculator}");
}

#[tokio::test]
async fn a_run_started_here_pauses_is_approved_with_edited_arguments_and_finishes() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let other = service.account("other").await;
    let base = calculating_model();
    let tools = json!({"calculator": {"needsApproval": true}});
    service.agent("acme", "calc", config(&base, tools)).await;

    let started = start_run(&service, &secret).await;
    let thread = started["threadId"].as_str().unwrap().to_string();
    assert!(started["eventId"].as_str().unwrap().starts_with("console-"));

    let paused = run_until(&service, &secret, &thread, |r| {
        r["run"]["status"] == "paused"
    })
    .await;
    let pending = &paused["pending"][0];
    assert_eq!(pending["kind"], "approval", "{paused}");
    assert_eq!(pending["toolName"], "calculator");
    assert_eq!(pending["input"], json!({"expression": "6 * 7"}));
    assert_eq!(pending["editable"], true);
    assert_eq!(paused["run"]["agentId"], "calc");
    assert_eq!(paused["run"]["pending"], 1);
    let approval = pending["approvalId"].as_str().unwrap().to_string();

    // The list, with and without filters; another account sees none of it.
    let (_, list) = service
        .get("/console/api/runs?status=paused", &secret)
        .await;
    assert_eq!(list["runs"][0]["threadId"], thread.as_str(), "{list}");
    let (_, list) = service.get("/console/api/runs?status=idle", &secret).await;
    assert_eq!(list["runs"], json!([]));
    let (_, list) = service.get("/console/api/runs?agentId=calc", &secret).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 1, "{list}");
    let (status, _) = service.get("/console/api/runs?status=done", &secret).await;
    assert_eq!(status, 400);
    let (_, list) = service.get("/console/api/runs", &other).await;
    assert_eq!(list["runs"], json!([]));
    let answer = json!({"approvals": [{"approvalId": approval, "approved": true,
                                      "input": {"expression": "2 * 3"}}]});
    for (status, body) in [
        service
            .get(&format!("/console/api/runs/{thread}"), &other)
            .await,
        service
            .get(&format!("/console/api/runs/{thread}/live"), &other)
            .await,
    ] {
        assert_eq!((status, body), (404, json!({"error": "Run not found"})));
    }
    let (status, _) = service
        .post(
            &format!("/console/api/runs/{thread}/approvals"),
            &other,
            &answer,
        )
        .await;
    assert_eq!(status, 404);

    let (status, body) = service
        .post(
            &format!("/console/api/runs/{thread}/approvals"),
            &secret,
            &answer,
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let done = run_until(&service, &secret, &thread, |r| r["run"]["status"] == "idle").await;
    let said = done["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(said.contains("The answer is"), "{said}");
    assert!(said.contains('6'), "the edited arguments ran: {said}");
    let journal = &done["journal"][0];
    assert_eq!(journal["toolName"], "calculator", "{done}");
    assert_eq!(journal["input"], json!({"expression": "2 * 3"}));
    assert_eq!(done["pending"], json!([]));

    // Answering again: the run no longer waits.
    let (status, body) = service
        .post(
            &format!("/console/api/runs/{thread}/approvals"),
            &secret,
            &answer,
        )
        .await;
    assert!(status == 400 || status == 409, "{status} {body}");
}

#[tokio::test]
async fn bad_console_requests_get_clear_errors() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = calculating_model();
    service
        .agent("acme", "calc", config(&base, json!({"calculator": {}})))
        .await;
    let cases = [
        (json!({"agentId": "calc"}), 400, "missing field `message`"),
        (start("calc", "  "), 400, "message must not be empty"),
        (start("nobody", "hi"), 404, "Agent not found"),
        (
            json!({"agentId": "calc", "message": "hi", "extra": 1}),
            400,
            "unknown field `extra`",
        ),
    ];
    for (body, want, says) in cases {
        let (status, text) = service.post("/console/api/runs", &secret, &body).await;
        assert_eq!(status, want, "{body}: {text}");
        assert!(text.contains(says), "{body}: {text}");
    }
    let (status, text) = service
        .post(
            "/console/api/runs/conv_nothing/approvals",
            &secret,
            &json!({"approvals": []}),
        )
        .await;
    assert_eq!(status, 400, "{text}");
    let (status, text) = service
        .post(
            "/console/api/runs/conv_nothing/approvals",
            &secret,
            &json!({"approvals": [{"approvalId": "a", "approved": true}]}),
        )
        .await;
    assert_eq!(
        (status, text.as_str()),
        (404, "{\"error\":\"Run not found\"}")
    );
    let (status, _) = service.get("/console/api/runs?limit=0", &secret).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_run_is_watched_live_until_it_ends() {
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    // The second model call waits for the test's go, so that the run is still going on when
    // the test subscribes.
    let (go, wait) = mpsc::channel::<()>();
    let wait = Arc::new(Mutex::new(wait));
    let base = mock_model(move |body| match last(body) {
        (role, result) if role == "tool" => {
            let _ = wait.lock().unwrap().recv_timeout(Duration::from_secs(30));
            text(&format!("The answer is {result}."))
        }
        _ => call("call_1", "calculator", json!({"expression": "6 * 7"})),
    });
    service
        .agent("acme", "calc", config(&base, json!({"calculator": {}})))
        .await;
    let thread = start_run(&service, &secret).await["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    // Live from the moment the start was answered: a page that subscribes at once misses
    // nothing.
    let (_, running) = service
        .get(&format!("/console/api/runs/{thread}"), &secret)
        .await;
    assert_eq!(running["run"]["live"], true, "{running}");
    assert_eq!(running["run"]["status"], "running");

    let live = service
        .client
        .get(format!("{}/console/api/runs/{thread}/live", service.url))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    assert_eq!(live.headers()["content-type"], "text/event-stream");
    go.send(()).unwrap();
    // The stream ends with the run, its status stored by then.
    let body = tokio::time::timeout(Duration::from_secs(30), live.text())
        .await
        .expect("the live stream ends with its run")
        .unwrap();
    let (parts, _) = parse_sse(&body);
    let kinds = types(&parts);
    assert!(kinds.contains(&"text-delta"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"finish"), "{kinds:?}");
    let (_, after) = service
        .get(&format!("/console/api/runs/{thread}"), &secret)
        .await;
    assert_eq!(after["run"]["status"], "idle", "{after}");
    assert_eq!(after["run"]["live"], false);

    // Nothing runs now: the stream says so and ends.
    let idle = service
        .client
        .get(format!("{}/console/api/runs/{thread}/live", service.url))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(idle, "data: {\"type\":\"console-idle\"}\n\n");
}
