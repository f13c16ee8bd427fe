//! OTLP export against a real receiver (`receiver`): first checked with the official Python
//! SDK's exporter, then fed by toolsmith runs: the span tree and attributes of a run with a tool
//! call and a sub-agent, the response's id and model on a real wire's `chat` span (a loopback
//! Chat Completions server), an MCP call's trace context carried to its server, the metrics
//! (paused runs and the async calls they left running included), nothing without the
//! variables, a dead endpoint that costs the run nothing, and a secret that never leaves.

mod receiver;

use std::path::Path;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use receiver::{Receiver, int_attr, string_attr};
use serde_json::{Map, Value, json};
use toolsmith_agent::{Agent, RunInput, SubagentTool};
use toolsmith_config::{McpSelection, McpServers, ToolNames};
use toolsmith_core::{
    Approval, Message, Tool, ToolError, ToolMeta, Usage, VariableDecl, VariableKind, from_fn,
};
use toolsmith_mcp::client::McpClient;
use toolsmith_mcp::server::{HttpConfig, McpServer, serve_http};
use toolsmith_providers::openai_chat::OpenAiChat;
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};
use toolsmith_telemetry::Telemetry;
use tracing_subscriber::layer::SubscriberExt;

const SECRET: &str = "sk-canary-5f1e2d3c4b5a";

fn vars(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    }
}

/// Starts export to `endpoint` with a subscriber installed on this thread (the tests run on a
/// current-thread runtime, so every task of the run sees it); the guard and the telemetry.
fn install(endpoint: &str) -> (tracing::subscriber::DefaultGuard, Telemetry) {
    let telemetry = Telemetry::from_vars(
        vars(vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()),
            ("OTEL_SERVICE_NAME", "toolsmith-test".to_owned()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme".to_owned()),
        ]),
        &tokio::runtime::Handle::current(),
    )
    .unwrap();
    assert!(telemetry.is_enabled());
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    (tracing::subscriber::set_default(subscriber), telemetry)
}

/// Shuts the export down from a thread of its own: it blocks until the last batch is sent on
/// this runtime, which must keep running meanwhile.
async fn shutdown(telemetry: Telemetry) {
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap();
}

fn lookup() -> impl Tool {
    from_fn(
        "lookup",
        "Looks a city up.",
        |_: Map<String, Value>, _cx| async { Ok::<_, ToolError>(json!({"city": "Paris"})) },
    )
}

/// A tool that fails with its secret in every part of the error.
fn leaky() -> impl Tool {
    from_fn(
        "leaky",
        "Calls the service.",
        |_: Map<String, Value>, cx| async move {
            let key = cx.variable("API_KEY").unwrap_or("none").to_string();
            Err::<Value, _>(
                ToolError::new("SERVICE", format!("401 for key {key}"))
                    .with_operator_detail(format!("Authorization: Bearer {key}")),
            )
        },
    )
    .with_meta(ToolMeta::new().variable(VariableDecl {
        name: "API_KEY".into(),
        kind: VariableKind::Secret,
        required: true,
        scoped: false,
        description: "The service's key.".into(),
    }))
}

/// The parent calls `lookup` and the `researcher` sub-agent in one step, then answers.
fn parent_agent() -> Agent {
    let child = Agent::builder(ScriptedModel::new([
        Turn::text("Paris.").with_usage(Usage::new(30, 4))
    ]))
    .name("researcher")
    .build();
    Agent::builder(ScriptedModel::new([
        Turn::tool_calls([
            ScriptedCall::new("lookup", json!({"q": "France"})).with_id("c1"),
            ScriptedCall::new("researcher", json!({"prompt": "Capital?"})).with_id("c2"),
        ])
        .with_usage(Usage::new(100, 10)),
        Turn::text("It is Paris.").with_usage(Usage::new(120, 5)),
    ]))
    .name("planner")
    .tool(lookup())
    .tool(SubagentTool::new("researcher", "Looks things up.", child))
    .build()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(
        found.len(),
        1,
        "{name}: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}

#[tokio::test(flavor = "current_thread")]
async fn the_receiver_decodes_the_official_python_sdk_export() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/.venv/bin/python");
    if !python.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs the Python SDK (scripts/otel-peers.sh)"
        );
        eprintln!("skipped: run scripts/otel-peers.sh to install the OpenTelemetry Python SDK");
        return;
    }
    let receiver = Receiver::start().await;
    let status = tokio::process::Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/export_span.py"))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let received = receiver.spans();
    let spans: Vec<Span> = received.iter().map(|(_, s)| s.clone()).collect();
    assert!(received.iter().all(|(service, _)| service == "python-peer"));
    let chat = one(&spans, "chat gpt-4o");
    let tool = one(&spans, "execute_tool lookup");
    assert_eq!(tool.parent_span_id, chat.span_id);
    assert_eq!(tool.trace_id, chat.trace_id);
    assert_eq!(
        int_attr(&chat.attributes, "gen_ai.usage.input_tokens"),
        Some(12)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_exports_its_span_tree_and_metrics() {
    let receiver = Receiver::start().await;
    let (guard, telemetry) = install(&receiver.endpoint());
    let out = parent_agent().run("Where is the Louvre?").await.unwrap();
    assert_eq!(out.text, "It is Paris.");
    drop(guard);
    shutdown(telemetry).await;

    let received = receiver.spans();
    assert!(
        received
            .iter()
            .all(|(service, _)| service == "toolsmith-test")
    );
    assert_eq!(receiver.header("x-tenant").as_deref(), Some("acme"));
    let spans: Vec<Span> = received.into_iter().map(|(_, s)| s).collect();

    // invoke_agent planner
    // ├── chat scripted-model (×2)
    // ├── execute_tool lookup
    // └── execute_tool researcher
    //     └── invoke_agent researcher
    //         └── chat scripted-model
    let run = one(&spans, "invoke_agent planner");
    assert_eq!(run.parent_span_id, Vec::<u8>::new());
    assert_eq!(run.kind, SpanKind::Internal as i32);
    let a = &run.attributes;
    assert_eq!(
        string_attr(a, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        string_attr(a, "gen_ai.agent.name").as_deref(),
        Some("planner")
    );
    assert_eq!(
        string_attr(a, "gen_ai.provider.name").as_deref(),
        Some("scripted")
    );
    assert_eq!(string_attr(a, "toolsmith.run.id"), Some(out.run_id.clone()));
    assert_eq!(
        string_attr(a, "toolsmith.run.outcome").as_deref(),
        Some("completed")
    );

    let model = parent_agent().model().model_id().to_owned();
    let chats = named(&spans, &format!("chat {model}"));
    assert_eq!(chats.len(), 3);
    let own_chats: Vec<_> = chats
        .iter()
        .filter(|c| c.parent_span_id == run.span_id)
        .collect();
    assert_eq!(own_chats.len(), 2);
    let first = &own_chats[0].attributes;
    assert_eq!(own_chats[0].kind, SpanKind::Client as i32);
    assert_eq!(
        string_attr(first, "gen_ai.operation.name").as_deref(),
        Some("chat")
    );
    assert_eq!(
        string_attr(first, "gen_ai.request.model"),
        Some(model.clone())
    );
    assert_eq!(int_attr(first, "gen_ai.usage.input_tokens"), Some(100));
    assert_eq!(int_attr(first, "gen_ai.usage.output_tokens"), Some(10));
    assert_eq!(
        string_attr(first, "gen_ai.response.finish_reasons").as_deref(),
        Some("tool-calls")
    );

    let tool = one(&spans, "execute_tool lookup");
    assert_eq!(tool.parent_span_id, run.span_id);
    assert_eq!(
        string_attr(&tool.attributes, "gen_ai.tool.name").as_deref(),
        Some("lookup")
    );
    assert_eq!(
        string_attr(&tool.attributes, "gen_ai.tool.call.id").as_deref(),
        Some("c1")
    );
    assert_eq!(
        string_attr(&tool.attributes, "gen_ai.tool.type").as_deref(),
        Some("function")
    );
    assert_eq!(string_attr(&tool.attributes, "error.type"), None);
    // Arguments and results are not recorded.
    assert!(!String::from_utf8_lossy(&receiver.raw()).contains("France"));

    let sub_call = one(&spans, "execute_tool researcher");
    let sub_run = one(&spans, "invoke_agent researcher");
    assert_eq!(sub_call.parent_span_id, run.span_id);
    assert_eq!(sub_run.parent_span_id, sub_call.span_id);
    assert!(spans.iter().all(|s| s.trace_id == run.trace_id));
    let sub_chat = chats
        .iter()
        .find(|c| c.parent_span_id == sub_run.span_id)
        .unwrap();
    assert_eq!(
        int_attr(&sub_chat.attributes, "gen_ai.usage.input_tokens"),
        Some(30)
    );

    // The metrics, by their instruments' names.
    let metrics = receiver.metrics();
    let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
    for name in [
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "toolsmith.tool.duration",
        "toolsmith.runs",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let tokens = metrics
        .iter()
        .find(|m| m.name == "gen_ai.client.token.usage")
        .unwrap();
    let Some(Data::Histogram(tokens)) = &tokens.data else {
        panic!("{tokens:?}")
    };
    let input: u64 = tokens
        .data_points
        .iter()
        .filter(|p| string_attr(&p.attributes, "gen_ai.token.type").as_deref() == Some("input"))
        .map(|p| p.sum.unwrap() as u64)
        .sum();
    assert_eq!(input, 100 + 120 + 30);
    let runs = metrics.iter().find(|m| m.name == "toolsmith.runs").unwrap();
    let Some(Data::Sum(runs)) = &runs.data else {
        panic!("{runs:?}")
    };
    let completed: i64 = runs
        .data_points
        .iter()
        .filter(|p| {
            string_attr(&p.attributes, "toolsmith.run.outcome").as_deref() == Some("completed")
        })
        .map(|p| match p.value {
            Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(n)) => n,
            _ => 0,
        })
        .sum();
    assert_eq!(completed, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_tool_call_is_an_error_span_and_its_secret_never_leaves() {
    let receiver = Receiver::start().await;
    let (guard, telemetry) = install(&receiver.endpoint());
    let agent = Agent::builder(ScriptedModel::new([
        Turn::tool_calls([ScriptedCall::new("leaky", json!({})).with_id("c1")]),
        Turn::text("done"),
    ]))
    .tool(leaky())
    .build();
    agent
        .run(RunInput::from("call it").with_variable("API_KEY", SECRET))
        .await
        .unwrap();
    drop(guard);
    shutdown(telemetry).await;

    let spans: Vec<Span> = receiver.spans().into_iter().map(|(_, s)| s).collect();
    let tool = one(&spans, "execute_tool leaky");
    assert_eq!(
        string_attr(&tool.attributes, "error.type").as_deref(),
        Some("SERVICE")
    );
    assert_eq!(
        tool.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    let tool_errors = receiver
        .metrics()
        .into_iter()
        .find(|m| m.name == "toolsmith.tool.errors");
    assert!(tool_errors.is_some());
    let raw = receiver.raw();
    assert!(!raw.is_empty());
    // The failure's event went out, masked.
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("401 for key [secret]"), "{text}");
    assert!(!text.contains(SECRET));
}

#[tokio::test(flavor = "current_thread")]
async fn without_the_variables_nothing_is_exported() {
    let receiver = Receiver::start().await;
    // Everything but an endpoint, and an endpoint with the SDK disabled.
    for pairs in [
        vec![("OTEL_SERVICE_NAME", "x".to_owned())],
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint()),
            ("OTEL_SDK_DISABLED", "true".to_owned()),
        ],
    ] {
        let telemetry =
            Telemetry::from_vars(vars(pairs), &tokio::runtime::Handle::current()).unwrap();
        assert!(!telemetry.is_enabled());
        let layer = telemetry.layer::<tracing_subscriber::Registry>();
        assert!(layer.is_none());
        let subscriber = tracing_subscriber::registry().with(layer);
        let guard = tracing::subscriber::set_default(subscriber);
        parent_agent().run("Where?").await.unwrap();
        drop(guard);
        shutdown(telemetry).await;
    }
    assert_eq!(receiver.requests(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_dead_endpoint_neither_fails_nor_slows_the_run() {
    // A port nothing listens on any more.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let (guard, telemetry) = install(&endpoint);
    let started = Instant::now();
    for _ in 0..20 {
        parent_agent().run("Where?").await.unwrap();
    }
    drop(guard);
    shutdown(telemetry).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A server over streamable HTTP on a loopback port, serving a `clock` tool; its URL.
async fn clock_server() -> String {
    let clock = from_fn(
        "clock",
        "Tells the time.",
        |_: Map<String, Value>, _cx| async { Ok::<_, ToolError>("noon") },
    );
    let server = McpServer::new(toolsmith_core::Toolset::new().with(clock));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { serve_http(listener, &server, HttpConfig::new()).await });
    url
}

#[tokio::test(flavor = "current_thread")]
async fn an_mcp_call_carries_its_trace_context_to_the_server() {
    let receiver = Receiver::start().await;
    let (guard, telemetry) = install(&receiver.endpoint());
    let url = clock_server().await;
    let file = json!({"mcpServers": {"time": {"url": url}}});
    let entry = McpServers::from_json(&file.to_string()).unwrap().entries()[0].clone();
    let client = McpClient::connect(&entry).await.unwrap();
    let tools = client.tools(&McpSelection {
        server: "time".into(),
        only: None,
        needs_approval: ToolNames::None,
    });
    // The name the model sees: the server's tool under the server's name.
    let offered = tools
        .prepare_tools()
        .unwrap()
        .prepare(&tools, toolsmith_core::Toolset::new().with(tools.clone()));
    let name = offered.names().next().unwrap().to_owned();
    let agent = Agent::builder(ScriptedModel::new([
        Turn::tool_calls([ScriptedCall::new(&name, json!({})).with_id("m1")]),
        Turn::text("It is noon."),
    ]))
    .name("timekeeper")
    .tool(tools)
    .build();
    let out = agent.run("What time is it?").await.unwrap();
    assert_eq!(out.text, "It is noon.");
    drop(guard);
    shutdown(telemetry).await;

    let spans: Vec<Span> = receiver.spans().into_iter().map(|(_, s)| s).collect();
    let run = one(&spans, "invoke_agent timekeeper");
    let tool = one(&spans, &format!("execute_tool {name}"));
    let calls = named(&spans, "tools/call clock");
    assert_eq!(
        calls.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let client_call = calls
        .iter()
        .find(|s| s.kind == SpanKind::Client as i32)
        .unwrap();
    let server_call = calls
        .iter()
        .find(|s| s.kind == SpanKind::Server as i32)
        .unwrap();
    assert_eq!(tool.parent_span_id, run.span_id);
    assert_eq!(client_call.parent_span_id, tool.span_id);
    // The server's span is the client's child through the request's `_meta`.
    assert_eq!(server_call.parent_span_id, client_call.span_id);
    assert_eq!(server_call.trace_id, run.trace_id);
    for call in [client_call, server_call] {
        let a = &call.attributes;
        assert_eq!(
            string_attr(a, "mcp.method.name").as_deref(),
            Some("tools/call")
        );
        assert_eq!(string_attr(a, "gen_ai.tool.name").as_deref(), Some("clock"));
    }
    // The server runs the tool under its own span.
    let served = one(&spans, "execute_tool clock");
    assert_eq!(served.parent_span_id, server_call.span_id);
}

/// A Chat Completions server on a loopback port answering every request with `events` as
/// server-sent events; its base URL.
async fn chat_completions(events: Vec<Value>) -> String {
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { ([("content-type", "text/event-stream")], body) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// The value of the sum `name`'s data points whose `key` is `value`, added up.
fn sum_where(
    metrics: &[opentelemetry_proto::tonic::metrics::v1::Metric],
    name: &str,
    filter: Option<(&str, &str)>,
) -> i64 {
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
    metrics
        .iter()
        .filter(|m| m.name == name)
        .flat_map(|m| match &m.data {
            Some(Data::Sum(sum)) => sum.data_points.clone(),
            other => panic!("{name} is not a sum: {other:?}"),
        })
        .filter(|p| {
            filter.is_none_or(|(key, value)| {
                string_attr(&p.attributes, key).as_deref() == Some(value)
            })
        })
        .map(|p| match p.value {
            Some(Number::AsInt(n)) => n,
            _ => 0,
        })
        .sum()
}

#[tokio::test(flavor = "current_thread")]
async fn a_real_wires_chat_span_carries_the_responses_id_and_model() {
    let receiver = Receiver::start().await;
    let (id, answered) = ("chatcmpl-7f3a", "gpt-x-2024-08-06");
    let base = chat_completions(vec![
        json!({"id": id, "model": answered, "choices": [{"index": 0,
            "delta": {"role": "assistant", "content": "Hi."}}]}),
        json!({"id": id, "model": answered, "choices": [{"index": 0, "delta": {},
            "finish_reason": "stop"}]}),
        json!({"id": id, "model": answered, "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2}}),
    ])
    .await;
    let model = OpenAiChat::openai("gpt-x", Some("sk-test"), Some(&base)).unwrap();
    let (guard, telemetry) = install(&receiver.endpoint());
    let out = Agent::builder(model)
        .name("greeter")
        .build()
        .run("Hello?")
        .await
        .unwrap();
    assert_eq!(out.text, "Hi.");
    drop(guard);
    shutdown(telemetry).await;

    let spans: Vec<Span> = receiver.spans().into_iter().map(|(_, s)| s).collect();
    let chat = one(&spans, "chat gpt-x");
    let a = &chat.attributes;
    assert_eq!(
        string_attr(a, "gen_ai.provider.name").as_deref(),
        Some("openai")
    );
    assert_eq!(
        string_attr(a, "gen_ai.request.model").as_deref(),
        Some("gpt-x")
    );
    assert_eq!(string_attr(a, "gen_ai.response.id").as_deref(), Some(id));
    assert_eq!(
        string_attr(a, "gen_ai.response.model").as_deref(),
        Some(answered)
    );
    assert_eq!(int_attr(a, "gen_ai.usage.input_tokens"), Some(9));
    // The thread's record of the step says what the span says.
    let step = out.messages[1].meta.as_ref().expect("the step's record");
    assert_eq!(step.response_id.as_deref(), Some(id));
    assert_eq!(step.model.as_deref(), Some(answered));
    assert_eq!(step.provider.as_deref(), Some("openai"));
    let usage = step.usage.expect("the step's tokens");
    assert_eq!((usage.input.total, usage.output.total), (Some(9), Some(2)));
    // The operation's duration is measured by the model that answered.
    let metrics = receiver.metrics();
    let duration = metrics
        .iter()
        .find(|m| m.name == "gen_ai.client.operation.duration")
        .unwrap();
    let Some(Data::Histogram(duration)) = &duration.data else {
        panic!("{duration:?}")
    };
    assert!(duration.data_points.iter().any(|p| {
        string_attr(&p.attributes, "gen_ai.response.model").as_deref() == Some(answered)
    }));
}

/// A tool that starts its work in the background and returns at once, its result announced to
/// the run's inbox (as the service's async tools do); the work ends when `release` fires.
fn crawl(release: tokio::sync::watch::Receiver<bool>) -> impl Tool {
    from_fn(
        "crawl",
        "Crawls a site.",
        move |_: Map<String, Value>, cx| {
            let mut release = release.clone();
            async move {
                let ticket = cx.scope().inbox.expect();
                tokio::spawn(async move {
                    let _ = release.wait_for(|go| *go).await;
                    ticket.deliver(Message::user("crawled"));
                });
                Ok::<_, ToolError>("started")
            }
        },
    )
}

#[tokio::test(flavor = "current_thread")]
async fn a_paused_run_and_the_async_calls_it_left_running_or_dispatched_are_counted() {
    let receiver = Receiver::start().await;
    let (release, released) = tokio::sync::watch::channel(false);
    let deploy = from_fn("deploy", "Deploys.", |_: Map<String, Value>, _cx| async {
        Ok::<_, ToolError>("deployed")
    })
    .with_meta(ToolMeta::new().approval(Approval::Always));
    // As the service's external-dispatch async tools do: the work handed to a worker outside
    // the run, the call marked dispatched.
    let notify = from_fn(
        "notify",
        "Hands a job out.",
        |_: Map<String, Value>, _cx| async {
            tracing::Span::current().record("toolsmith.tool.dispatched", true);
            Ok::<_, ToolError>("dispatched")
        },
    );
    let agent = Agent::builder(ScriptedModel::new([Turn::tool_calls([
        ScriptedCall::new("crawl", json!({})).with_id("a1"),
        ScriptedCall::new("notify", json!({})).with_id("n1"),
        ScriptedCall::new("deploy", json!({})).with_id("d1"),
    ])]))
    .name("operator")
    .tool(crawl(released))
    .tool(notify)
    .tool(deploy)
    .build();
    let (guard, telemetry) = install(&receiver.endpoint());
    let out = agent.run("Crawl, then deploy.").await.unwrap();
    assert_eq!(out.pending.len(), 1, "the deploy waits for approval");
    drop(guard);
    shutdown(telemetry).await;
    release.send(true).unwrap();

    let spans: Vec<Span> = receiver.spans().into_iter().map(|(_, s)| s).collect();
    let run = one(&spans, "invoke_agent operator");
    assert_eq!(
        string_attr(&run.attributes, "toolsmith.run.outcome").as_deref(),
        Some("paused")
    );
    assert_eq!(
        int_attr(&run.attributes, "toolsmith.run.async_pending"),
        Some(1)
    );
    let metrics = receiver.metrics();
    let outcome = Some(("toolsmith.run.outcome", "paused"));
    assert_eq!(sum_where(&metrics, "toolsmith.runs", outcome), 1);
    let agent_name = Some(("gen_ai.agent.name", "operator"));
    assert_eq!(sum_where(&metrics, "toolsmith.tool.pending", agent_name), 1);
    let dispatched = Some(("gen_ai.tool.name", "notify"));
    assert_eq!(sum_where(&metrics, "toolsmith.tool.pending", dispatched), 1);
    let crawled = Some(("gen_ai.tool.name", "crawl"));
    assert_eq!(sum_where(&metrics, "toolsmith.tool.pending", crawled), 0);
}
