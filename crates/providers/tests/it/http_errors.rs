//! The HTTP contract every wire keeps, one suite run against each of them ([`WIRES`]): a
//! provider's refusal becomes an error of the right kind that quotes the provider's message
//! without the API key; a `retry-after` header is waited for; 5xx answers are retried (twice by
//! default) and 4xx ones are not; nothing is retried once a stream has started; an unreachable
//! server is a network error; a missing key names its variable; the key never shows in `Debug`.
//!
//! What only one wire does (Google's `RetryInfo`, its in-stream errors, the Messages wire's
//! version header, a Chat Completions server that hangs…) stays in that wire's `*_errors.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_core::{LanguageModel, ModelError, ModelErrorKind};
use toolsmith_providers::RetryPolicy;
use toolsmith_providers::anthropic::AnthropicMessages;
use toolsmith_providers::google::GoogleGemini;
use toolsmith_providers::openai_chat::OpenAiChat;
use toolsmith_providers::openai_responses::OpenAiResponses;

/// A wire's model, and its `Debug` (the model behind `dyn` has none).
type Built = (Arc<dyn LanguageModel>, String);

/// One wire, as the suite drives it.
struct Wire {
    /// The provider's name, which starts its error messages.
    provider: &'static str,
    /// An API key in the provider's format.
    key: &'static str,
    /// The header that carries the key, and its value.
    auth: (&'static str, &'static str),
    /// The variables a key is read from, the first named by the error when none is set.
    key_vars: &'static [&'static str],
    /// The wire's model at a base URL, with the suite's key and `retry`, and its `Debug`.
    model: fn(&str, RetryPolicy) -> Built,
    /// Builds the wire's model for the provider's own URL with this key (`None`: the
    /// environment's): nothing, or why it cannot be built.
    keyed: fn(Option<&str>) -> Result<(), ModelError>,
    /// The provider's error body for an HTTP status and a message.
    error: fn(u16, &str) -> Value,
    /// A streamed answer of this text, with 3 input tokens.
    text: fn(&str) -> String,
    /// A stream cut after its first event.
    started: &'static str,
}

fn built<M: LanguageModel + std::fmt::Debug>(model: M) -> Built {
    let debug = format!("{model:?}");
    (Arc::new(model), debug)
}

/// The body OpenAI's APIs answer an error with.
fn openai_error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", "invalid_api_key"),
        429 => ("requests", "rate_limit_exceeded"),
        400..=499 => ("invalid_request_error", "invalid_value"),
        _ => ("server_error", "server_error"),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

static WIRES: [Wire; 4] = [
    Wire {
        provider: "openai",
        key: "sk-test-0123456789abcdef",
        auth: ("authorization", "Bearer sk-test-0123456789abcdef"),
        key_vars: &["OPENAI_API_KEY"],
        model: |base, retry| {
            let model =
                OpenAiChat::openai("gpt-test", Some("sk-test-0123456789abcdef"), Some(base));
            built(with_retry(model.unwrap(), retry))
        },
        keyed: |key| OpenAiChat::openai("gpt-4.1-mini", key, None).map(drop),
        error: openai_error,
        text: |text| {
            chunks_to_sse([
                json!({"id":"r","model":"m","choices":[{"index":0,"delta":{"content":text}}]})
                    .to_string()
                    .as_str(),
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            ])
        },
        started: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"}}]}\n\n",
    },
    Wire {
        provider: "openai-responses",
        key: "sk-test-0123456789abcdef",
        auth: ("authorization", "Bearer sk-test-0123456789abcdef"),
        key_vars: &["OPENAI_API_KEY"],
        model: |base, retry| {
            let model =
                OpenAiResponses::openai("gpt-test", Some("sk-test-0123456789abcdef"), Some(base));
            built(with_retry(model.unwrap(), retry))
        },
        keyed: |key| OpenAiResponses::openai("gpt-5", key, None).map(drop),
        error: openai_error,
        text: |text| {
            let lines = [
                json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-test"}}),
                json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
                json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
                    "content_index": 0, "delta": text}),
                json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"type": "message", "id": "msg_1", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}}),
                json!({"type": "response.completed", "response": {"id": "resp_1",
                    "status": "completed", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
            ]
            .map(|l| l.to_string());
            chunks_to_sse(lines.iter().map(String::as_str))
        },
        started: "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"m\"}}\n\n",
    },
    Wire {
        provider: "anthropic",
        key: "sk-ant-test-0123456789abcdef",
        auth: ("x-api-key", "sk-ant-test-0123456789abcdef"),
        key_vars: &["ANTHROPIC_API_KEY"],
        model: |base, retry| {
            let model = AnthropicMessages::new(
                "claude-test",
                Some("sk-ant-test-0123456789abcdef"),
                Some(base),
            );
            built(with_retry(model.unwrap(), retry))
        },
        keyed: |key| AnthropicMessages::new("claude-sonnet-4-5", key, None).map(drop),
        error: |status, message| {
            let kind = match status {
                401 => "authentication_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                400..=499 => "invalid_request_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        },
        text: |text| {
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
        },
        started: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
    },
    Wire {
        provider: "google",
        key: "AIzaSyTest-0123456789abcdef",
        auth: ("x-goog-api-key", "AIzaSyTest-0123456789abcdef"),
        key_vars: &["GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"],
        model: |base, retry| {
            let model = GoogleGemini::new(
                "gemini-test",
                Some("AIzaSyTest-0123456789abcdef"),
                Some(base),
            );
            built(with_retry(model.unwrap(), retry))
        },
        keyed: |key| GoogleGemini::new("gemini-2.5-flash", key, None).map(drop),
        error: |status, message| {
            let kind = match status {
                401 => "UNAUTHENTICATED",
                429 => "RESOURCE_EXHAUSTED",
                503 => "UNAVAILABLE",
                400..=499 => "INVALID_ARGUMENT",
                _ => "INTERNAL",
            };
            json!({"error": {"code": status, "message": message, "status": kind}})
        },
        text: |text| {
            let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}});
            format!("data: {chunk}\r\n\r\n")
        },
        started: "data: {\"candidates\": [{\"content\": {\"role\": \"model\", \"parts\": [{\"text\": \"par\"}]}}]}\r\n\r\n",
    },
];

/// `wire`'s model on `server`, retrying as tests do (10 ms first delays).
fn model(wire: &Wire, server: &Server) -> Arc<dyn LanguageModel> {
    (wire.model)(&server.base_url, fast_retries()).0
}

/// Starts `wire`'s call on `server` and expects it to fail before any part.
async fn refused(wire: &Wire, server: &Server) -> ModelError {
    match model(wire, server).stream(&request()).await {
        Err(error) => error,
        Ok(_) => panic!("{}: the call started", wire.provider),
    }
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_quoting_the_provider_without_the_key() {
    for wire in &WIRES {
        let message = format!("Incorrect API key provided: {}.", wire.key);
        let server = Server::start(vec![Reply::json(401, (wire.error)(401, &message))]).await;
        let error = refused(wire, &server).await;
        let p = wire.provider;
        assert_eq!(error.kind, ModelErrorKind::Auth, "{p}");
        assert_eq!(error.status, Some(401), "{p}");
        assert_eq!(
            error.message,
            format!("{p} returned HTTP 401: Incorrect API key provided: [redacted].")
        );
        assert!(!format!("{error:?}").contains(wire.key), "{p}: {error:?}");
        // Not retried; the key went in its header, and only there.
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{p}");
        let (header, value) = wire.auth;
        assert_eq!(requests[0].header(header), Some(value), "{p}");
        assert!(!requests[0].path.contains(wire.key), "{p}");
        if header != "authorization" {
            assert_eq!(requests[0].header("authorization"), None, "{p}");
        }
    }
}

#[tokio::test]
async fn a_retry_after_header_is_waited_for_then_the_call_succeeds() {
    // The four one-second waits at once.
    let mut calls = tokio::task::JoinSet::new();
    for wire in &WIRES {
        calls.spawn(async move {
            let server = Server::start(vec![
                Reply::json(429, (wire.error)(429, "Rate limit reached"))
                    .header("retry-after", "1"),
                Reply::sse((wire.text)("ok")),
            ])
            .await;
            let started = Instant::now();
            let stream = model(wire, &server).stream(&request()).await.unwrap();
            let waited = started.elapsed();
            let (parts, error) = collect(stream).await;
            let p = wire.provider;
            assert_eq!(check(parts, error).text, "ok", "{p}");
            assert_eq!(server.requests().len(), 2, "{p}");
            assert!(waited >= Duration::from_millis(950), "{p}: {waited:?}");
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff_and_bounded() {
    for wire in &WIRES {
        let p = wire.provider;
        let server = Server::start(vec![
            Reply::json(500, (wire.error)(500, "boom")),
            Reply::json(503, (wire.error)(503, "busy")),
            Reply::sse((wire.text)("third time")),
        ])
        .await;
        let (parts, error) = collect(model(wire, &server).stream(&request()).await.unwrap()).await;
        let summary = check(parts, error);
        assert_eq!(summary.text, "third time", "{p}");
        assert_eq!(summary.usage.input.total, Some(3), "{p}");
        assert_eq!(server.requests().len(), 3, "{p}");

        // Three failures with the default two retries is an error: the last one's.
        let server = Server::start(vec![
            Reply::json(500, (wire.error)(500, "boom 1")),
            Reply::json(502, (wire.error)(502, "boom 2")),
            Reply::json(529, (wire.error)(529, "Overloaded")),
            Reply::sse((wire.text)("never")),
        ])
        .await;
        let error = refused(wire, &server).await;
        assert_eq!(error.kind, ModelErrorKind::Server, "{p}");
        assert_eq!(error.message, format!("{p} returned HTTP 529: Overloaded"));
        assert_eq!(server.requests().len(), 3, "{p}");
    }
}

#[tokio::test]
async fn bad_requests_are_not_retried() {
    for wire in &WIRES {
        let p = wire.provider;
        let message = "Invalid schema for function 'x'.";
        let server = Server::start(vec![
            Reply::json(400, (wire.error)(400, message)),
            Reply::sse((wire.text)("never")),
        ])
        .await;
        let error = refused(wire, &server).await;
        assert_eq!(error.kind, ModelErrorKind::InvalidRequest, "{p}");
        assert_eq!(error.status, Some(400), "{p}");
        assert_eq!(error.message, format!("{p} returned HTTP 400: {message}"));
        assert_eq!(server.requests().len(), 1, "{p}");
    }
}

#[tokio::test]
async fn nothing_is_retried_once_the_stream_has_started() {
    for wire in &WIRES {
        let p = wire.provider;
        let server = Server::start(vec![
            Reply::sse(wire.started),
            Reply::sse((wire.text)("never sent")),
        ])
        .await;
        let (parts, error) = collect(model(wire, &server).stream(&request()).await.unwrap()).await;
        let error = check(parts, error).error;
        assert_eq!(
            error.map(|e| e.kind),
            Some(ModelErrorKind::InvalidResponse),
            "{p}"
        );
        assert_eq!(server.requests().len(), 1, "{p}");
    }
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    for wire in &WIRES {
        let (model, _) = (wire.model)(&url, RetryPolicy::none());
        let error = match model.stream(&request()).await {
            Err(error) => error,
            Ok(_) => panic!("{}: a closed port answered", wire.provider),
        };
        assert_eq!(error.kind, ModelErrorKind::Network, "{}", wire.provider);
        assert!(!format!("{error:?}").contains(wire.key), "{error:?}");
    }
}

#[test]
fn a_missing_or_empty_key_names_the_variable() {
    for wire in &WIRES {
        if wire.key_vars.iter().any(|v| std::env::var_os(v).is_some()) {
            continue; // The environment provides a key; the message cannot be observed here.
        }
        let var = wire.key_vars[0];
        for key in [None, Some(""), Some("  ")] {
            let error = (wire.keyed)(key).unwrap_err();
            assert_eq!(error.kind, ModelErrorKind::Config, "{}", wire.provider);
            assert_eq!(
                error.to_string(),
                format!("{var} is not set: pass --api-key or set {var}"),
                "{} with {key:?}",
                wire.provider
            );
        }
        // A key given is taken, with the provider's own base URL.
        (wire.keyed)(Some(wire.key)).unwrap();
    }
}

#[test]
fn the_key_stays_out_of_debug_output() {
    for wire in &WIRES {
        let (model, debug) = (wire.model)("http://127.0.0.1:9/v1", RetryPolicy::none());
        assert!(!debug.contains(wire.key), "{debug}");
        assert!(debug.contains(model.model_id()), "{debug}");
        assert_eq!(model.provider(), wire.provider);
    }
}
