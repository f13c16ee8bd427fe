//! HTTP failures, retries and configuration errors on the Chat Completions wire.

use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::json;
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::openai_chat::OpenAiChat;
use toolsmith_providers::{HttpSettings, RetryPolicy};
use toolsmith_providers::{ProviderOptions, resolve};

const KEY: &str = "sk-test-0123456789abcdef";

fn text_sse(text: &str) -> String {
    chunks_to_sse([
        json!({"id":"r","model":"m","choices":[{"index":0,"delta":{"content":text}}]})
            .to_string()
            .as_str(),
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
    ])
}

fn model(server: &Server, retry: RetryPolicy) -> OpenAiChat {
    OpenAiChat::openai("gpt-test", Some(KEY), Some(&server.base_url))
        .unwrap()
        .with_http_settings(HttpSettings {
            retry,
            ..HttpSettings::default()
        })
}

#[tokio::test]
async fn unauthorized_is_auth_with_the_providers_message_and_no_key() {
    let body = json!({"error": {
        "message": format!("Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys."),
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"
    }});
    let server = Server::start(vec![Reply::json(401, body)]).await;
    let error = model(&server, fast_retries())
        .stream(&request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Auth);
    assert_eq!(error.status, Some(401));
    assert!(
        error.message.contains("Incorrect API key provided"),
        "{}",
        error.message
    );
    assert!(!error.message.contains(KEY), "{}", error.message);
    assert!(!format!("{error:?}").contains(KEY));
    // Not retried; the key went in the header.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let server = Server::start(vec![
        Reply::json(429, json!({"error": {"message": "Rate limit reached"}}))
            .header("retry-after", "1"),
        Reply::sse(text_sse("ok")),
    ])
    .await;
    let started = Instant::now();
    let stream = model(&server, fast_retries())
        .stream(&request())
        .await
        .unwrap();
    let waited = started.elapsed();
    let summary = {
        let (parts, error) = collect(stream).await;
        check(parts, error)
    };
    assert_eq!(summary.text, "ok");
    assert_eq!(server.requests().len(), 2);
    assert!(waited >= Duration::from_millis(950), "{waited:?}");
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let server = Server::start(vec![
        Reply::json(500, json!({"error": {"message": "boom"}})),
        Reply::json(503, json!({"error": {"message": "busy"}})),
        Reply::sse(text_sse("third time")),
    ])
    .await;
    let stream = model(&server, fast_retries())
        .stream(&request())
        .await
        .unwrap();
    let (parts, error) = collect(stream).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "third time");
    assert_eq!(summary.usage.input.total, Some(3));
    assert_eq!(server.requests().len(), 3);

    // Retries are bounded: three failures with the default two retries is an error.
    let server = Server::start(vec![
        Reply::json(500, json!({"error": {"message": "boom 1"}})),
        Reply::json(500, json!({"error": {"message": "boom 2"}})),
        Reply::json(529, json!({"error": {"message": "overloaded"}})),
        Reply::sse(text_sse("never")),
    ])
    .await;
    let error = model(&server, fast_retries())
        .stream(&request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(error.message, "openai returned HTTP 529: overloaded");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn bad_requests_are_not_retried() {
    let server = Server::start(vec![Reply::json(
        400,
        json!({"error": {"message": "Invalid schema for function 'x'."}}),
    )])
    .await;
    let error = model(&server, fast_retries())
        .stream(&request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidRequest);
    assert_eq!(
        error.message,
        "openai returned HTTP 400: Invalid schema for function 'x'."
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiChat::compatible("m", url, None).with_http_settings(HttpSettings {
        retry: RetryPolicy::none(),
        ..HttpSettings::default()
    });
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Network);
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
fn missing_key_names_the_variable() {
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        return; // The environment provides a key; the message cannot be observed here.
    }
    let error = resolve("openai:gpt-4.1-mini", &ProviderOptions::default())
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Config);
    assert_eq!(
        error.to_string(),
        "OPENAI_API_KEY is not set: pass --api-key or set OPENAI_API_KEY"
    );
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

#[tokio::test]
async fn nothing_is_retried_once_the_stream_has_started() {
    let server = Server::start(vec![
        Reply::sse("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n"),
        Reply::sse(text_sse("never sent")),
    ])
    .await;
    let model = model(&server, fast_retries());
    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "par");
    assert_eq!(summary.error.unwrap().kind, ModelErrorKind::InvalidResponse);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_key_stays_out_of_debug_output() {
    let model = OpenAiChat::openai(
        "gpt-x",
        Some("sk-secret-123"),
        Some("http://127.0.0.1:9/v1"),
    )
    .unwrap();
    let debug = format!("{model:?}");
    assert!(!debug.contains("sk-secret-123"), "{debug}");
    assert!(debug.contains("gpt-x"));
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
