//! What a tool served over MCP sees of its call: its own flags and the session's call numbers,
//! as under the agent.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{ToolContext, ToolError, ToolMeta, Toolset, from_fn};
use toolsmith_mcp::server::{McpServer, serve_stream};

#[derive(Deserialize, JsonSchema)]
struct Payment {
    amount: u32,
}

#[tokio::test]
async fn a_served_tool_sees_its_flags_and_its_number() {
    let pay = from_fn("pay", "Pays.", |payment: Payment, cx: ToolContext| async move {
        Ok::<_, ToolError>(json!({
            "amount": payment.amount, "seq": cx.seq(), "sideEffect": cx.side_effect(), "idempotent": cx.idempotent(),
        }))
    })
    .with_meta(ToolMeta::new().side_effect(true));
    let mut tools = Toolset::new();
    tools.add(pay);
    let server = McpServer::new(tools);
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let (read, write) = tokio::io::split(theirs);
        let _ = serve_stream(&server, read, write).await;
    });
    let client = ().serve(ours).await.expect("the handshake");

    let mut seen = Vec::new();
    for amount in [5, 7] {
        let Value::Object(arguments) = json!({"amount": amount}) else {
            unreachable!()
        };
        let params = CallToolRequestParams::new("pay").with_arguments(arguments);
        let result = client.call_tool(params).await.unwrap();
        seen.push(result.structured_content.expect("a JSON result"));
    }
    assert_eq!(
        seen,
        [
            json!({"amount": 5, "seq": 1, "sideEffect": true, "idempotent": false}),
            json!({"amount": 7, "seq": 2, "sideEffect": true, "idempotent": false}),
        ]
    );
}
