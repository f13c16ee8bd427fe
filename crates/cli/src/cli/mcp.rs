//! MCP servers for `toolsmith run`: `--mcp-config` files and the config's `mcpServers`,
//! connected before the run.

use std::path::PathBuf;

use toolsmith_config::{AgentConfig, McpSelection, McpServers, McpTools, ToolNames};
use toolsmith_core::Toolset;
use toolsmith_mcp::client::McpClients;

use super::approve::ApproveMode;

/// Connects the servers the config uses and those of the `--mcp-config` files; returns the
/// connections and the files' servers. Unless `approve` is `auto`, their tools that are not
/// read-only ask before each call, as `bash` does.
pub(crate) async fn connect(
    files: &[PathBuf],
    config: &AgentConfig,
    approve: ApproveMode,
) -> Result<(McpClients, McpServers), String> {
    let mut servers = config.mcp_servers_used().map_err(|e| e.to_string())?;
    let mut from_files = McpServers::default();
    for path in files {
        let file = McpServers::from_file(path)
            .map_err(|e| format!("--mcp-config {}: {e}", path.display()))?;
        from_files
            .merge(&file)
            .map_err(|e| format!("--mcp-config {}: {e}", path.display()))?;
    }
    servers
        .merge(&from_files)
        .map_err(|e| format!("--mcp-config: {e}"))?;
    let clients = McpClients::connect(&servers)
        .await
        .map_err(|e| e.to_string())?;
    let clients = if approve == ApproveMode::Auto {
        clients
    } else {
        clients.ask_before_side_effects()
    };
    Ok((clients, from_files))
}

/// Says on stderr which servers are connected, with how many tools each offers.
pub(crate) fn report(clients: &McpClients) {
    for client in clients.clients() {
        eprintln!(
            "mcp: {} ({} tools)",
            client.name(),
            client.tool_names().len()
        );
    }
}

/// `tools` with every tool of each `--mcp-config` server the config's own `mcp:` entries do
/// not already pick from.
pub(crate) fn with_file_servers(
    mut tools: Toolset,
    clients: &McpClients,
    files: &McpServers,
    config: &AgentConfig,
) -> Result<Toolset, String> {
    let picked = config.mcp_selections();
    for entry in files.entries() {
        if picked.iter().any(|s| s.server == entry.name) {
            continue;
        }
        let whole = McpSelection {
            server: entry.name.clone(),
            only: None,
            needs_approval: ToolNames::None,
        };
        let tool = clients
            .tools(&whole)
            .ok_or_else(|| format!("the MCP server \"{}\" is not connected", entry.name))?;
        let name = tool.spec().name().to_string();
        if tools.add(tool).is_some() {
            return Err(format!("\"{name}\" is already the name of a tool"));
        }
    }
    Ok(tools)
}
