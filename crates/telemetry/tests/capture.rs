//! Tool calls' arguments and results on the exported spans when the conventions' switch asks
//! for them, the run's secrets masked. A test binary of its own: the switch is process-wide.

mod receiver;

use opentelemetry_proto::tonic::trace::v1::Span;
use receiver::{Receiver, string_attr};
use serde_json::{Map, Value, json};
use toolsmith_agent::{Agent, RunInput};
use toolsmith_core::{Tool, ToolError, ToolMeta, VariableDecl, VariableKind, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};
use toolsmith_telemetry::Telemetry;
use tracing_subscriber::layer::SubscriberExt;

const SECRET: &str = "sk-canary-0a9b8c7d6e5f";

/// Answers with its key: a result that holds the secret.
fn keyed() -> impl Tool {
    from_fn(
        "keyed",
        "Looks a city up with the key.",
        |args: Map<String, Value>, cx| async move {
            let key = cx.variable("API_KEY").unwrap_or("none").to_string();
            Ok::<_, ToolError>(json!({"city": "Paris", "q": args["q"], "token": key}))
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

#[tokio::test(flavor = "current_thread")]
async fn opted_in_arguments_and_results_are_recorded_with_secrets_masked() {
    let receiver = Receiver::start().await;
    let endpoint = receiver.endpoint();
    let telemetry = Telemetry::from_vars(
        |name| match name {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => Some(format!("{endpoint}/v1/traces")),
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" => Some("true".into()),
            _ => None,
        },
        &tokio::runtime::Handle::current(),
    )
    .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let guard = tracing::subscriber::set_default(subscriber);
    let agent = Agent::builder(ScriptedModel::new([
        // The model echoes the key it should not know: masked in the arguments too.
        Turn::tool_calls([
            ScriptedCall::new("keyed", json!({"q": format!("France {SECRET}")})).with_id("c1"),
        ]),
        Turn::text("Paris."),
    ]))
    .tool(keyed())
    .build();
    agent
        .run(RunInput::from("Capital?").with_variable("API_KEY", SECRET))
        .await
        .unwrap();
    drop(guard);
    tokio::task::spawn_blocking(move || telemetry.shutdown())
        .await
        .unwrap();

    let spans: Vec<Span> = receiver.spans().into_iter().map(|(_, s)| s).collect();
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool keyed")
        .unwrap();
    let arguments = string_attr(&tool.attributes, "gen_ai.tool.call.arguments").unwrap();
    let result = string_attr(&tool.attributes, "gen_ai.tool.call.result").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"q": "France [secret]"})
    );
    assert_eq!(
        serde_json::from_str::<Value>(&result).unwrap(),
        json!({"city": "Paris", "q": "France [secret]", "token": "[secret]"})
    );
    assert!(!String::from_utf8_lossy(&receiver.raw()).contains(SECRET));
}
