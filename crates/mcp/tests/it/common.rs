//! Where the peers are, and small helpers.

use std::path::PathBuf;

use toolsmith_config::{McpServerEntry, McpServers};

/// The folder holding the peers' lockfiles and installs.
pub fn peers() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers"))
}

/// A program the peers installed: `node_modules/.bin/<name>` or `.venv/bin/<name>`.
pub fn program(name: &str) -> String {
    for dir in ["node_modules/.bin", ".venv/bin"] {
        let path = peers().join(dir).join(name);
        if path.exists() {
            return path.to_string_lossy().into_owned();
        }
    }
    panic!(
        "{name} is not installed in {}: run scripts/mcp-peers.sh",
        peers().display()
    );
}

/// The `PATH` under which the pinned Node runs the npm servers.
pub fn node_path() -> String {
    format!(
        "{}:{}",
        peers().join("node_modules/.bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// One entry as the `McpServers` of a file.
pub fn servers(entry: McpServerEntry) -> McpServers {
    McpServers::default().with(entry).unwrap()
}

/// One entry parsed from `{"mcpServers": {name: entry}}`.
pub fn entry(name: &str, entry: serde_json::Value) -> McpServerEntry {
    let file = serde_json::json!({"mcpServers": {name: entry}});
    McpServers::from_json(&file.to_string()).unwrap().entries()[0].clone()
}

/// The awkward test server's entry (`tests/peers/servers/awkward.mjs`), with extra keys.
pub fn awkward(extra: serde_json::Value) -> McpServerEntry {
    let mut entry = serde_json::json!({
        "command": program("node"),
        "args": [peers().join("servers/awkward.mjs")],
        "env": {"PATH": node_path()},
    });
    for (k, v) in extra.as_object().unwrap() {
        if k == "env" {
            for (name, value) in v.as_object().unwrap() {
                entry["env"][name] = value.clone();
            }
        } else {
            entry[k] = v.clone();
        }
    }
    self::entry("awkward", entry)
}

/// The tools a connected server gives a run: its `mcp:` entry, prepared as a run prepares it.
pub fn run_tools(
    clients: &toolsmith_mcp::client::McpClients,
    selection: toolsmith_config::McpSelection,
) -> toolsmith_core::Toolset {
    use toolsmith_config::McpTools;
    let entry = clients.tools(&selection).expect("connected");
    let tools = toolsmith_core::Toolset::new().with(entry.clone());
    entry
        .prepare_tools()
        .expect("a prepare hook")
        .prepare(&entry, tools)
}

/// Every tool of `server`.
pub fn whole(server: &str) -> toolsmith_config::McpSelection {
    toolsmith_config::McpSelection {
        server: server.into(),
        only: None,
        needs_approval: toolsmith_config::ToolNames::None,
    }
}

/// Calls `name` in `tools` as the loop would after validation.
pub async fn call(
    tools: &toolsmith_core::Toolset,
    name: &str,
    input: serde_json::Value,
) -> Result<toolsmith_core::ToolOutput, toolsmith_core::ToolError> {
    let tool = tools
        .get(name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", tools.names().collect::<Vec<_>>()));
    tool.spec().validate(&input)?;
    tool.call(input, &toolsmith_core::ToolContext::for_test(name))
        .await
}
