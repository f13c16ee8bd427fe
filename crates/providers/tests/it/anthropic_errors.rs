//! Errors only the Messages wire has: its error body and headers, in-stream errors, malformed
//! and truncated streams, non-streamed error bodies, its key's variable and default endpoint.
//! What every wire does (retries, refusals, the key kept out) is `http_errors.rs`.

use crate::common::*;
use serde_json::json;
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::RetryPolicy;
use toolsmith_providers::anthropic::{AnthropicMessages, TRUNCATED};

const KEY: &str = "sk-ant-test-0123456789abcdef";

fn model(server: &Server, retry: RetryPolicy) -> AnthropicMessages {
    with_retry(
        AnthropicMessages::new("claude-test", Some(KEY), Some(&server.base_url)).unwrap(),
        retry,
    )
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
