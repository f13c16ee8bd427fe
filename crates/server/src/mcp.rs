//! The MCP servers of an agent config, as the service connects them.
//!
//! A config stored in the service comes from an account, not the operator: the service starts
//! no program for it (a stdio server is refused, with the reason), and reaches a streamable
//! HTTP server only where its webhooks may go — public addresses unless the operator allows
//! private ones (`--allow-private-webhooks`), with no redirects and no proxy.

use toolsmith_config::{AgentConfig, McpServers, McpTransport, WebhookPolicy};
use toolsmith_mcp::client::McpClients;

/// Connects the servers `config` uses (at any depth) under `policy`.
///
/// # Errors
///
/// A stdio server, a URL naming a private address the policy forbids, two configs declaring
/// a server differently, or a server that cannot be reached.
pub(crate) async fn connect(
    config: &AgentConfig,
    policy: WebhookPolicy,
) -> Result<McpClients, String> {
    let servers = config.mcp_servers_used().map_err(|e| e.to_string())?;
    check(&servers, policy)?;
    if servers.is_empty() {
        return Ok(McpClients::default());
    }
    let http = policy
        .client_builder()
        .build()
        .map_err(|e| format!("config.mcpServers: {e}"))?;
    McpClients::connect_with(&servers, http)
        .await
        .map_err(|e| format!("config.mcpServers.{}: {}", e.server, e.message))
}

/// Refuses what the service never does for an account's config.
fn check(servers: &McpServers, policy: WebhookPolicy) -> Result<(), String> {
    for entry in servers.entries() {
        match &entry.transport {
            McpTransport::Stdio { .. } => {
                return Err(format!(
                    "config.mcpServers.{}: the service starts no program for an agent config; \
                     give the server's streamable HTTP endpoint (\"url\")",
                    entry.name
                ));
            }
            McpTransport::Http { url, .. } => {
                let parsed = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
                if !policy.allows(&parsed) {
                    return Err(format!(
                        "config.mcpServers.{}.url names a private address, which this service \
                         does not reach",
                        entry.name
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn programs_and_private_addresses_are_refused() {
        let config = |servers: serde_json::Value| {
            AgentConfig::from_value(serde_json::json!({"mcpServers": servers})).unwrap()
        };
        let stdio = config(serde_json::json!({"fs": {"command": "npx"}}));
        let err = connect(&stdio, WebhookPolicy::any()).await.unwrap_err();
        assert!(
            err.starts_with("config.mcpServers.fs: the service starts no program"),
            "{err}"
        );
        let private = config(serde_json::json!({"db": {"url": "http://10.1.2.3/mcp"}}));
        let err = connect(&private, WebhookPolicy::public_only())
            .await
            .unwrap_err();
        assert!(err.contains("names a private address"), "{err}");
        // A name resolving to loopback is refused when it is looked up.
        let named = config(serde_json::json!({"db": {"url": "http://localhost:9/mcp",
                                                     "startupTimeoutMs": 5000}}));
        let err = connect(&named, WebhookPolicy::public_only())
            .await
            .unwrap_err();
        assert!(
            err.starts_with("config.mcpServers.db: the handshake"),
            "{err}"
        );
    }
}
