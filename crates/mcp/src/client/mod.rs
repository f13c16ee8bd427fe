//! The MCP client: any MCP server's tools as toolsmith tools.
//!
//! [`McpClient::connect`] starts or reaches one server of an `mcpServers` entry (stdio — plain
//! or sandboxed, see `process.rs` — or streamable HTTP), performs the handshake (protocol
//! 2025-11-25 asked for; a server answering an older version it knows — back to 2024-11-05 —
//! is spoken to in that version, as the specification asks) and lists its tools, every page.
//! [`McpClients`] holds the connected servers of a run or a service by name and answers the
//! `mcp:` entries of agent configs ([`McpTools`]).
//!
//! **In a run.** A server stands in an agent's toolset as one entry, `mcp:<server>`, which the
//! model never sees: as each run starts ([`PrepareTools`](toolsmith_core::PrepareTools)) it
//! gives way to the server's tools as last listed — those the config offers (`allow`, `deny`,
//! the `mcp:` entries' picks), named for every provider (`names.rs`), their input schemas as
//! the server declared them (validated before each call like every tool's; a tool whose schema
//! does not compile is left out, with a warning). A `notifications/tools/list_changed` from the
//! server lists the tools again in the background; the next run sees the new list, a run in
//! progress keeps its own.
//!
//! **Calls** (`tool.rs`): a side effect unless the config names the tool `readOnly` (the
//! server's annotations are hints from a third party, never trusted); approval as the config
//! and the agent's policy say. Every call has a time limit (the entry's `timeoutMs`, 60 s by
//! default); a call abandoned — timed out, or its run cancelled — sends
//! `notifications/cancelled`. Errors the model sees, with their codes: `MCP_TOOL_ERROR` (the
//! tool's own `isError` result), `MCP_TIMEOUT`, `MCP_SERVER_GONE` (the process ended or the
//! connection closed: how it ended and the end of its stderr), `MCP_PROTOCOL_ERROR` (the
//! server answered with a JSON-RPC error, or something that is not a result).

mod names;
mod process;
mod result;
mod tool;

use std::sync::{Arc, PoisonError, RwLock};

use rmcp::model::{ClientCapabilities, Implementation, InitializeRequestParams, ProtocolVersion};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use toolsmith_config::{McpSelection, McpServerEntry, McpServers, McpTools, McpTransport};
use toolsmith_core::{SharedTool, ToolSpec};

pub use names::{MAX_NAME, provider_name};
pub use result::{MCP_TOOL_ERROR, tool_result};
pub use tool::McpTool;

use process::ServerProcess;

/// A server that could not be started, reached or listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server \"{server}\": {message}")]
pub struct McpError {
    /// The server's name.
    pub server: String,
    /// What went wrong.
    pub message: String,
}

impl McpError {
    pub(crate) fn start(server: &str, message: impl Into<String>) -> Self {
        McpError {
            server: server.to_string(),
            message: message.into(),
        }
    }
}

/// One tool as the server last listed it.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    /// The server's own name for it.
    pub(crate) name: Arc<str>,
    /// Its spec under its provider-safe name (before a clash renames it).
    pub(crate) spec: ToolSpec,
}

/// A session with a server, shared by the client and every tool made from it: it ends — and
/// a stdio server's process with it — when the last of them is dropped.
pub(crate) struct Connection {
    pub(crate) entry: McpServerEntry,
    pub(crate) service: RunningService<RoleClient, Handler>,
    pub(crate) process: Option<ServerProcess>,
    pub(crate) tools: Arc<ToolList>,
}

/// The server's tools as last listed, replaced whole when the list changes.
#[derive(Default)]
pub(crate) struct ToolList(RwLock<Arc<[Listed]>>);

impl ToolList {
    pub(crate) fn current(&self) -> Arc<[Listed]> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn replace(&self, tools: Vec<Listed>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = tools.into();
    }
}

/// A connected MCP server.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use toolsmith_config::McpServers;
/// use toolsmith_mcp::client::McpClient;
///
/// let servers = McpServers::from_json(r#"{"mcpServers": {"time": {"command": "mcp-server-time"}}}"#)?;
/// let time = McpClient::connect(&servers.entries()[0]).await?;
/// println!("{:?}", time.tool_names());
/// # Ok(()) }
/// ```
///
/// The session lasts as long as the client or any tool made from it.
pub struct McpClient {
    connection: Arc<Connection>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.connection.entry.name)
            .finish_non_exhaustive()
    }
}

/// Receives the server's notifications.
pub(crate) struct Handler {
    info: InitializeRequestParams,
    entry: Arc<McpServerEntry>,
    tools: Arc<ToolList>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // Listing is a request: answered by the loop that delivers this notification, so it
        // cannot be awaited here.
        let (peer, entry, tools) = (
            context.peer,
            Arc::clone(&self.entry),
            Arc::clone(&self.tools),
        );
        tokio::spawn(async move {
            match tokio::time::timeout(entry.timeout, list(&peer, &entry)).await {
                Ok(Ok(listed)) => tools.replace(listed),
                Ok(Err(e)) => {
                    tracing::warn!(server = %entry.name, "listing the changed tools: {e}")
                }
                Err(_) => {
                    tracing::warn!(server = %entry.name, "listing the changed tools timed out")
                }
            }
        });
    }
}

impl McpClient {
    /// Starts or reaches the server, performs the handshake and lists its tools (all within
    /// the entry's `startupTimeoutMs`).
    ///
    /// # Errors
    ///
    /// The program cannot be started (or the sandbox cannot confine it), the URL cannot be
    /// reached, the handshake fails or times out, or listing its tools fails.
    pub async fn connect(entry: &McpServerEntry) -> Result<McpClient, McpError> {
        Self::connect_with(entry, reqwest::Client::new()).await
    }

    /// [`connect`](Self::connect) with the HTTP client a streamable HTTP server is reached
    /// through (the service passes one that reaches public addresses only).
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn connect_with(
        entry: &McpServerEntry,
        http: reqwest::Client,
    ) -> Result<McpClient, McpError> {
        let fail = |message: String| McpError::start(&entry.name, message);
        let tools = Arc::new(ToolList::default());
        let handler = Handler {
            info: InitializeRequestParams::new(
                ClientCapabilities::default(),
                Implementation::new("toolsmith", env!("CARGO_PKG_VERSION")),
            )
            .with_protocol_version(ProtocolVersion::V_2025_11_25),
            entry: Arc::new(entry.clone()),
            tools: Arc::clone(&tools),
        };
        let deadline = tokio::time::Instant::now() + entry.startup_timeout;
        let within = |what: &'static str| {
            move |_| {
                fail(format!(
                    "{what} took longer than {} ms (startupTimeoutMs)",
                    entry.startup_timeout.as_millis()
                ))
            }
        };
        let (service, process) = match &entry.transport {
            McpTransport::Stdio { .. } => {
                let started = process::start(entry)?;
                let served =
                    tokio::time::timeout_at(deadline, handler.serve((started.read, started.write)))
                        .await
                        .map_err(within("the handshake"))?;
                match served {
                    Ok(service) => (service, Some(started.process)),
                    Err(e) => {
                        return Err(fail(match started.process.ended().await {
                            Some(ended) => format!("before the handshake, the server {ended}"),
                            None => format!("the handshake failed: {}", handshake_error(&e)),
                        }));
                    }
                }
            }
            McpTransport::Http { url, headers } => {
                let transport = http_transport(url, headers, http).map_err(fail)?;
                let service = tokio::time::timeout_at(deadline, handler.serve(transport))
                    .await
                    .map_err(within("the handshake"))?
                    .map_err(|e| {
                        fail(format!(
                            "the handshake with {url} failed: {}",
                            handshake_error(&e)
                        ))
                    })?;
                (service, None)
            }
        };
        let listed = tokio::time::timeout_at(deadline, list(service.peer(), entry))
            .await
            .map_err(within("tools/list"))?
            .map_err(fail)?;
        tools.replace(listed);
        Ok(McpClient {
            connection: Arc::new(Connection {
                entry: entry.clone(),
                service,
                process,
                tools,
            }),
        })
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.connection.entry.name
    }

    /// The names (the server's own) of the tools it last listed, those the config offers.
    pub fn tool_names(&self) -> Vec<String> {
        self.connection
            .tools
            .current()
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// The tool standing for the server's tools in each run's toolset (see the
    /// [module docs](self)), picking what `selection` picks.
    pub fn tools(&self, selection: &McpSelection) -> SharedTool {
        Arc::new(tool::ServerTools::new(
            Arc::clone(&self.connection),
            selection.clone(),
            false,
        ))
    }
}

/// A handshake error as a person reads it: rmcp's texts name its transport's Rust types.
fn handshake_error(error: &rmcp::service::ClientInitializeError) -> String {
    use std::error::Error;
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text = format!("{text}: {inner}");
        cause = inner.source();
    }
    // "Transport [rmcp::transport::…] error: Broken pipe" → "Broken pipe".
    match text.rfind("] error: ") {
        Some(at) => text[at + "] error: ".len()..].to_string(),
        None => text,
    }
}

/// The streamable HTTP transport to `url`, with the entry's headers.
fn http_transport(
    url: &str,
    headers: &[(String, String)],
    http: reqwest::Client,
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("headers.{name} is not a valid header"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("headers.{name} is not a valid header"))?;
        custom.insert(name, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        http, config,
    ))
}

/// Lists every page of the server's tools and keeps those the entry offers whose schemas
/// compile, named for every provider.
async fn list(peer: &Peer<RoleClient>, entry: &McpServerEntry) -> Result<Vec<Listed>, String> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let mut listed = Vec::with_capacity(tools.len());
    for tool in tools {
        let Ok(mut wire) = serde_json::to_value(&tool) else {
            continue;
        };
        let name: Arc<str> = match wire.get("name").and_then(Value::as_str) {
            Some(name) => name.into(),
            None => continue,
        };
        if !entry.offers(&name) {
            continue;
        }
        let schema = match wire.get_mut("inputSchema").map(Value::take) {
            Some(schema @ Value::Object(_)) => schema,
            _ => serde_json::json!({"type": "object"}),
        };
        let mut spec = ToolSpec::new(provider_name(&entry.prefix, &name), schema);
        let description = ["description", "title"]
            .iter()
            .find_map(|k| wire.get(*k).and_then(Value::as_str));
        if let Some(description) = description {
            spec = spec.with_description(description.to_string());
        }
        if let Some(output @ Value::Object(_)) = wire.get_mut("outputSchema").map(Value::take) {
            spec = spec.with_output_schema(output);
        }
        // Compiles the schema once, now: a tool no call could ever pass is left out.
        if let Err(e) = spec.validate(&Value::Object(Default::default()))
            && e.code() == "INVALID_SCHEMA"
        {
            tracing::warn!(server = %entry.name, tool = %name, "left out: {}", e.message());
            continue;
        }
        listed.push(Listed { name, spec });
    }
    Ok(listed)
}

/// Connected MCP servers by name: what `mcp:` entries resolve against.
#[derive(Debug, Default)]
pub struct McpClients {
    clients: Vec<McpClient>,
    /// Whether every tool that is not read-only asks before each call.
    ask: bool,
}

impl McpClients {
    /// Connects every server of `servers`, at once.
    ///
    /// # Errors
    ///
    /// The first server that fails to connect (the others are dropped, and their processes
    /// with them).
    pub async fn connect(servers: &McpServers) -> Result<McpClients, McpError> {
        Self::connect_with(servers, reqwest::Client::new()).await
    }

    /// [`connect`](Self::connect) with the HTTP client of [`McpClient::connect_with`].
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn connect_with(
        servers: &McpServers,
        http: reqwest::Client,
    ) -> Result<McpClients, McpError> {
        let connecting = servers
            .entries()
            .iter()
            .map(|entry| McpClient::connect_with(entry, http.clone()));
        let clients = futures::future::try_join_all(connecting).await?;
        Ok(McpClients {
            clients,
            ask: false,
        })
    }

    /// The same servers, their tools asking before every call unless the config names them
    /// `readOnly` (`toolsmith run` asks so, as it does for `bash`, unless `--approve auto`).
    pub fn ask_before_side_effects(mut self) -> Self {
        self.ask = true;
        self
    }

    /// The connected servers.
    pub fn clients(&self) -> &[McpClient] {
        &self.clients
    }

    /// The server named `name`.
    pub fn get(&self, name: &str) -> Option<&McpClient> {
        self.clients.iter().find(|c| c.name() == name)
    }

    /// Whether no server is connected.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }
}

impl McpTools for McpClients {
    fn tools(&self, selection: &McpSelection) -> Option<SharedTool> {
        let client = self.get(&selection.server)?;
        Some(Arc::new(tool::ServerTools::new(
            Arc::clone(&client.connection),
            selection.clone(),
            self.ask,
        )))
    }
}
