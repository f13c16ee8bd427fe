//! Serving one session over the process's standard input and output.

use rmcp::ServiceExt;

use super::McpServer;

/// Serves one session of `server` on stdin and stdout until the client closes stdin (or the
/// returned future is dropped, which ends the session and cancels its calls). Nothing but the
/// protocol may be written to stdout meanwhile: log to stderr.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use toolsmith_core::Toolset;
/// use toolsmith_mcp::server::{McpServer, serve_stdio};
///
/// serve_stdio(&McpServer::new(Toolset::new())).await
/// # }
/// ```
///
/// # Errors
///
/// The handshake failed (the client closed stdin before it, or sent something else than
/// `initialize`), or the session's task failed.
pub async fn serve_stdio(server: &McpServer) -> std::io::Result<()> {
    let running = server
        .session()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP handshake on stdio failed: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP session on stdio failed: {e}")))?;
    Ok(())
}
