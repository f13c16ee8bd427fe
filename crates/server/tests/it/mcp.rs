//! `/agents/{agentId}/mcp`: an account's agent's tools over MCP, driven by rmcp's client over
//! the service's real HTTP (and by bare requests where the status codes and headers matter).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolsmith_config::WebhookPolicy;
use toolsmith_server::ServiceOptions;

use crate::common::{self, Hit, Running};

// ---------------------------------------------------------------------------------------------
// The client

/// rmcp's client: declares the elicitation capability only when it has an answer, and keeps
/// the messages it was asked.
#[derive(Clone, Default)]
struct TestClient {
    answer: Option<ElicitResult>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl TestClient {
    fn accepting() -> TestClient {
        TestClient {
            answer: Some(
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})),
            ),
            ..TestClient::default()
        }
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match self.answer {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("toolsmith-tests", "1"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        Ok(self.answer.clone().expect("asked only when it can answer"))
    }
}

type Client = RunningService<RoleClient, TestClient>;

/// `client` connected to `url` with the bearer `secret`.
async fn connect(url: &str, secret: &str, client: TestClient) -> Result<Client, String> {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(secret);
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    client.serve(transport).await.map_err(|e| e.to_string())
}

/// Calls `name` with `arguments`: the result as JSON.
async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
    serde_json::to_value(client.call_tool(params).await.unwrap()).unwrap()
}

/// The text of a result's first content block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The names of the tools the client is offered.
async fn names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.iter().map(|t| t.name.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// The service

/// A service reaching loopback webhooks, with `acme`'s agent `helper` ([`config`]) and the
/// account `other`: the service, acme's and other's secrets, the webhook's requests.
async fn setup() -> (Running, String, String, Arc<Mutex<Vec<Hit>>>) {
    setup_with(ServiceOptions::default()).await
}

async fn setup_with(options: ServiceOptions) -> (Running, String, String, Arc<Mutex<Vec<Hit>>>) {
    let running = common::start(ServiceOptions {
        webhooks: WebhookPolicy::any(),
        ..options
    })
    .await;
    let acme = running.account("acme").await;
    let other = running.account("other").await;
    let (hook, hits) = common::endpoint(|body| {
        let answer = json!({"found": body["input"]["id"]}).to_string();
        (200, answer, Duration::ZERO)
    });
    running.agent("acme", "helper", config(&hook)).await;
    (running, acme, other, hits)
}

/// Built-ins, a webhook tool the approval policy names, and an async webhook tool.
fn config(hook: &str) -> Value {
    json!({
        "model": {"provider": "openai-compatible", "name": "mock",
                  "baseUrl": "http://127.0.0.1:9/v1"},
        "tools": {
            "read": {}, "write": {}, "calculator": {},
            "lookup": {"type": "webhook", "url": hook, "description": "Look a record up.",
                       "inputSchema": {"type": "object",
                                       "properties": {"id": {"type": "integer"}}}},
            "later": {"type": "webhook", "url": hook, "description": "Look it up later.",
                      "inputSchema": {"type": "object"}, "async": true},
        },
        "approval": {"policy": ["lookup"]},
    })
}

fn mcp_url(running: &Running, agent: &str) -> String {
    format!("{}/agents/{agent}/mcp", running.url)
}

/// A bare MCP request: `method` with `headers`, and `body` as JSON when given.
async fn send(
    running: &Running,
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> reqwest::Response {
    let mut request = running
        .client
        .request(method, url)
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap()
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "curl", "version": "1"}}})
}

fn list_tools() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
}

/// A new session on `url` with `secret`, its `initialized` notification sent: its id.
async fn session(running: &Running, url: &str, secret: &str) -> String {
    let bearer = format!("Bearer {secret}");
    let auth = [("authorization", bearer.as_str())];
    let response = send(
        running,
        reqwest::Method::POST,
        url,
        &auth,
        Some(initialize()),
    )
    .await;
    assert_eq!(response.status(), 200);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body = response.text().await.unwrap();
    assert!(
        body.contains("\"protocolVersion\":\"2025-11-25\""),
        "{body}"
    );
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = send(
        running,
        reqwest::Method::POST,
        url,
        &headers,
        Some(initialized),
    )
    .await;
    assert_eq!(response.status(), 202);
    id
}

/// `POST tools/list` in `session`: the status and the body.
async fn list_in(running: &Running, url: &str, secret: &str, session: &str) -> (u16, String) {
    let bearer = format!("Bearer {secret}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let response = send(
        running,
        reqwest::Method::POST,
        url,
        &headers,
        Some(list_tools()),
    )
    .await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Opens the session's `GET` stream: the response, its head read.
async fn open_stream(
    running: &Running,
    url: &str,
    secret: &str,
    session: &str,
) -> reqwest::Response {
    let bearer = format!("Bearer {secret}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("accept", "text/event-stream"),
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let response = send(running, reqwest::Method::GET, url, &headers, None).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    response
}

/// Whether `stream`'s body ends within `within`.
async fn ends_within(mut stream: reqwest::Response, within: Duration) -> bool {
    tokio::time::timeout(within, async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await
    .is_ok()
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn serves_the_agents_tools_and_refuses_unapproved_calls() {
    let (running, acme, _, hits) = setup().await;
    let workspace = running.workspaces.path().join("acme").join("helper");
    std::fs::write(workspace.join("notes.txt"), "kept in the workspace\n").unwrap();
    let client = connect(&mcp_url(&running, "helper"), &acme, TestClient::default())
        .await
        .unwrap();
    // The config's tools, the async one and its status tool left out.
    assert_eq!(
        names(&client).await,
        ["read", "write", "calculator", "lookup"]
    );

    let sum = call(&client, "calculator", json!({"expression": "6 * 7"})).await;
    assert_eq!(text(&sum), "6 * 7 = 42", "{sum}");
    let read = call(&client, "read", json!({"path": "notes.txt"})).await;
    assert!(text(&read).contains("kept in the workspace"), "{read}");
    // Confined to the agent's workspace.
    let outside = call(&client, "read", json!({"path": "../other/secret.txt"})).await;
    assert_eq!(outside["isError"], true, "{outside}");

    // A built-in that changes things asks, and so does the tool the config's policy names:
    // this client cannot be asked.
    let write = call(&client, "write", json!({"path": "new.txt", "content": "x"})).await;
    assert_eq!(write["isError"], true);
    assert!(
        text(&write).starts_with("APPROVAL_REQUIRED: the tool \"write\" needs approval"),
        "{write}"
    );
    assert!(!workspace.join("new.txt").exists(), "never written");
    let lookup = call(&client, "lookup", json!({"id": 7})).await;
    assert_eq!(lookup["structuredContent"]["code"], "APPROVAL_REQUIRED");
    assert!(
        hits.lock().unwrap().is_empty(),
        "the webhook was never called"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_that_needs_approval_runs_once_the_client_accepts() {
    let (running, acme, _, hits) = setup().await;
    let client = TestClient::accepting();
    let asked = client.asked.clone();
    let client = connect(&mcp_url(&running, "helper"), &acme, client)
        .await
        .unwrap();
    let write = call(
        &client,
        "write",
        json!({"path": "new.txt", "content": "approved"}),
    )
    .await;
    assert_ne!(write["isError"], true, "{write}");
    let written = running.workspaces.path().join("acme/helper/new.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "approved");
    let lookup = call(&client, "lookup", json!({"id": 7})).await;
    assert_eq!(lookup["structuredContent"], json!({"found": 7}), "{lookup}");
    assert_eq!(hits.lock().unwrap().len(), 1);
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert!(asked[0].contains("\"write\"") && asked[1].contains("\"lookup\""));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_accounts_key_and_its_own_agent_are_required() {
    let (running, acme, other, _) = setup().await;
    let url = mcp_url(&running, "helper");
    let post = reqwest::Method::POST;

    let none = send(&running, post.clone(), &url, &[], Some(initialize())).await;
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    assert_eq!(none.text().await.unwrap(), r#"{"error":"Unauthorized"}"#);
    let wrong = [("authorization", "Bearer ts_acme_00")];
    let wrong = send(&running, post.clone(), &url, &wrong, Some(initialize())).await;
    assert_eq!(wrong.status(), 401);

    // Another account's agent and an unknown one answer alike.
    let bearer = format!("Bearer {other}");
    let theirs = [("authorization", bearer.as_str())];
    for url in [url.clone(), mcp_url(&running, "nobody")] {
        let response = send(&running, post.clone(), &url, &theirs, Some(initialize())).await;
        assert_eq!(response.status(), 404, "{url}");
        assert_eq!(
            response.text().await.unwrap(),
            r#"{"error":"Agent not found"}"#
        );
    }
    let bearer = format!("Bearer {acme}");
    let unknown = [("authorization", bearer.as_str())];
    let missing = mcp_url(&running, "nobody");
    let response = send(
        &running,
        post.clone(),
        &missing,
        &unknown,
        Some(initialize()),
    )
    .await;
    assert_eq!(response.status(), 404);

    // rmcp's client gets nowhere without its account's key.
    assert!(connect(&url, &other, TestClient::default()).await.is_err());
    assert!(
        connect(&url, "ts_acme_00", TestClient::default())
            .await
            .is_err()
    );
    assert!(
        connect(&missing, &acme, TestClient::default())
            .await
            .is_err()
    );

    let put = send(&running, reqwest::Method::PUT, &url, &[], None).await;
    assert_eq!(put.status(), 405);
    assert_eq!(
        put.json::<Value>().await.unwrap(),
        json!({"error": "Method not allowed", "method": "PUT",
               "allowedMethods": ["GET", "POST", "DELETE"]})
    );
}

#[tokio::test]
async fn a_session_is_reached_by_get_and_ended_by_delete() {
    let (running, acme, _, _) = setup().await;
    let url = mcp_url(&running, "helper");
    let bearer = format!("Bearer {acme}");
    // Any host: the service listens where its operator says.
    let named = [
        ("authorization", bearer.as_str()),
        ("host", "agents.example.com"),
    ];
    let response = send(
        &running,
        reqwest::Method::POST,
        &url,
        &named,
        Some(initialize()),
    )
    .await;
    assert_eq!(response.status(), 200);
    // A browser page from a foreign origin is refused, a loopback one is not.
    let foreign = [
        ("authorization", bearer.as_str()),
        ("origin", "https://evil.example"),
    ];
    let response = send(
        &running,
        reqwest::Method::POST,
        &url,
        &foreign,
        Some(initialize()),
    )
    .await;
    assert_eq!(response.status(), 403);
    let local = [
        ("authorization", bearer.as_str()),
        ("origin", "http://localhost:6274"),
    ];
    let response = send(
        &running,
        reqwest::Method::POST,
        &url,
        &local,
        Some(initialize()),
    )
    .await;
    assert_eq!(response.status(), 200);

    let id = session(&running, &url, &acme).await;
    let (status, body) = list_in(&running, &url, &acme, &id).await;
    assert_eq!(status, 200);
    assert!(body.contains("\"name\":\"calculator\""), "{body}");
    let stream = open_stream(&running, &url, &acme, &id).await;
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let deleted = send(&running, reqwest::Method::DELETE, &url, &headers, None).await;
    assert!(deleted.status().is_success(), "{}", deleted.status());
    assert!(ends_within(stream, Duration::from_secs(10)).await);
    let (status, body) = list_in(&running, &url, &acme, &id).await;
    assert_eq!(
        (status, body.as_str()),
        (404, "Not Found: Session not found")
    );
}

#[tokio::test]
async fn a_changed_config_ends_the_sessions_of_the_old_one() {
    let (running, acme, _, _) = setup().await;
    let url = mcp_url(&running, "helper");
    let id = session(&running, &url, &acme).await;
    let stream = open_stream(&running, &url, &acme, &id).await;
    let client = connect(&url, &acme, TestClient::default()).await.unwrap();
    assert!(names(&client).await.contains(&"calculator".to_string()));

    let changed = json!({
        "model": {"provider": "openai-compatible", "name": "mock",
                  "baseUrl": "http://127.0.0.1:9/v1"},
        "tools": {"read": {}},
    });
    let response = running
        .client
        .put(format!("{}/agents/helper", running.url))
        .bearer_auth(&acme)
        .json(&changed)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    assert!(ends_within(stream, Duration::from_secs(10)).await);
    let (status, body) = list_in(&running, &url, &acme, &id).await;
    assert_eq!(
        (status, body.as_str()),
        (404, "Not Found: Session not found")
    );
    // rmcp's client starts a new session on the 404, and sees the new config.
    assert_eq!(names(&client).await, ["read"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_deleted_agent_ends_its_sessions() {
    let (running, acme, _, _) = setup().await;
    let url = mcp_url(&running, "helper");
    let id = session(&running, &url, &acme).await;
    let stream = open_stream(&running, &url, &acme, &id).await;
    let response = running
        .client
        .delete(format!("{}/agents/helper", running.url))
        .bearer_auth(&acme)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 204);
    // The agent cache sees the deletion within a second; the session's next request after it
    // is refused, and the session ends.
    let mut answer = (0, String::new());
    for _ in 0..50 {
        answer = list_in(&running, &url, &acme, &id).await;
        if answer.0 == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answer, (404, r#"{"error":"Agent not found"}"#.to_string()));
    assert!(ends_within(stream, Duration::from_secs(10)).await);
}

#[tokio::test]
async fn a_shutdown_ends_the_sessions_at_once() {
    let options = ServiceOptions {
        shutdown_grace: Duration::from_secs(30),
        ..ServiceOptions::default()
    };
    let (running, acme, _, _) = setup_with(options).await;
    let url = mcp_url(&running, "helper");
    let id = session(&running, &url, &acme).await;
    let stream = open_stream(&running, &url, &acme, &id).await;
    let took = running.shut_down().await;
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(ends_within(stream, Duration::from_secs(1)).await);
}

#[tokio::test]
async fn browsers_on_a_cors_origin_may_send_the_mcp_headers() {
    let options = ServiceOptions {
        cors_origins: vec!["http://localhost:3000".into()],
        ..ServiceOptions::default()
    };
    let (running, acme, _, _) = setup_with(options).await;
    let url = mcp_url(&running, "helper");
    let preflight = running
        .client
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", "http://localhost:3000")
        .header("access-control-request-method", "DELETE")
        .header(
            "access-control-request-headers",
            "authorization, content-type, mcp-session-id, mcp-protocol-version, last-event-id",
        )
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    let allowed = preflight.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_string();
    for header in ["mcp-session-id", "mcp-protocol-version", "last-event-id"] {
        assert!(allowed.contains(header), "{allowed}");
    }
    let bearer = format!("Bearer {acme}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("origin", "http://localhost:3000"),
    ];
    let response = send(
        &running,
        reqwest::Method::POST,
        &url,
        &headers,
        Some(initialize()),
    )
    .await;
    assert_eq!(response.status(), 200);
    let exposed = &response.headers()["access-control-expose-headers"];
    assert!(
        exposed.to_str().unwrap().contains("mcp-session-id"),
        "{exposed:?}"
    );
}

#[tokio::test]
async fn a_body_past_the_limit_is_413_however_it_is_sent() {
    let options = ServiceOptions {
        max_body_bytes: 1000,
        ..ServiceOptions::default()
    };
    let (running, acme, _, _) = setup_with(options).await;
    let url = mcp_url(&running, "helper");
    let bearer = format!("Bearer {acme}");
    let mut large = initialize();
    large["params"]["clientInfo"]["name"] = json!("x".repeat(2000));
    let auth = [("authorization", bearer.as_str())];
    let told = send(
        &running,
        reqwest::Method::POST,
        &url,
        &auth,
        Some(large.clone()),
    )
    .await;
    assert_eq!(told.status(), 413);
    // Sent in chunks, without a length.
    let chunks = futures::stream::iter([Ok::<_, std::io::Error>(large.to_string())]);
    let chunked = running
        .client
        .post(&url)
        .header("authorization", bearer.as_str())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(chunked.status(), 413);
    assert_eq!(
        chunked.text().await.unwrap(),
        "Failed to buffer the request body: length limit exceeded"
    );
}
