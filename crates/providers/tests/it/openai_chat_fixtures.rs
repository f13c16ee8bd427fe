//! Every Chat Completions fixture replayed through the decoder: directly, with random chunk
//! boundaries, and through a loopback HTTP server.

use std::convert::Infallible;
use std::time::Duration;

use crate::common::*;
use toolsmith_core::LanguageModel;
use toolsmith_core::{CallSettings, Message, ModelErrorKind, ModelRequest, UnifiedFinishReason};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::decode::decode_sse;
use toolsmith_providers::openai_chat::{ChatStreamDecoder, OpenAiChat};
use toolsmith_providers::{HttpSettings, RetryPolicy};

/// What each fixture must decode to.
struct Expect {
    file: &'static str,
    text_prefix: &'static str,
    reasoning: bool,
    calls: &'static [(&'static str, &'static str)],
    usage: Option<(u64, u64, Option<u64>, Option<u64>)>,
    finish: UnifiedFinishReason,
    raw: &'static str,
}

const FIXTURES: &[Expect] = &[
    Expect {
        file: "openai-text.chunks.txt",
        text_prefix: "**Holiday Name",
        reasoning: false,
        calls: &[],
        usage: Some((16, 300, Some(0), Some(0))),
        finish: UnifiedFinishReason::Stop,
        raw: "stop",
    },
    Expect {
        file: "deepseek-tool-call.chunks.txt",
        text_prefix: "",
        reasoning: true,
        calls: &[("weather", r#"{"location": "San Francisco"}"#)],
        usage: Some((339, 83, Some(320), Some(39))),
        finish: UnifiedFinishReason::ToolCalls,
        raw: "tool_calls",
    },
    Expect {
        file: "groq-tool-call.chunks.txt",
        text_prefix: "",
        reasoning: false,
        calls: &[("weather", "{}")],
        usage: Some((210, 15, None, None)),
        finish: UnifiedFinishReason::ToolCalls,
        raw: "tool_calls",
    },
    Expect {
        file: "xai-tool-call.chunks.txt",
        text_prefix: "",
        reasoning: true,
        calls: &[("weather", r#"{"location":"San Francisco"}"#)],
        usage: Some((307, 26, Some(306), Some(227))),
        finish: UnifiedFinishReason::ToolCalls,
        raw: "tool_calls",
    },
    Expect {
        file: "anthropic-fallback-tool-call.sse",
        text_prefix: "Reading it.",
        reasoning: false,
        calls: &[("read_file", r#"{"path": "a.txt"}"#)],
        usage: None,
        finish: UnifiedFinishReason::ToolCalls,
        raw: "tool_calls",
    },
];

fn verify(expect: &Expect, summary: &Summary) {
    let file = expect.file;
    assert!(summary.error.is_none(), "{file}: {:?}", summary.error);
    assert!(
        summary.text.starts_with(expect.text_prefix),
        "{file}: text {:?}",
        summary.text
    );
    assert_eq!(!summary.reasoning.is_empty(), expect.reasoning, "{file}");
    let calls: Vec<(&str, &str)> = summary
        .calls
        .iter()
        .map(|c| (c.tool_name.as_str(), c.input.as_str()))
        .collect();
    // Deepseek's spacing is whatever the model streamed: compare parsed JSON.
    assert_eq!(calls.len(), expect.calls.len(), "{file}: {calls:?}");
    for ((name, input), (want_name, want_input)) in calls.iter().zip(expect.calls) {
        assert_eq!(name, want_name, "{file}");
        let got: serde_json::Value = serde_json::from_str(input).unwrap();
        let want: serde_json::Value = serde_json::from_str(want_input).unwrap();
        assert_eq!(got, want, "{file}");
    }
    for call in &summary.calls {
        assert!(!call.tool_call_id.is_empty());
    }
    let finish = summary.finish.as_ref().expect("finish");
    assert_eq!(finish.unified, expect.finish, "{file}");
    assert_eq!(finish.raw.as_deref(), Some(expect.raw), "{file}");
    match expect.usage {
        Some((input, output, cached, reasoning)) => {
            assert_eq!(summary.usage.input.total, Some(input), "{file}");
            assert_eq!(summary.usage.output.total, Some(output), "{file}");
            assert_eq!(summary.usage.input.cache_read, cached, "{file}");
            assert_eq!(summary.usage.output.reasoning, reasoning, "{file}");
        }
        None => assert!(summary.usage.is_empty(), "{file}"),
    }
}

fn decode_lines(sse: &str) -> Summary {
    let payloads: Vec<&str> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .collect();
    decode_with(ChatStreamDecoder::new(), &payloads)
}

async fn decode_split(sse: &str, seed: u64, max: usize) -> Summary {
    let pieces = random_split(sse.as_bytes(), seed, max);
    let bytes = futures::stream::iter(pieces.into_iter().map(Ok::<_, Infallible>));
    let decoder = ChatStreamDecoder::new();
    let (parts, error) = collect(decode_sse(bytes, None, decoder, Vec::new())).await;
    check(parts, error)
}

#[test]
fn every_fixture_decodes_directly() {
    for expect in FIXTURES {
        let sse = fixture_sse("openai-chat", expect.file);
        verify(expect, &decode_lines(&sse));
    }
}

#[test]
fn every_fixture_in_the_directory_is_covered() {
    let dir = fixtures_dir().join("openai-chat");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".chunks.txt") || name.ends_with(".sse") {
            assert!(
                FIXTURES.iter().any(|e| e.file == name),
                "fixture {name} has no expectation"
            );
        }
    }
}

#[tokio::test]
async fn every_fixture_decodes_with_random_chunk_boundaries() {
    for expect in FIXTURES {
        let sse = fixture_sse("openai-chat", expect.file);
        // One-byte pieces once, then several seeds of larger random pieces.
        verify(expect, &decode_split(&sse, 1, 1).await);
        for seed in 1..=6 {
            for max in [3, 7, 64, 1024] {
                verify(expect, &decode_split(&sse, seed, max).await);
            }
        }
    }
}

/// A synthetic stream whose text and arguments are full of multi-byte characters, with the
/// worst quirks at once: no index, null ids, missing `type`, an empty argument delta.
fn unicode_quirks_sse() -> String {
    chunks_to_sse([
        r#"{"id":"x","model":"local","choices":[{"index":0,"delta":{"role":"assistant","content":"héllo 🌍 "}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"日本語 ✓"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":null,"function":{"name":"echo","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\"s\":\"ü🌍"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":null,"function":{"name":"echo","arguments":"{\"s\":\"2\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    ])
}

#[tokio::test]
async fn utf8_and_lines_split_anywhere_and_quirky_calls_assemble() {
    let sse = unicode_quirks_sse();
    for seed in 1..=8 {
        for max in [1, 2, 3, 5, 16] {
            let s = decode_split(&sse, seed, max).await;
            assert!(s.error.is_none(), "{:?}", s.error);
            assert_eq!(s.text, "héllo 🌍 日本語 ✓");
            let calls: Vec<_> = s.calls.iter().map(|c| c.input.as_str()).collect();
            assert_eq!(calls, [r#"{"s":"ü🌍"}"#, r#"{"s":"2"}"#]);
            assert_ne!(s.calls[0].tool_call_id, s.calls[1].tool_call_id);
            // "stop" with tool calls is still a tool-calls finish; raw kept.
            let finish = s.finish.unwrap();
            assert_eq!(finish.unified, UnifiedFinishReason::ToolCalls);
            assert_eq!(finish.raw.as_deref(), Some("stop"));
        }
    }
}

#[test]
fn compatible_server_quirks() {
    // Constant index 0 with a new id per call (Ollama), whole calls in one delta.
    let constant = chunks_to_sse([
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{\"y\":2}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let s = decode_lines(&constant);
    let got: Vec<_> = s
        .calls
        .iter()
        .map(|c| {
            (
                c.tool_call_id.as_str(),
                c.tool_name.as_str(),
                c.input.as_str(),
            )
        })
        .collect();
    assert_eq!(got, [("a", "f", r#"{"x":1}"#), ("b", "g", r#"{"y":2}"#)]);

    // Constant index and no ids at all: a fresh name after complete arguments is a new call.
    let no_ids = chunks_to_sse([
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"x\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"x\":2}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let s = decode_lines(&no_ids);
    let inputs: Vec<_> = s.calls.iter().map(|c| c.input.as_str()).collect();
    assert_eq!(inputs, [r#"{"x":1}"#, r#"{"x":2}"#]);
    assert_ne!(s.calls[0].tool_call_id, s.calls[1].tool_call_id);

    // Two parallel calls interleaved by index, ids only on the first delta.
    let parallel = chunks_to_sse([
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"a","arguments":""}},{"index":1,"id":"c1","type":"function","function":{"name":"b","arguments":"{\"q\""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let s = decode_lines(&parallel);
    let got: Vec<_> = s
        .calls
        .iter()
        .map(|c| (c.tool_call_id.as_str(), c.input.as_str()))
        .collect();
    assert_eq!(got, [("c0", "{}"), ("c1", r#"{"q":1}"#)]);

    // Deltas after the finish reason still pair up (and reuse no ended call).
    let late = chunks_to_sse([
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"a","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"a","arguments":"{}"}}]}}]}"#,
    ]);
    let s = decode_lines(&late);
    assert_eq!(s.calls.len(), 2);
    assert_ne!(s.calls[0].tool_call_id, s.calls[1].tool_call_id);

    // Sources from url_citation annotations, with unique ids.
    let cited = chunks_to_sse([
        r#"{"choices":[{"index":0,"delta":{"content":"See.","annotations":[{"type":"url_citation","url_citation":{"url":"https://a.example","title":"A"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"annotations":[{"type":"url_citation","url_citation":{"url":"https://b.example"}}]},"finish_reason":"stop"}]}"#,
    ]);
    let s = decode_lines(&cited);
    let sources: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            toolsmith_core::ModelPart::Source(source) => Some(source.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sources.len(), 2);
    assert_eq!(sources[0].url.as_deref(), Some("https://a.example"));
    assert_eq!(sources[0].title.as_deref(), Some("A"));
    assert_ne!(sources[0].id, sources[1].id);
}

#[test]
fn broken_streams_end_in_clean_errors() {
    // Malformed JSON.
    let malformed = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[\n\n";
    let s = decode_lines(malformed);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error.message.starts_with("Malformed chunk in the stream"),
        "{}",
        error.message
    );

    // Truncated: a tool call in flight, no finish reason, no [DONE].
    let truncated = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\"}}]}}]}\n\n";
    let s = decode_lines(truncated);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(error.message.contains("truncated"), "{}", error.message);
    assert_eq!(s.text, "a");
    assert!(
        s.calls.is_empty(),
        "an incomplete call is not emitted as a call"
    );

    // An error object in the stream.
    let in_stream = "data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\"}}\n\n";
    let s = decode_lines(in_stream);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(error.message, "The provider reported an error: Overloaded");
}

#[tokio::test]
async fn every_fixture_decodes_through_a_loopback_server() {
    let mut replies = Vec::new();
    let mut order = Vec::new();
    for expect in FIXTURES {
        let sse = fixture_sse("openai-chat", expect.file);
        for (seed, chunked) in [(11, true), (12, false), (13, true)] {
            replies.push(Reply::sse(sse.clone()).split(seed, 48, chunked));
            order.push(expect);
        }
    }
    let server = Server::start(replies).await;
    let model =
        OpenAiChat::compatible("local", &server.base_url, None).with_http_settings(HttpSettings {
            retry: RetryPolicy::none(),
            idle_timeout: Duration::from_secs(10),
            ..HttpSettings::default()
        });
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        settings: CallSettings::default(),
        ..Default::default()
    };
    for expect in order {
        let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
        verify(expect, &check(parts, error));
    }
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.path == "/v1/chat/completions"));
    assert!(requests.iter().all(|r| r.header("authorization").is_none()));
}

#[tokio::test]
async fn non_streamed_bodies_decode_to_the_same_parts() {
    let body: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures_dir().join("openai-chat/openai-text.json")).unwrap(),
    )
    .unwrap();
    let tool_body = serde_json::json!({
        "id": "chatcmpl-1", "model": "gpt-x",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}},
                {"id": "call_b", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2}"}}
            ]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4}
    });
    let server = Server::start(vec![
        Reply::json(200, body.clone()),
        Reply::json(200, tool_body),
        Reply::json(200, serde_json::json!({"choices": []})),
    ])
    .await;
    let model = OpenAiChat::compatible("local", &server.base_url, None).with_streaming(false);
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };

    let text = check_parts(&model, &request).await;
    let expected = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(text.text, expected);
    assert_eq!(text.usage.input.total, Some(16));
    assert_eq!(text.usage.output.total, Some(363));
    assert_eq!(text.finish.unwrap().unified, UnifiedFinishReason::Stop);

    let calls = check_parts(&model, &request).await;
    let calls: Vec<(&str, &str)> = calls
        .calls
        .iter()
        .map(|c| (c.tool_call_id.as_str(), c.input.as_str()))
        .collect();
    assert_eq!(calls, [("call_a", r#"{"a":1}"#), ("call_b", r#"{"a":2}"#)]);

    let error = model.stream(&request).await.err();
    let error = error.expect("a body without a finish reason is an error");
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert_eq!(
        error.message,
        "The Chat Completions stream ended without a finish reason (truncated response)."
    );

    let requests = server.requests();
    assert!(requests[0].body.get("stream").is_none());
    assert!(requests[0].body.get("stream_options").is_none());
    assert_eq!(requests[0].header("accept"), Some("application/json"));
}

async fn check_parts(model: &OpenAiChat, request: &ModelRequest) -> Summary {
    let (parts, error) = collect(model.stream(request).await.unwrap()).await;
    check(parts, error)
}
