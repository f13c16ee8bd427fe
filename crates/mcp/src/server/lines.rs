//! The server's transport over a byte stream: newline-delimited JSON-RPC, as MCP's stdio
//! transport frames it, with a fast reader for `tools/call` and a writer that gathers answers.
//!
//! rmcp's own transport decodes every message through its untagged enums, where serde buffers
//! the message and tries each variant in turn: ~37 000 instructions of the ~66 000 a
//! `tools/call` round trip cost the server (callgrind, 2 000 calls). Here a line that is
//! exactly a `tools/call` request — `jsonrpc`, `id`, `method` and `params` with `name`,
//! `arguments` and `_meta`, no other key — is read straight into rmcp's types (~3 000); any
//! other line goes to rmcp's decoder, so what a message means never depends on the path it
//! took (a test holds the two decoders equal on every shape of call).
//!
//! Contracts, as rmcp's transport keeps them:
//! - a line longer than [`MAX_LINE`] is dropped, logged, and the session goes on;
//! - a line that is not JSON is ignored (answering it could start an error storm with a peer
//!   that echoes what it cannot read); JSON that is no JSON-RPC message gets an
//!   `Invalid request` error with no id;
//! - `receive` may be dropped at any `await` (rmcp polls it inside a `select!`): a partly read
//!   line stays in the buffer for the next call.
//!
//! Answers are written by a task of their own, every answer waiting at the time in one write:
//! under load one system call carries many (16 calls in flight: ~5 answers a write).

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, ErrorData, JsonObject,
    JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, Request, RequestId, RequestMetaObject,
    ServerJsonRpcMessage,
};
use rmcp::service::RoleServer;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The longest line read, as rmcp's transport allows (16 MiB): a peer that never ends a line
/// cannot make the buffer grow without bound.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// How much is read at a time.
const READ_SIZE: usize = 64 * 1024;

/// Newline-delimited JSON-RPC over `R` (read) and `W` (written by a task of its own).
pub struct Lines<R> {
    read: R,
    /// Bytes read and not yet taken as lines, from `start`.
    buf: Vec<u8>,
    start: usize,
    /// Where the search for the next newline resumes (nothing before it is one).
    scanned: usize,
    /// Set while the rest of an oversized line is being skipped.
    discarding: bool,
    /// An `Invalid request` answer owed for a line that was JSON but no message.
    invalid: bool,
    answers: Option<mpsc::UnboundedSender<Vec<u8>>>,
    writer: Option<tokio::task::JoinHandle<()>>,
}

impl<R: AsyncRead + Unpin + Send> Lines<R> {
    /// Reads messages from `read` and writes answers to `write` (on a task spawned here: call
    /// from inside a Tokio runtime).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W) -> Self {
        let (answers, queue) = mpsc::unbounded_channel();
        Lines {
            read,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            discarding: false,
            invalid: false,
            answers: Some(answers),
            writer: Some(tokio::spawn(write_answers(queue, write))),
        }
    }

    /// The next whole line, without its `\n` (and `\r`), or `None` at the end of the input.
    async fn line(&mut self) -> Option<std::ops::Range<usize>> {
        loop {
            if let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + at;
                let line = self.start..end;
                self.start = end + 1;
                self.scanned = self.start;
                if std::mem::take(&mut self.discarding) {
                    continue;
                }
                if line.len() > MAX_LINE {
                    too_long();
                    continue;
                }
                let line = match self.buf[line.clone()].last() {
                    Some(b'\r') => line.start..line.end - 1,
                    _ => line,
                };
                return Some(line);
            }
            self.scanned = self.buf.len();
            if self.buf.len() - self.start > MAX_LINE {
                too_long();
                self.discarding = true;
                self.buf.clear();
                (self.start, self.scanned) = (0, 0);
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.scanned -= self.start;
                self.start = 0;
            }
            self.buf.reserve(READ_SIZE);
            // Cancel-safe: a read that is dropped has read nothing.
            match self.read.read_buf(&mut self.buf).await {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    tracing::error!("reading the MCP client's messages failed: {e}");
                    return None;
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin + Send> rmcp::transport::Transport<RoleServer> for Lines<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answers = self.answers.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            answers.ok_or_else(closed)?.send(line).map_err(|_| closed())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if std::mem::take(&mut self.invalid) {
                let error = ServerJsonRpcMessage::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                // The writer is gone only when the output is: nothing more to answer.
                rmcp::transport::Transport::send(self, error).await.ok()?;
            }
            let line = self.line().await?;
            let line = &self.buf[line];
            if line.is_empty() {
                continue;
            }
            match decode(line) {
                Ok(message) => return Some(message),
                Err(e) => match e.classify() {
                    serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                        tracing::debug!("ignoring a line that is not JSON: {e}");
                    }
                    serde_json::error::Category::Data | serde_json::error::Category::Io => {
                        tracing::debug!("a line that is no JSON-RPC message: {e}");
                        self.invalid = true;
                    }
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer ends once every sender is gone: the answers already sent are written.
        self.answers = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.await;
        }
        Ok(())
    }
}

fn too_long() {
    tracing::error!(
        max_line_length = MAX_LINE,
        "an incoming MCP message is longer than the longest line read: dropped"
    );
}

fn closed() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the MCP client's input is closed",
    )
}

/// Writes the answers as they come, all that wait in one write; ends when every sender is
/// dropped or the output fails.
async fn write_answers<W: AsyncWrite + Unpin>(
    mut queue: mpsc::UnboundedReceiver<Vec<u8>>,
    mut write: W,
) {
    let mut batch = Vec::new();
    let mut out = Vec::new();
    while queue.recv_many(&mut batch, 64).await > 0 {
        let bytes = if batch.len() == 1 {
            &batch[0]
        } else {
            out.clear();
            batch.iter().for_each(|line| out.extend_from_slice(line));
            &out
        };
        if let Err(e) = async {
            write.write_all(bytes).await?;
            write.flush().await
        }
        .await
        {
            tracing::error!("writing to the MCP client failed: {e}");
            return;
        }
        batch.clear();
    }
}

/// A message from one line: a `tools/call` read directly, anything else by rmcp.
pub fn decode(line: &[u8]) -> Result<ClientJsonRpcMessage, serde_json::Error> {
    match serde_json::from_slice::<Call<'_>>(line) {
        Ok(call) if call.method == "tools/call" => Ok(call.into_message()),
        _ => serde_json::from_slice(line),
    }
}

/// A `tools/call` request with nothing but what the fast reader knows.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call<'a> {
    #[allow(dead_code)] // read to check it says "2.0"
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: CallParams,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default, rename = "_meta")]
    meta: Option<JsonObject>,
}

impl Call<'_> {
    fn into_message(self) -> ClientJsonRpcMessage {
        let mut params = CallToolRequestParams::new(self.params.name);
        if let Some(arguments) = self.params.arguments {
            params = params.with_arguments(arguments);
        }
        let mut request = Request::new(params);
        // Where rmcp's decoder puts `_meta`: in the request's extensions.
        if let Some(meta) = self.params.meta {
            request.extensions.insert(RequestMetaObject::from(meta));
        }
        JsonRpcMessage::Request(JsonRpcRequest::new(
            self.id,
            ClientRequest::CallToolRequest(request),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a message means, as rmcp would write it back.
    fn meaning(message: &ClientJsonRpcMessage) -> serde_json::Value {
        serde_json::to_value(message).unwrap()
    }

    #[test]
    fn the_fast_reader_agrees_with_rmcps_on_every_shape_of_call() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":null}}"#,
            r#"{"params":{"arguments":{"n":[1,2.5,{"x":null}]},"name":"e\u0063ho"},"method":"tools/call","id":3.0,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":"p"},"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools\/call","params":{"name":"echo"}}"#,
        ];
        for line in lines {
            let fast = decode(line.as_bytes()).unwrap();
            let theirs: ClientJsonRpcMessage = serde_json::from_str(line).unwrap();
            assert_eq!(meaning(&fast), meaning(&theirs), "{line}");
            assert!(
                serde_json::from_str::<Call<'_>>(line).is_ok(),
                "fast: {line}"
            );
        }
    }

    #[test]
    fn anything_else_is_read_by_rmcp_and_errors_are_its_errors() {
        for line in [
            // Keys the fast reader does not know: rmcp's reader decides.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ] {
            let ours = decode(line.as_bytes()).map(|m| meaning(&m)).ok();
            let theirs = serde_json::from_str::<ClientJsonRpcMessage>(line)
                .map(|m| meaning(&m))
                .ok();
            assert_eq!(ours, theirs, "{line}");
        }
        for (line, category) in [
            ("not json", serde_json::error::Category::Syntax),
            (
                r#"{"jsonrpc":"2.0","id":1"#,
                serde_json::error::Category::Eof,
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"e"}}"#,
                serde_json::error::Category::Data,
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"e"}}"#,
                serde_json::error::Category::Data,
            ),
            (r#"[1,2]"#, serde_json::error::Category::Data),
        ] {
            assert_eq!(
                decode(line.as_bytes()).unwrap_err().classify(),
                category,
                "{line}"
            );
        }
    }
}
