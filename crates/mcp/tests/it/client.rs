use serde_json::json;
use toolsmith_mcp::client::McpClient;

use crate::common::*;

#[tokio::test]
async fn lists_the_reference_server() {
    let everything = entry(
        "everything",
        json!({"command": program("mcp-server-everything"), "env": {"PATH": node_path()}}),
    );
    let client = McpClient::connect(&everything).await.unwrap();
    println!("{:?}", client.tool_names());
}
