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

/// One entry parsed from `{"mcpServers": {name: entry}}`.
pub fn entry(name: &str, entry: serde_json::Value) -> McpServerEntry {
    let file = serde_json::json!({"mcpServers": {name: entry}});
    McpServers::from_json(&file.to_string()).unwrap().entries()[0].clone()
}
