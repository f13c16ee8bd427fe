//! One mock Chat Completions model on loopback, the same bytes for every client.
//!
//! `mock [PORT]` listens on 127.0.0.1 (port 0, the default, picks a free one) and prints
//! `http://127.0.0.1:PORT/v1` once it listens. Every `POST …/chat/completions` is answered with
//! a server-sent-event stream (`Content-Length` framed, written at once, the connection kept
//! alive): a request whose messages hold no tool result gets a call of `noop_0` with `{"x": 1}`
//! (finish reason `tool_calls`), the call whole in one chunk as Ollama and llama.cpp's server
//! send it (siumai 0.10.3 reads only the tool-call deltas that carry the call's id, so arguments
//! split over later chunks, OpenAI's way, would be lost to it); one that holds a tool result gets the answer
//! `The tool said ok.` in three deltas (finish reason `stop`). Both streams end with a usage
//! chunk and `[DONE]`, as OpenAI's do. The chunks' shape is OpenAI's own (ids, `object`,
//! `created`, `system_fingerprint`, `logprobs`); the bytes were written for this bench.
//!
//! Plain threads and blocking sockets, one thread per connection: the mock's CPU is not
//! measured (it is another process), and it must not need anything the clients use.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

const HEAD: &str = r#"{"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1767225600,"model":"mock-1","system_fingerprint":"fp_mock","#;

fn chunk(rest: &str) -> String {
    format!("data: {HEAD}{rest}}}\n\n")
}

fn stream(chunks: &[String]) -> Vec<u8> {
    let mut body = chunks.concat();
    body.push_str("data: [DONE]\n\n");
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
         cache-control: no-cache\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body.as_bytes());
    response
}

fn tool_call() -> Vec<u8> {
    stream(&[
        chunk(
            r#""choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_mock_1","type":"function","function":{"name":"noop_0","arguments":"{\"x\": 1}"}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null"#,
        ),
        chunk(
            r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null"#,
        ),
        chunk(
            r#""choices":[],"usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}"#,
        ),
    ])
}

fn answer() -> Vec<u8> {
    stream(&[
        chunk(
            r#""choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null"#,
        ),
        chunk(
            r#""choices":[{"index":0,"delta":{"content":"The tool"},"logprobs":null,"finish_reason":null}],"usage":null"#,
        ),
        chunk(
            r#""choices":[{"index":0,"delta":{"content":" said"},"logprobs":null,"finish_reason":null}],"usage":null"#,
        ),
        chunk(
            r#""choices":[{"index":0,"delta":{"content":" ok."},"logprobs":null,"finish_reason":null}],"usage":null"#,
        ),
        chunk(
            r#""choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null"#,
        ),
        chunk(
            r#""choices":[],"usage":{"prompt_tokens":140,"completion_tokens":6,"total_tokens":146,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}"#,
        ),
    ])
}

fn not_found() -> Vec<u8> {
    let body = r#"{"error":{"message":"not found","type":"invalid_request_error"}}"#;
    format!(
        "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves one connection's requests until the client closes it.
fn serve(
    stream: TcpStream,
    tool_call: &[u8],
    answer: &[u8],
    log: bool,
    delay: Option<std::time::Duration>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let path_ok = line.starts_with("POST ") && line.contains("/chat/completions");
        let mut length = 0;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
        if log {
            eprintln!("{}", String::from_utf8_lossy(&body));
        }
        let response = if !path_ok {
            &not_found()[..]
        } else if contains(&body, b"\"tool_call_id\"") {
            answer
        } else {
            tool_call
        };
        if let Some(delay) = delay {
            std::thread::sleep(delay);
        }
        writer.write_all(response)?;
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .map_or(0, |p| p.parse().expect("a port"));
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    println!("http://{}/v1", listener.local_addr()?);
    std::io::stdout().flush()?;
    let (tool_call, answer): (&'static [u8], &'static [u8]) = (
        Box::leak(tool_call().into_boxed_slice()),
        Box::leak(answer().into_boxed_slice()),
    );
    // `MOCK_LOG=1`: every request body on standard error, to check what a client sends.
    let log = std::env::var_os("MOCK_LOG").is_some();
    // `MOCK_DELAY_US=N`: every answer N µs late, to see what a client does while it waits.
    let delay = std::env::var("MOCK_DELAY_US")
        .ok()
        .and_then(|us| us.parse().ok())
        .map(std::time::Duration::from_micros);
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            let _ = serve(stream, tool_call, answer, log, delay);
        });
    }
    Ok(())
}
