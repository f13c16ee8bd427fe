//! Errors only the Gemini wire has: Google's `RetryInfo`, a bad key's 400, in-stream errors,
//! non-streamed errors, its two key variables. What every wire does (retries, refusals, the key
//! kept out) is `http_errors.rs`.

use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::RetryPolicy;
use toolsmith_providers::google::GoogleGemini;

const KEY: &str = "AIzaSyTest-0123456789abcdef";

fn text_sse(text: &str) -> String {
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
        "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}});
    format!("data: {chunk}\r\n\r\n")
}

fn model(server: &Server, retry: RetryPolicy) -> GoogleGemini {
    with_retry(
        GoogleGemini::new("gemini-test", Some(KEY), Some(&server.base_url)).unwrap(),
        retry,
    )
}

fn google_error(code: u16, status: &str, message: &str) -> Value {
    json!({"error": {"code": code, "message": message, "status": status}})
}

fn with_retry_info(mut body: Value, delay: &str) -> Value {
    body["error"]["details"] = json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    ]);
    body
}

#[tokio::test]
async fn unauthorized_and_bad_keys_are_auth_errors_without_the_key() {
    let server = Server::start(vec![
        Reply::json(
            401,
            google_error(401, "UNAUTHENTICATED", &format!("Key {KEY} is not authorized.")),
        ),
        // Gemini answers an invalid key with a 400.
        Reply::json(
            400,
            json!([{"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": "API key not valid. Please pass a valid API key.",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}]),
        ),
    ])
    .await;
    let model = model(&server, fast_retries());
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Auth);
    assert_eq!(error.status, Some(401));
    assert_eq!(
        error.message,
        "google returned HTTP 401: Key [redacted] is not authorized."
    );
    assert!(!format!("{error:?}").contains(KEY));

    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Auth);
    assert_eq!(error.status, Some(400));
    assert_eq!(
        error.message,
        "google returned HTTP 400: API key not valid. Please pass a valid API key."
    );

    // Neither was retried; the key went in the x-goog-api-key header, not the URL.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.header("x-goog-api-key"), Some(KEY));
        assert!(!r.path.contains(KEY));
        assert_eq!(r.header("accept"), Some("text/event-stream"));
    }
}

#[tokio::test]
async fn retry_info_sets_the_wait_then_the_call_succeeds() {
    let server = Server::start(vec![
        Reply::json(
            429,
            with_retry_info(
                google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded."),
                "0.4s",
            ),
        ),
        Reply::json(
            503,
            with_retry_info(google_error(503, "UNAVAILABLE", "Overloaded."), "0.2s"),
        ),
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
    assert_eq!(server.requests().len(), 3);
    assert!(waited >= Duration::from_millis(590), "{waited:?}");
}

#[tokio::test]
async fn the_recorded_retry_info_is_longer_than_the_policy_waits() {
    // google-429-retry-info.json asks for 34.4 s, over the 30 s cap: returned, not waited for.
    let path = fixtures_dir()
        .join("google")
        .join("google-429-retry-info.json");
    let body: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let server = Server::start(vec![Reply::json(429, body), Reply::sse(text_sse("never"))]).await;
    let started = Instant::now();
    let error = model(&server, fast_retries())
        .stream(&request())
        .await
        .err()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(error.retry_after, Some(Duration::from_millis(34_400)));
    assert_eq!(
        error.message,
        "google returned HTTP 429: You exceeded your current quota, please check your plan."
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_header_wins_over_retry_info() {
    let server = Server::start(vec![
        Reply::json(
            429,
            with_retry_info(google_error(429, "RESOURCE_EXHAUSTED", "Slow down."), "60s"),
        )
        .header("retry-after", "0.3"),
        Reply::sse(text_sse("ok")),
    ])
    .await;
    let started = Instant::now();
    let (parts, error) = collect(
        model(&server, fast_retries())
            .stream(&request())
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(check(parts, error).text, "ok");
    assert!(started.elapsed() >= Duration::from_millis(290));
}

#[tokio::test]
async fn errors_without_streaming_too() {
    let server = Server::start(vec![
        Reply::json(500, google_error(500, "INTERNAL", "boom")),
        Reply::json(
            200,
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "whole"}]},
                "finishReason": "STOP"}]}),
        ),
        Reply::json(
            404,
            google_error(404, "NOT_FOUND", "models/nope is not found."),
        ),
    ])
    .await;
    let model = model(&server, fast_retries()).with_streaming(false);
    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    assert_eq!(check(parts, error).text, "whole");
    let error = model.stream(&request()).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidRequest);
    assert_eq!(
        error.message,
        "google returned HTTP 404: models/nope is not found."
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_ne!(requests[0].header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn an_error_inside_the_stream_ends_it() {
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "par"}]}}]});
    let error = with_retry_info(
        google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded mid-stream."),
        "5s",
    );
    let server = Server::start(vec![
        Reply::sse(format!("data: {chunk}\r\n\r\ndata: {error}\r\n\r\n")),
        Reply::sse(text_sse("never sent")),
    ])
    .await;
    let model = model(&server, fast_retries());
    let (parts, error) = collect(model.stream(&request()).await.unwrap()).await;
    let summary = check(parts, error);
    assert_eq!(summary.text, "par");
    let error = summary.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(error.retry_after, Some(Duration::from_secs(5)));
    assert_eq!(
        error.message,
        "google reported an error (429 RESOURCE_EXHAUSTED): Quota exceeded mid-stream."
    );
    // Nothing is retried once the stream has started.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn missing_key_names_the_variable() {
    if std::env::var_os("GEMINI_API_KEY").is_some()
        || std::env::var_os("GOOGLE_GENERATIVE_AI_API_KEY").is_some()
    {
        return; // The environment provides a key; the message cannot be observed here.
    }
    let error = GoogleGemini::new("gemini-2.5-flash", None, None)
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Config);
    assert_eq!(
        error.to_string(),
        "GEMINI_API_KEY is not set: pass --api-key or set GEMINI_API_KEY"
    );
    // An empty explicit key is no key.
    assert!(GoogleGemini::new("gemini-2.5-flash", Some(" "), None).is_err());
}

#[test]
fn the_key_is_not_in_debug_output_or_the_endpoint() {
    let model =
        GoogleGemini::new("gemini-test", Some(KEY), Some("http://127.0.0.1:1/v1beta")).unwrap();
    assert!(!model.endpoint().contains(KEY));
    assert!(!format!("{model:?}").contains(KEY), "{model:?}");
}
