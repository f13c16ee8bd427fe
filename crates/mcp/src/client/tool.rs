//! [`McpTool`], one tool of a server, and `ServerTools`, the entry that stands for a server's
//! tools in a toolset until each run starts (see the [client's docs](super)).

use std::sync::Arc;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, RequestMetaObject};
use serde_json::Value;
use toolsmith_config::McpSelection;
use toolsmith_core::{
    Approval, PrepareTools, RunScope, SharedTool, Tool, ToolContext, ToolError, ToolMeta,
    ToolOutput, ToolSpec, Toolset,
};
use tracing::{Instrument, Span};

use super::names::unique;
use super::result::tool_result;
use super::{Connection, Listed};

/// The code of a call the server did not answer in time.
pub const MCP_TIMEOUT: &str = "MCP_TIMEOUT";
/// The code of a call to a server whose process ended or whose connection closed.
pub const MCP_SERVER_GONE: &str = "MCP_SERVER_GONE";
/// The code of a JSON-RPC error, or an answer that is not a result.
pub const MCP_PROTOCOL_ERROR: &str = "MCP_PROTOCOL_ERROR";

/// One tool of a connected MCP server.
pub struct McpTool {
    spec: ToolSpec,
    meta: ToolMeta,
    /// The server's own name for the tool.
    name: Arc<str>,
    connection: Arc<Connection>,
}

impl McpTool {
    /// The server's own name for the tool.
    pub fn mcp_name(&self) -> &str {
        &self.name
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.connection.entry.name
    }

    fn error(&self, code: &'static str, message: String) -> ToolError {
        ToolError::new(code, message)
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    async fn call(&self, input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let span = crate::trace::call_span("client", &self.name);
        let result = self
            .call_server(input, &span)
            .instrument(span.clone())
            .await;
        if let Err(e) = &result {
            crate::trace::record_error(&span, e.code());
        }
        result
    }
}

impl McpTool {
    /// The `tools/call` request, with the span's trace context in its `_meta`.
    async fn call_server(&self, input: Value, span: &Span) -> Result<ToolOutput, ToolError> {
        let connection = &self.connection;
        let server = &connection.entry.name;
        let mut params = CallToolRequestParams::new(self.name.to_string());
        if let Value::Object(arguments) = input {
            params = params.with_arguments(arguments);
        }
        let mut meta = RequestMetaObject::new();
        crate::trace::inject(span, &mut meta);
        if meta.get_traceparent().is_some() {
            params.meta = Some(meta);
        }
        // Dropping the request (the time limit below, or the run's own cancellation) sends
        // `notifications/cancelled`.
        let timeout = connection.entry.timeout;
        let answer =
            tokio::time::timeout(timeout, connection.service.peer().call_tool(params)).await;
        let result = match answer {
            Err(_) => {
                return Err(self.error(
                    MCP_TIMEOUT,
                    format!(
                        "the MCP server \"{server}\" did not answer within {} ms; the call was cancelled",
                        timeout.as_millis()
                    ),
                ));
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                let why = match &connection.process {
                    Some(process) => process.ended().await,
                    None => None,
                };
                let message = match why {
                    Some(ended) => format!("the MCP server \"{server}\" is gone: it {ended}"),
                    None => format!("the connection to the MCP server \"{server}\" is closed"),
                };
                return Err(self.error(MCP_SERVER_GONE, message));
            }
            Ok(Err(ServiceError::McpError(e))) => {
                return Err(self.error(
                    MCP_PROTOCOL_ERROR,
                    format!(
                        "the MCP server \"{server}\" refused the call: {} (JSON-RPC error {})",
                        e.message, e.code.0
                    ),
                ));
            }
            Ok(Err(e)) => {
                return Err(self.error(
                    MCP_PROTOCOL_ERROR,
                    format!("the MCP server \"{server}\": {e}"),
                ));
            }
            Ok(Ok(result)) => result,
        };
        let wire = serde_json::to_value(&result).map_err(|e| {
            self.error(
                MCP_PROTOCOL_ERROR,
                format!("the MCP server \"{server}\" sent a result that cannot be read: {e}"),
            )
        })?;
        tool_result(wire)
    }
}

/// Stands for a server's tools in a toolset: never offered to a model; as each run starts it
/// gives way to the tools the selection picks, as the server last listed them.
pub(crate) struct ServerTools {
    spec: ToolSpec,
    connection: Arc<Connection>,
    selection: McpSelection,
    /// Whether every tool that is not read-only asks before each call.
    ask: bool,
}

impl ServerTools {
    pub(crate) fn new(connection: Arc<Connection>, selection: McpSelection, ask: bool) -> Self {
        let spec = ToolSpec::new(
            format!("mcp:{}", connection.entry.name),
            serde_json::json!({"type": "object"}),
        )
        .with_description(format!(
            "The tools of the MCP server \"{}\".",
            connection.entry.name
        ));
        ServerTools {
            spec,
            connection,
            selection,
            ask,
        }
    }

    fn picks(&self, tool: &Listed) -> bool {
        self.selection
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| **n == *tool.name))
    }

    fn tool(&self, listed: &Listed, name: String) -> McpTool {
        let entry = &self.connection.entry;
        let read_only = entry.read_only.contains(&listed.name);
        let asks = entry.needs_approval.contains(&listed.name)
            || self.selection.needs_approval.contains(&listed.name)
            || (self.ask && !read_only);
        let mut meta = ToolMeta::new().side_effect(!read_only);
        if asks {
            meta = meta.approval(Approval::Always);
        }
        let spec = if name == listed.spec.name() {
            listed.spec.clone()
        } else {
            listed.spec.renamed(name)
        };
        McpTool {
            spec,
            meta,
            name: Arc::clone(&listed.name),
            connection: Arc::clone(&self.connection),
        }
    }
}

#[async_trait::async_trait]
impl Tool for ServerTools {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(
            "MCP_NOT_A_TOOL",
            format!(
                "\"{}\" stands for an MCP server's tools and cannot be called itself",
                self.spec.name()
            ),
        ))
    }

    fn offered(&self, _scope: &RunScope) -> bool {
        false
    }

    fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
        Some(self)
    }
}

impl PrepareTools for ServerTools {
    fn prepare(&self, entry: &SharedTool, mut tools: Toolset) -> Toolset {
        tools.remove(entry.spec().name());
        for listed in self.connection.tools.current().iter() {
            if !self.picks(listed) {
                continue;
            }
            let name = unique(listed.spec.name().to_string(), &listed.name, |n| {
                tools.contains(n)
            });
            tools.add(self.tool(listed, name));
        }
        tools
    }
}
