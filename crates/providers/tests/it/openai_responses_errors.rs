//! HTTP failures, retries and configuration errors on the Responses wire.

use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::json;
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::openai_responses::{OpenAiResponses, TRUNCATED};
use toolsmith_providers::{HttpSettings, RetryPolicy};

const KEY: &str = "sk-test-0123456789abcdef";

fn text_sse(text: &str) -> String {
    let lines = [
        json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-test"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
            "content_index": 0, "delta": text}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    ]
    .map(|l| l.to_string());
    chunks_to_sse(lines.iter().map(String::as_str))
}

fn model(server: &Server, retry: RetryPolicy) -> OpenAiResponses {
    OpenAiResponses::openai("gpt-test", Some(KEY), Some(&server.base_url))
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
        error.message.starts_with(
            "openai-responses returned HTTP 401: Incorrect API key provided: [redacted]."
        ),
        "{}",
        error.message
    );
    assert!(!format!("{error:?}").contains(KEY));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "not retried");
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(requests[0].header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let server = Server::start(vec![
        Reply::json(
            429,
            json!({"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}),
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
async fn server_errors_are_retried_with_backoff_and_bounded() {
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

    let server = Server::start(vec![
        Reply::json(500, json!({"error": {"message": "boom 1"}})),
        Reply::json(500, json!({"error": {"message": "boom 2"}})),
        Reply::json(502, json!({"error": {"message": "bad gateway"}})),
        Reply::sse(text_sse("never")),
    ])
    .await;
    let error = model(&server, fast_retries())
        .stream(&request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(
        error.message,
        "openai-responses returned HTTP 502: bad gateway"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn bad_requests_are_not_retried() {
    let server = Server::start(vec![Reply::json(
        400,
        json!({"error": {"message": "Invalid schema for function 'x'.", "type": "invalid_request_error"}}),
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
        "openai-responses returned HTTP 400: Invalid schema for function 'x'."
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiResponses::compatible("m", url, Some(KEY)).with_http_settings(HttpSettings {
        retry: RetryPolicy::none(),
        ..HttpSettings::default()
    });
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Network);
    assert!(!error.message.contains(KEY));
}

#[tokio::test]
async fn malformed_truncated_and_failed_streams_over_http() {
    let created = r#"{"type":"response.created","response":{"id":"r","model":"m"}}"#;
    let delta =
        r#"{"type":"response.output_text.delta","output_index":0,"item_id":"msg","delta":"a"}"#;
    let server = Server::start(vec![
        Reply::sse(format!("data: {created}\n\ndata: {{oops\n\n")),
        Reply::sse(format!("data: {created}\n\ndata: {delta}\n\n")).split(3, 5, false),
        Reply::sse(format!(
            "data: {created}\n\ndata: {}\n\n",
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model crashed."}}}"#
        )),
    ])
    .await;
    let model = model(&server, RetryPolicy::none());

    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let error = check(parts, error).error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error.message.starts_with("Malformed Responses event ("),
        "{}",
        error.message
    );

    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "a");
    let error = summary.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert_eq!(error.message, TRUNCATED);

    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let error = check(parts, error).error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(
        error.message,
        "The provider reported an error (server_error): The model crashed."
    );
}

#[tokio::test]
async fn non_streamed_errors_and_bad_bodies() {
    let server = Server::start(vec![
        Reply::json(401, json!({"error": {"message": "No key."}})),
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{not json".to_vec(),
            split: None,
            chunked: false,
        },
    ])
    .await;
    let model = model(&server, RetryPolicy::none()).with_streaming(false);
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Auth);
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error
            .message
            .starts_with("The response body from openai-responses is not valid JSON"),
        "{}",
        error.message
    );
}

#[test]
fn missing_key_names_the_variable() {
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        return; // The environment provides a key; the message cannot be observed here.
    }
    let error = OpenAiResponses::openai("gpt-5", None, None).err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Config);
    assert_eq!(
        error.to_string(),
        "OPENAI_API_KEY is not set: pass --api-key or set OPENAI_API_KEY"
    );
    // An empty key counts as none.
    assert!(OpenAiResponses::openai("gpt-5", Some(""), None).is_err());
}

#[test]
fn base_urls_and_providers() {
    let model =
        OpenAiResponses::openai("gpt-5", Some(KEY), Some("https://gateway.example/v1/")).unwrap();
    assert_eq!(model.endpoint(), "https://gateway.example/v1/responses");
    assert_eq!(model.provider(), "openai-responses");
    assert_eq!(model.model_id(), "gpt-5");
    if std::env::var_os("OPENAI_BASE_URL").is_none() {
        let default = OpenAiResponses::openai("gpt-5", Some(KEY), None).unwrap();
        assert_eq!(default.endpoint(), "https://api.openai.com/v1/responses");
    }
    let local = OpenAiResponses::compatible("qwen", "http://localhost:1234/v1", None)
        .with_provider_name("lmstudio");
    assert_eq!(local.provider(), "lmstudio");
    assert_eq!(local.base_url(), "http://localhost:1234/v1");
    // The key never shows in Debug output.
    let debug = format!("{model:?}");
    assert!(
        debug.contains("[redacted]") && !debug.contains(KEY),
        "{debug}"
    );
}

#[tokio::test]
async fn nothing_is_retried_once_the_stream_has_started() {
    let created = r#"{"type":"response.created","response":{"id":"r","model":"m"}}"#;
    let server = Server::start(vec![
        Reply::sse(format!("data: {created}\n\n")),
        Reply::sse(text_sse("never sent")),
    ])
    .await;
    let model = model(&server, fast_retries());
    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.error.unwrap().message, TRUNCATED);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_base_url_without_any_key_resolves_to_a_keyless_local_server() {
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        return; // The environment provides a key, which would be used.
    }
    let sse = fixture_sse("openai-compatible-local", "lmstudio-tool-call.1.chunks.txt");
    let server = Server::start(vec![Reply::sse(sse)]).await;
    let options = toolsmith_providers::ProviderOptions {
        base_url: Some(server.base_url.clone()),
        api_key: None,
        streaming: None,
    };
    let model = toolsmith_providers::resolve("openai-responses:zai-org/glm-4.7-flash", &options)
        .expect("no key is needed for a server named explicitly");
    let request = toolsmith_core::ModelRequest {
        messages: vec![toolsmith_core::Message::user("Weather in San Francisco?")],
        ..Default::default()
    };
    let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
    let summary = check(parts, error);
    let calls: Vec<(&str, &str)> = summary
        .calls
        .iter()
        .map(|c| (c.tool_name.as_str(), c.input.as_str()))
        .collect();
    assert_eq!(calls, [("weather", r#"{"location":"San Francisco"}"#)]);
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].header("authorization"), None);
}
