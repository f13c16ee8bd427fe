//! The MCP server driven by rmcp's own client, over an in-memory stream and over streamable
//! HTTP on a loopback port: listing, results of every kind, errors in band, panics, time
//! limits, cancellation, progress, approvals by elicitation, and the HTTP endpoint's guards.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorCode, Implementation, ProgressNotificationParam,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use toolsmith_core::{
    Approval, CancellationToken, ContentPart, ModelOutput, Tool, ToolContext, ToolError, ToolMeta,
    ToolOutput, ToolSpec, Toolset, async_trait,
};
use toolsmith_mcp::server::{HttpConfig, McpServer, serve_http};

// ---------------------------------------------------------------------------------------------
// Tools

type Run = Arc<
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync,
>;

/// A tool whose call is a closure.
struct Scripted {
    spec: ToolSpec,
    meta: ToolMeta,
    run: Run,
}

#[async_trait]
impl Tool for Scripted {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.run)(input, cx.clone()).await
    }
}

fn scripted<F, Fut>(spec: ToolSpec, meta: ToolMeta, run: F) -> Scripted
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    Scripted {
        spec,
        meta,
        run: Arc::new(move |input, cx| Box::pin(run(input, cx))),
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// The tools the tests call; what they report (started, ran, observed a cancellation, were
/// dropped) goes to `events`.
fn tools(events: UnboundedSender<String>) -> Toolset {
    let mut tools = Toolset::new();
    tools.add(scripted(
        ToolSpec::new(
            "echo",
            object(
                json!({"text": {"type": "string", "minLength": 1}}),
                &["text"],
            ),
        )
        .with_description("Say it back."),
        ToolMeta::new(),
        |input, _| async move { Ok(ToolOutput::text(input["text"].as_str().unwrap_or_default())) },
    ));
    tools.add(scripted(
        ToolSpec::new(
            "weather",
            object(json!({"city": {"type": "string"}}), &["city"]),
        )
        .with_description("The weather in a city.")
        .with_output_schema(object(json!({"celsius": {"type": "number"}}), &["celsius"])),
        ToolMeta::new(),
        |_, _| async { Ok(ToolOutput::json(json!({"celsius": 21.5}))) },
    ));
    tools.add(scripted(
        ToolSpec::new("picture", json!({"type": "object"})),
        ToolMeta::new(),
        |_, _| async {
            Ok(
                ToolOutput::text("a dot").with_model_output(ModelOutput::Content {
                    value: vec![
                        ContentPart::Text {
                            text: "a dot".into(),
                        },
                        ContentPart::Image {
                            data: PNG.into(),
                            media_type: "image/png".into(),
                        },
                    ],
                }),
            )
        },
    ));
    tools.add(scripted(
        ToolSpec::new("missing", json!({"type": "object"})),
        ToolMeta::new(),
        |_, _| async {
            Err(ToolError::new("NOT_FOUND", "there is no such record")
                .with_details(json!({"id": 7}))
                .with_operator_detail("row 7 was deleted yesterday"))
        },
    ));
    tools.add(scripted(
        ToolSpec::new("panics", json!({"type": "object"})),
        ToolMeta::new(),
        |_, _| async { panic!("the tool broke") },
    ));
    tools.add(scripted(
        ToolSpec::new("sleepy", json!({"type": "object"})),
        ToolMeta::new().timeout(Duration::from_millis(200)),
        |_, _| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok(ToolOutput::text("woke up"))
        },
    ));
    tools.add(scripted(
        ToolSpec::new("slow", json!({"type": "object"})),
        ToolMeta::new(),
        |_, _| async {
            tokio::time::sleep(Duration::from_millis(2300)).await;
            Ok(ToolOutput::text("done"))
        },
    ));
    let sent = events.clone();
    tools.add(scripted(
        ToolSpec::new("waits", json!({"type": "object"})),
        ToolMeta::new(),
        move |_, cx| {
            let events = sent.clone();
            async move {
                let _ = events.send("waits started".into());
                cx.cancellation().cancelled().await;
                let _ = events.send("waits observed the cancellation".into());
                Ok(ToolOutput::text("stopped"))
            }
        },
    ));
    let sent = events.clone();
    tools.add(scripted(
        ToolSpec::new("stubborn", json!({"type": "object"})),
        ToolMeta::new(),
        move |_, cx| {
            let events = sent.clone();
            async move {
                let _dropped = OnDrop(events.clone(), cx.cancellation().clone());
                let _ = events.send("stubborn started".into());
                std::future::pending::<()>().await;
                Ok(ToolOutput::text("never"))
            }
        },
    ));
    let sent = events;
    tools.add(scripted(
        ToolSpec::new(
            "guarded",
            object(json!({"path": {"type": "string"}}), &["path"]),
        ),
        ToolMeta::new().side_effect(true).approval(Approval::Always),
        move |input, _| {
            let events = sent.clone();
            async move {
                let _ = events.send(format!("guarded ran on {}", input["path"]));
                Ok(ToolOutput::text("written"))
            }
        },
    ));
    tools
}

/// Reports, when dropped, whether the call's token was cancelled by then.
struct OnDrop(UnboundedSender<String>, CancellationToken);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(format!(
            "stubborn dropped (token cancelled: {})",
            self.1.is_cancelled()
        ));
    }
}

fn server() -> (McpServer, UnboundedReceiver<String>) {
    let (events, received) = unbounded_channel();
    (McpServer::new(tools(events)), received)
}

async fn next_event(events: &mut UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("an event within 10 s")
        .expect("the tools keep their sender")
}

// ---------------------------------------------------------------------------------------------
// The client

/// rmcp's client: answers elicitations with `answer` (declaring the capability only then) and
/// keeps what it was asked and the progress it was sent.
#[derive(Clone, Default)]
struct TestClient {
    answer: Option<ElicitResult>,
    version: Option<ProtocolVersion>,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl TestClient {
    fn answering(answer: ElicitResult) -> TestClient {
        TestClient {
            answer: Some(answer),
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
            .with_protocol_version(
                self.version
                    .clone()
                    .unwrap_or(ProtocolVersion::V_2025_11_25),
            )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            let schema = serde_json::to_value(requested_schema).unwrap();
            self.asked.lock().unwrap().push((message, schema));
        }
        Ok(self.answer.clone().expect("asked only when it can answer"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

type Client = RunningService<RoleClient, TestClient>;

/// `client` connected to a new session of `server` over an in-memory stream, through the
/// server's own transport (as on stdio).
async fn connect(server: &McpServer, client: TestClient) -> Client {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let server = server.clone();
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(theirs);
        let _ = toolsmith_mcp::server::serve_stream(&server, read, write).await;
    });
    client.serve(ours).await.expect("the handshake")
}

fn params(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    CallToolRequestParams::new(name.to_string()).with_arguments(arguments)
}

async fn call(client: &Client, name: &str, arguments: Value) -> Value {
    let result: CallToolResult = client.call_tool(params(name, arguments)).await.unwrap();
    serde_json::to_value(result).unwrap()
}

/// The text of a result's only content block.
fn text(result: &Value) -> &str {
    assert_eq!(
        result["content"].as_array().map(Vec::len),
        Some(1),
        "{result}"
    );
    result["content"][0]["text"].as_str().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn lists_every_tool_with_its_schemas_as_declared() {
    let (server, _events) = server();
    let client = connect(&server, TestClient::default()).await;
    let info = client.peer_info().unwrap();
    let implementation = info.server_info.as_ref().unwrap();
    assert_eq!(implementation.name, "toolsmith");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert_eq!(
        info.capabilities.tools.as_ref().unwrap().list_changed,
        Some(false)
    );

    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| &*t.name).collect();
    assert_eq!(names, server.tools().names().collect::<Vec<_>>());
    for (declared, tool) in listed.iter().zip(server.tools().iter()) {
        let wire = serde_json::to_value(declared).unwrap();
        assert_eq!(&wire["inputSchema"], tool.spec().input_schema().as_ref());
        match tool.spec().output_schema() {
            Some(schema) => assert_eq!(&wire["outputSchema"], schema.as_ref()),
            None => assert!(wire.get("outputSchema").is_none()),
        }
    }
    let guarded = serde_json::to_value(listed.iter().find(|t| t.name == "guarded")).unwrap();
    assert_eq!(
        guarded["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false})
    );
    let echo = serde_json::to_value(&listed[0]).unwrap();
    assert_eq!(echo["description"], "Say it back.");
    assert_eq!(
        echo["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true})
    );
}

#[tokio::test]
async fn a_long_list_comes_in_pages() {
    let mut many = Toolset::new();
    for i in 0..250 {
        many.add(scripted(
            ToolSpec::new(format!("tool_{i:03}"), json!({"type": "object"})),
            ToolMeta::new(),
            |_, _| async { Ok(ToolOutput::text("")) },
        ));
    }
    let client = connect(&McpServer::new(many), TestClient::default()).await;
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 100);
    assert!(first.next_cursor.is_some());
    let all = client.list_all_tools().await.unwrap();
    assert_eq!(all.len(), 250);
    assert_eq!(all[249].name, "tool_249");
}

#[tokio::test]
async fn an_older_client_is_answered_in_its_version_and_an_ancient_one_in_ours() {
    let (server, _events) = server();
    for (asked, answered) in [
        (ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_06_18),
        (ProtocolVersion::V_2024_11_05, ProtocolVersion::V_2025_11_25),
    ] {
        let client = TestClient {
            version: Some(asked),
            ..TestClient::default()
        };
        let client = connect(&server, client).await;
        assert_eq!(client.peer_info().unwrap().protocol_version, answered);
    }
}

#[tokio::test]
async fn successes_as_text_json_and_images() {
    let (server, _events) = server();
    let client = connect(&server, TestClient::default()).await;

    let echo = call(&client, "echo", json!({"text": "hello"})).await;
    assert_eq!(echo["isError"], false);
    assert_eq!(text(&echo), "hello");
    assert!(echo.get("structuredContent").is_none());

    let weather = call(&client, "weather", json!({"city": "Lyon"})).await;
    assert_eq!(weather["isError"], false);
    assert_eq!(weather["structuredContent"], json!({"celsius": 21.5}));
    assert_eq!(
        serde_json::from_str::<Value>(text(&weather)).unwrap(),
        json!({"celsius": 21.5})
    );

    let picture = call(&client, "picture", json!({})).await;
    assert_eq!(
        picture["content"],
        json!([
            {"type": "text", "text": "a dot"},
            {"type": "image", "data": PNG, "mimeType": "image/png"}
        ])
    );
}

#[tokio::test]
async fn failures_are_results_with_their_code_and_unknown_tools_protocol_errors() {
    let (server, _events) = server();
    let client = connect(&server, TestClient::default()).await;

    let invalid = call(&client, "echo", json!({"text": ""})).await;
    assert_eq!(invalid["isError"], true);
    assert!(
        text(&invalid).starts_with("INVALID_INPUT: Invalid arguments:"),
        "{invalid}"
    );
    assert_eq!(invalid["structuredContent"]["code"], "INVALID_INPUT");
    let extra = call(&client, "echo", json!({"text": "a", "loud": true})).await;
    assert!(text(&extra).starts_with("INVALID_INPUT: "), "{extra}");

    let missing = call(&client, "missing", json!({})).await;
    assert_eq!(missing["isError"], true);
    assert_eq!(text(&missing), "NOT_FOUND: there is no such record");
    assert_eq!(
        missing["structuredContent"],
        json!({"code": "NOT_FOUND", "message": "there is no such record", "details": {"id": 7}})
    );
    assert!(
        !missing.to_string().contains("yesterday"),
        "operator details stay out"
    );

    // A tool that declares an output schema: the error as text only.
    let bad_city = call(&client, "weather", json!({})).await;
    assert_eq!(bad_city["isError"], true);
    assert!(bad_city.get("structuredContent").is_none(), "{bad_city}");

    let unknown = client
        .call_tool(params("nope", json!({})))
        .await
        .unwrap_err();
    let ServiceError::McpError(error) = unknown else {
        panic!("{unknown:?}")
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.message, "unknown tool \"nope\"");
}

#[tokio::test]
async fn a_panic_and_a_timeout_leave_the_server_serving() {
    let (server, _events) = server();
    let client = connect(&server, TestClient::default()).await;
    let panicked = call(&client, "panics", json!({})).await;
    assert_eq!(panicked["isError"], true);
    assert_eq!(
        text(&panicked),
        "TOOL_PANICKED: the tool \"panics\" failed unexpectedly (it panicked)"
    );
    let started = std::time::Instant::now();
    let slept = call(&client, "sleepy", json!({})).await;
    assert_eq!(
        text(&slept),
        "TIMEOUT: the tool \"sleepy\" did not finish within 200 ms; it was cancelled"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        text(&call(&client, "echo", json!({"text": "still here"})).await),
        "still here"
    );
}

#[tokio::test]
async fn a_cancelled_request_cancels_the_call_and_drops_it_after_the_grace() {
    let (server, mut events) = server();
    let client = Arc::new(connect(&server, TestClient::default()).await);

    // A cooperative tool sees its token cancelled when the client drops the request.
    let request = tokio::spawn({
        let client = Arc::clone(&client);
        async move { client.call_tool(params("waits", json!({}))).await }
    });
    assert_eq!(next_event(&mut events).await, "waits started");
    request.abort();
    assert_eq!(
        next_event(&mut events).await,
        "waits observed the cancellation"
    );

    // One that ignores it is dropped, its token cancelled by then.
    let request = tokio::spawn({
        let client = Arc::clone(&client);
        async move { client.call_tool(params("stubborn", json!({}))).await }
    });
    assert_eq!(next_event(&mut events).await, "stubborn started");
    request.abort();
    assert_eq!(
        next_event(&mut events).await,
        "stubborn dropped (token cancelled: true)"
    );
    // The session goes on.
    assert_eq!(
        text(&call(&client, "echo", json!({"text": "next"})).await),
        "next"
    );
}

#[tokio::test]
async fn progress_about_once_a_second_while_a_call_runs() {
    let (server, _events) = server();
    let client = TestClient::default();
    let progress = Arc::clone(&client.progress);
    let client = connect(&server, client).await;
    // rmcp's client puts a progress token on every request.
    let done = call(&client, "slow", json!({})).await;
    assert_eq!(text(&done), "done");
    let sent: Vec<(f64, Option<String>)> = progress
        .lock()
        .unwrap()
        .iter()
        .map(|p| (p.progress, p.message.clone()))
        .collect();
    // Two, unless a loaded machine delays the second tick past the end of the call.
    assert!(!sent.is_empty() && sent.len() <= 2, "{sent:?}");
    for (i, (progress, message)) in sent.iter().enumerate() {
        let elapsed = i + 1;
        assert_eq!(*progress, elapsed as f64);
        assert_eq!(
            message.as_deref(),
            Some(&*format!("running slow: {elapsed} s"))
        );
    }
}

#[tokio::test]
async fn an_approved_call_runs_once_the_client_accepts() {
    let (server, mut events) = server();
    let client = TestClient::answering(
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})),
    );
    let asked = Arc::clone(&client.asked);
    let client = connect(&server, client).await;
    let result = call(&client, "guarded", json!({"path": "notes.txt"})).await;
    assert_eq!(text(&result), "written");
    assert_eq!(
        next_event(&mut events).await,
        "guarded ran on \"notes.txt\""
    );
    let asked = asked.lock().unwrap();
    let (message, schema) = &asked[0];
    assert!(message.contains("\"guarded\""), "{message}");
    assert!(message.contains("\"path\": \"notes.txt\""), "{message}");
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    assert_eq!(schema["required"], json!(["approve"]));
}

#[tokio::test]
async fn a_refused_call_never_runs() {
    let (server, mut events) = server();
    let answers = [
        (
            ElicitResult::new(ElicitationAction::Decline),
            "DENIED: denied by the MCP client",
        ),
        (
            ElicitResult::new(ElicitationAction::Cancel),
            "DENIED: denied by the MCP client",
        ),
        (
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"approve": false, "reason": "not that file"})),
            "DENIED: not that file",
        ),
    ];
    for (answer, expected) in answers {
        let client = connect(&server, TestClient::answering(answer)).await;
        let result = call(&client, "guarded", json!({"path": "notes.txt"})).await;
        assert_eq!(result["isError"], true);
        assert_eq!(text(&result), expected);
    }
    // Without the elicitation capability nobody can be asked.
    let client = connect(&server, TestClient::default()).await;
    let result = call(&client, "guarded", json!({"path": "notes.txt"})).await;
    assert_eq!(
        text(&result),
        "APPROVAL_REQUIRED: the tool \"guarded\" needs approval and this MCP client cannot be \
         asked (no elicitation capability); toolsmith never runs it unapproved"
    );
    assert_eq!(result["structuredContent"]["code"], "APPROVAL_REQUIRED");
    assert!(events.try_recv().is_err(), "the tool never ran");
}

#[tokio::test]
async fn the_policy_asks_for_tools_that_leave_it_to_the_policy() {
    let (events, _received) = unbounded_channel();
    let server = McpServer::builder(tools(events))
        .approval_policy(toolsmith_agent::ApprovalPolicy::Tools(vec!["echo".into()]))
        .build();
    let client = connect(&server, TestClient::default()).await;
    let echo = call(&client, "echo", json!({"text": "hi"})).await;
    assert!(
        text(&echo).starts_with("APPROVAL_REQUIRED: the tool \"echo\""),
        "{echo}"
    );
    let picture = call(&client, "picture", json!({})).await;
    assert_eq!(
        picture["content"][0]["text"], "a dot",
        "the others do not ask"
    );
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP

/// Serves `server` on a loopback port: its `/mcp` URL and the token that stops it.
/// The framing of the stream transport, byte by byte: what is not JSON is ignored, JSON that
/// is no message gets `Invalid request`, `\r\n` ends a line as `\n` does, a line may come in
/// pieces, and a line over 16 MiB is dropped with the session going on.
#[tokio::test]
async fn the_stream_transport_frames_lines_and_survives_bad_ones() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (server, _events) = server();
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(theirs);
        toolsmith_mcp::server::serve_stream(&server, read, write).await
    });
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("the server still serving");
        serde_json::from_str(&line).unwrap()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    write
        .write_all(format!("{initialize}\r\n").as_bytes())
        .await
        .unwrap();
    assert_eq!(next().await["result"]["serverInfo"]["name"], "toolsmith");
    write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    write.write_all(b"not json at all\n[1, 2]\n").await.unwrap();
    let invalid = next().await;
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    assert_eq!(invalid["error"]["message"], "Invalid request");
    // Over the longest line read: dropped, and the stream goes on after its end.
    let long = vec![b' '; 16 * 1024 * 1024 + 10];
    write.write_all(b"{\"pad\": \"").await.unwrap();
    write.write_all(&long).await.unwrap();
    write.write_all(b"\"}\n").await.unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "in pieces"}}})
    .to_string();
    let (first, second) = call.split_at(20);
    write.write_all(first.as_bytes()).await.unwrap();
    write.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    write.write_all(second.as_bytes()).await.unwrap();
    write.write_all(b"\n").await.unwrap();
    let answer = next().await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "in pieces");
}

async fn serve(server: &McpServer, config: HttpConfig) -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let server = server.clone();
    let config = config.shutdown(stop.clone());
    tokio::spawn(async move { serve_http(listener, &server, config).await });
    (url, stop)
}

async fn connect_http(url: &str, token: Option<&str>, client: TestClient) -> Client {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    client
        .serve(transport)
        .await
        .expect("the handshake over HTTP")
}

#[tokio::test]
async fn over_http_calls_progress_and_approvals_work_alike() {
    let (server, mut events) = server();
    let (url, stop) = serve(&server, HttpConfig::new()).await;
    let client = TestClient::answering(
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})),
    );
    let progress = Arc::clone(&client.progress);
    let client = connect_http(&url, None, client).await;
    assert_eq!(
        client.list_all_tools().await.unwrap().len(),
        server.tools().len()
    );
    assert_eq!(
        text(&call(&client, "echo", json!({"text": "over http"})).await),
        "over http"
    );
    let result = call(&client, "guarded", json!({"path": "a.txt"})).await;
    assert_eq!(text(&result), "written");
    assert_eq!(next_event(&mut events).await, "guarded ran on \"a.txt\"");
    assert_eq!(text(&call(&client, "slow", json!({})).await), "done");
    assert!(!progress.lock().unwrap().is_empty());
    stop.cancel();
}

/// A bare `initialize` POST with `headers`: the response's status.
async fn initialize_status(url: &str, headers: &[(&str, &str)]) -> u16 {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "curl", "version": "1"}}
        }));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn over_http_foreign_origins_and_hosts_are_refused() {
    let (server, _events) = server();
    let (url, stop) = serve(&server, HttpConfig::new()).await;
    assert_eq!(initialize_status(&url, &[]).await, 200);
    assert_eq!(
        initialize_status(&url, &[("origin", "http://localhost:6274")]).await,
        200
    );
    assert_eq!(
        initialize_status(&url, &[("origin", "https://evil.example")]).await,
        403
    );
    assert_eq!(
        initialize_status(&url, &[("host", "evil.example")]).await,
        403
    );
    stop.cancel();
}

#[tokio::test]
async fn over_http_a_bearer_token_is_required_when_configured() {
    let (server, _events) = server();
    let (url, stop) = serve(&server, HttpConfig::new().bearer_token("open-sesame")).await;
    assert_eq!(initialize_status(&url, &[]).await, 401);
    assert_eq!(
        initialize_status(&url, &[("authorization", "Bearer nope")]).await,
        401
    );
    assert_eq!(
        initialize_status(&url, &[("authorization", "Bearer open-sesame")]).await,
        200
    );
    let client = connect_http(&url, Some("open-sesame"), TestClient::default()).await;
    assert_eq!(
        text(&call(&client, "echo", json!({"text": "in"})).await),
        "in"
    );
    stop.cancel();
}
