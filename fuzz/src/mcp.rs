//! MCP messages: one line's decoding (our `tools/call` reader against rmcp's), and whole
//! sessions of the server over a byte stream.

use std::sync::OnceLock;

use rmcp::model::ClientJsonRpcMessage;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use toolsmith_core::Toolset;
use toolsmith_mcp::server::{McpServer, decode_line, serve_stream};

/// One line of the stdio transport: read by the transport's decoder (its fast `tools/call`
/// reader, else rmcp's) and by rmcp's alone, it must mean the same (as rmcp writes it back),
/// or both must refuse it with an error of the same category (which decides whether the
/// server answers `Invalid request` or ignores the line).
pub fn mcp_message(data: &[u8]) {
    let ours = decode_line(data);
    let theirs = serde_json::from_slice::<ClientJsonRpcMessage>(data);
    match (ours, theirs) {
        (Ok(ours), Ok(theirs)) => {
            let meaning = |m: &ClientJsonRpcMessage| serde_json::to_value(m).expect("serialises");
            assert_eq!(meaning(&ours), meaning(&theirs));
        }
        (Err(ours), Err(theirs)) => assert_eq!(ours.classify(), theirs.classify()),
        (ours, theirs) => panic!("ours {ours:?}, rmcp's {theirs:?}"),
    }
}

/// The server of one tool (the calculator), made once.
fn server() -> &'static McpServer {
    static SERVER: OnceLock<McpServer> = OnceLock::new();
    SERVER.get_or_init(|| McpServer::new(Toolset::new().with(toolsmith_builtins::calculator())))
}

/// The handshake a session's input starts with, so that the fuzzer's lines reach the
/// session's handling of requests rather than only the handshake's.
const HANDSHAKE: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\
\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"fuzz\",\
\"version\":\"1\"}}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// A session of the server ([`serve_stream`], as on stdio) reading the handshake then the
/// fuzzer's bytes, to their end: the session must end, and everything it wrote must be JSON-RPC
/// messages, one a line.
pub fn mcp_session(data: &[u8]) {
    let mut input = HANDSHAKE.to_vec();
    input.extend_from_slice(data);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let output = runtime.block_on(async {
        let (write, mut read) = tokio::io::duplex(1 << 16);
        let session = serve_stream(server(), std::io::Cursor::new(input), write);
        let mut output = Vec::new();
        let (_, read) = tokio::join!(session, read.read_to_end(&mut output));
        read.expect("the session's output");
        output
    });
    let text = std::str::from_utf8(&output).expect("the output is UTF-8");
    for line in text.lines() {
        let message: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}
