//! Serving one session over the process's standard input and output, or any byte stream.

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};

use super::McpServer;
use super::lines::Lines;

/// Serves one session of `server` on stdin and stdout (newline-delimited JSON-RPC, read and
/// written by toolsmith's own transport: see `lines.rs`) until the client closes stdin (or the
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
    match pipes() {
        Some((read, write)) => serve_stream(server, read, write).await,
        None => serve_stream(server, tokio::io::stdin(), tokio::io::stdout()).await,
    }
}

/// Serves one session of `server` on any byte stream, as on stdio: newline-delimited
/// JSON-RPC read from `read` and written to `write` until `read` ends (or the returned future
/// is dropped).
///
/// ```no_run
/// # async fn demo(socket: tokio::net::UnixStream) -> std::io::Result<()> {
/// use toolsmith_core::Toolset;
/// use toolsmith_mcp::server::{McpServer, serve_stream};
///
/// let (read, write) = socket.into_split();
/// serve_stream(&McpServer::new(Toolset::new()), read, write).await
/// # }
/// ```
///
/// # Errors
///
/// As [`serve_stdio`].
pub async fn serve_stream<R, W>(server: &McpServer, read: R, write: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let running = server
        .session()
        .serve(Lines::new(read, write))
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP handshake failed: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP session failed: {e}")))?;
    Ok(())
}

/// Standard input and output as non-blocking pipes, when both are pipes (as when an MCP
/// client starts the server): read and written on the runtime's own event loop. Tokio's
/// `stdin()` and `stdout()` hand every read and write to its blocking thread pool — two thread
/// hops per message, which measured ~30 % of a round trip. `None` for a terminal or a file.
///
/// The pipes become non-blocking for the whole process: nothing else may write to stdout (the
/// protocol's rule already).
fn pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    let dup =
        |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().ok().map(std::fs::File::from);
    let input = dup(std::io::stdin().as_fd())?;
    let output = dup(std::io::stdout().as_fd())?;
    let read = tokio::net::unix::pipe::Receiver::from_file(input).ok()?;
    let write = tokio::net::unix::pipe::Sender::from_file(output).ok()?;
    Some((read, write))
}
