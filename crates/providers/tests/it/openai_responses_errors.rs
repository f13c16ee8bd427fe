//! Errors only the Responses wire has: malformed, truncated and failed streams, non-streamed
//! errors, base URLs and keyless local servers. What every wire does (retries, refusals, the
//! key kept out) is `http_errors.rs`.

use crate::common::*;
use serde_json::json;
use toolsmith_core::{LanguageModel, ModelErrorKind};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::RetryPolicy;
use toolsmith_providers::openai_responses::{OpenAiResponses, TRUNCATED};

const KEY: &str = "sk-test-0123456789abcdef";

fn model(server: &Server, retry: RetryPolicy) -> OpenAiResponses {
    with_retry(
        OpenAiResponses::openai("gpt-test", Some(KEY), Some(&server.base_url)).unwrap(),
        retry,
    )
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
