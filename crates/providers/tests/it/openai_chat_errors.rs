//! Errors only the Chat Completions wire has: malformed and truncated streams, a compatible
//! server's base URL, servers that hang. What every wire does (retries, refusals, the key kept
//! out) is `http_errors.rs`.

use crate::common::*;
use std::time::{Duration, Instant};
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::openai_chat::OpenAiChat;
use toolsmith_providers::{HttpSettings, RetryPolicy};
use toolsmith_providers::{ProviderOptions, resolve};

const KEY: &str = "sk-test-0123456789abcdef";

fn model(server: &Server, retry: RetryPolicy) -> OpenAiChat {
    with_retry(
        OpenAiChat::openai("gpt-test", Some(KEY), Some(&server.base_url)).unwrap(),
        retry,
    )
}

#[tokio::test]
async fn malformed_and_truncated_streams_over_http() {
    let server = Server::start(vec![
        Reply::sse(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {oops\n\n",
        ),
        Reply::sse("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
            .split(3, 5, false),
    ])
    .await;
    let model = model(&server, RetryPolicy::none());
    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    let error = summary.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error.message.starts_with("Malformed chunk"),
        "{}",
        error.message
    );

    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "a");
    let error = summary.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(error.message.contains("truncated"), "{}", error.message);
}

#[test]
fn compatible_needs_a_base_url_but_no_key() {
    if std::env::var_os("OPENAI_BASE_URL").is_some() {
        return;
    }
    let error = resolve("openai-compatible:llama3", &ProviderOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        error.to_string(),
        "openai-compatible needs a base URL: pass --base-url or set OPENAI_BASE_URL"
    );
    let options = ProviderOptions {
        base_url: Some("http://127.0.0.1:8080/v1".into()),
        api_key: None,
        streaming: None,
    };
    let model = resolve("openai-compatible:llama3", &options).unwrap();
    assert_eq!(model.provider(), "openai-compatible");
}

/// A loopback server that reads each request and then answers with `reply` (possibly nothing)
/// and holds the connection open, silent: a provider that hangs.
async fn hanging_server(reply: &'static [u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0; 64 * 1024];
            let _ = socket.read(&mut buf).await;
            let _ = socket.write_all(reply).await;
            open.push(socket);
        }
    });
    url
}

fn hanging_model(url: String) -> OpenAiChat {
    OpenAiChat::openai("gpt-test", Some(KEY), Some(&url))
        .unwrap()
        .with_http_settings(HttpSettings {
            response_timeout: Duration::from_millis(200),
            retry: RetryPolicy::none(),
            ..HttpSettings::default()
        })
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_timeout_naming_the_wait() {
    let model = hanging_model(hanging_server(b"").await);
    let started = Instant::now();
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Timeout);
    assert_eq!(error.message, "openai did not answer within 200ms");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_whole_body_that_never_ends_is_a_timeout_naming_the_wait() {
    // Headers promise 100 bytes; none follow.
    let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n";
    let model = hanging_model(hanging_server(reply).await).with_streaming(false);
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Timeout);
    assert_eq!(
        error.message,
        "openai did not send its response body within 200ms"
    );
    assert!(!error.message.contains(KEY));
}
