//! HTTP failures, retries, in-stream errors and configuration errors on the Messages wire.

use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::json;
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::anthropic::{AnthropicMessages, TRUNCATED};
use toolsmith_providers::{HttpSettings, RetryPolicy};

const KEY: &str = "sk-ant-test-0123456789abcdef";

fn text_sse(text: &str) -> String {
    let delta = json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": text}})
    .to_string();
    chunks_to_sse([
        r#"{"type":"message_start","message":{"id":"msg_1","model":"claude-test","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        delta.as_str(),
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
        r#"{"type":"message_stop"}"#,
    ])
}

fn model(server: &Server, retry: RetryPolicy) -> AnthropicMessages {
    AnthropicMessages::new("claude-test", Some(KEY), Some(&server.base_url))
        .unwrap()
        .with_http_settings(HttpSettings {
            retry,
            ..HttpSettings::default()
        })
}

#[tokio::test]
async fn unauthorized_is_auth_with_the_providers_message_and_no_key() {
    let body = json!({"type": "error", "error": {
        "type": "authentication_error",
        "message": format!("invalid x-api-key: {KEY}")
    }});
    let server = Server::start(vec![Reply::json(401, body)]).await;
    let error = model(&server, fast_retries())
        .stream(&request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Auth);
    assert_eq!(error.status, Some(401));
    assert_eq!(
        error.message,
        "anthropic returned HTTP 401: invalid x-api-key: [redacted]"
    );
    assert!(!format!("{error:?}").contains(KEY));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    assert!(requests[0].header("authorization").is_none());
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let server = Server::start(vec![
        Reply::json(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}),
        )
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
    let (parts, error) = collect(stream).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "ok");
    assert_eq!(server.requests().len(), 2);
    assert!(waited >= Duration::from_millis(950), "{waited:?}");
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed_and_are_bounded() {
    let server = Server::start(vec![
        Reply::json(500, json!({"type": "error", "error": {"type": "api_error", "message": "boom"}})),
        Reply::json(
            529,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
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

    let server = Server::start(vec![
        Reply::json(500, json!({"error": {"message": "boom 1"}})),
        Reply::json(500, json!({"error": {"message": "boom 2"}})),
        Reply::json(
            529,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Reply::sse(text_sse("never")),
    ])
    .await;
    let error = model(&server, fast_retries())
        .stream(&request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(error.message, "anthropic returned HTTP 529: Overloaded");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn bad_requests_are_not_retried() {
    let server = Server::start(vec![Reply::json(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "messages: roles must alternate between \"user\" and \"assistant\""}}),
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
        "anthropic returned HTTP 400: messages: roles must alternate between \"user\" and \"assistant\""
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = AnthropicMessages::new("claude-test", Some(KEY), Some(&url))
        .unwrap()
        .with_http_settings(HttpSettings {
            retry: RetryPolicy::none(),
            ..HttpSettings::default()
        });
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Network);
    assert!(!error.message.contains(KEY));
}

#[tokio::test]
async fn in_stream_errors_malformed_and_truncated_streams_over_http() {
    let start = r#"{"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}"#;
    let text =
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
    let delta =
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}"#;
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let as_sse = |lines: &[&str]| -> String {
        lines
            .iter()
            .map(|l| format!("event: x\ndata: {l}\n\n"))
            .collect()
    };
    let server = Server::start(vec![
        Reply::sse(as_sse(&[start, text, delta, overloaded])),
        Reply::sse(as_sse(&[start, text, delta, "{oops"])),
        Reply::sse(as_sse(&[start, text, delta])).split(3, 5, false),
    ])
    .await;
    let model = model(&server, RetryPolicy::none());

    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "a");
    let error = summary.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(
        error.message,
        "Anthropic reported an error (overloaded_error): Overloaded"
    );

    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let error = check(parts, error).error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error
            .message
            .starts_with("Malformed event in the Anthropic stream"),
        "{}",
        error.message
    );

    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "a");
    let error = summary.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert_eq!(error.message, TRUNCATED);
    // Nothing is retried once the stream has started.
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_non_streamed_error_body_and_a_non_json_body() {
    let server = Server::start(vec![
        Reply::json(
            200,
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"<html>".to_vec(),
            split: None,
            chunked: false,
        },
    ])
    .await;
    let model = model(&server, RetryPolicy::none()).with_streaming(false);
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error
            .message
            .starts_with("The response body from anthropic is not valid JSON"),
        "{}",
        error.message
    );
}

#[test]
fn missing_key_names_the_variable() {
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        return; // The environment provides a key; the message cannot be observed here.
    }
    let error = AnthropicMessages::new("claude-sonnet-4-5", None, None)
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Config);
    assert_eq!(
        error.to_string(),
        "ANTHROPIC_API_KEY is not set: pass --api-key or set ANTHROPIC_API_KEY"
    );
    // An explicit key works; the base URL defaults to api.anthropic.com.
    if std::env::var_os("ANTHROPIC_BASE_URL").is_none() {
        let model = AnthropicMessages::new("claude-sonnet-4-5", Some(KEY), None).unwrap();
        assert_eq!(model.endpoint(), "https://api.anthropic.com/v1/messages");
        assert_eq!(model.provider(), "anthropic");
        assert_eq!(model.model_id(), "claude-sonnet-4-5");
        assert!(!format!("{model:?}").contains(KEY));
    }
}
