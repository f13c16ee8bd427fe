//! Every Gemini fixture replayed through the decoder: directly, with random chunk boundaries,
//! through a loopback HTTP server (streamed and not), plus synthetic edge cases and broken
//! streams.

use std::convert::Infallible;
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_core::{
    LanguageModel, Message, ModelErrorKind, ModelPart, ModelRequest, UnifiedFinishReason,
};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::decode::decode_sse;
use toolsmith_providers::google::{GeminiStreamDecoder, GoogleGemini, decode_response};
use toolsmith_providers::{HttpSettings, RetryPolicy};

const DIR: &str = "google";
const KEY: &str = "AIzaTest-0123456789abcdef";

/// What each fixture must decode to.
struct Expect {
    file: &'static str,
    text: &'static str,
    reasoning: bool,
    /// Tool names, in order (inputs are checked against an independent reference).
    calls: &'static [&'static str],
    /// promptTokenCount, candidatesTokenCount, thoughtsTokenCount of the last chunk.
    usage: (u64, u64, u64),
    finish: UnifiedFinishReason,
}

const TEXT: &str = "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y";

const FIXTURES: &[Expect] = &[
    Expect {
        file: "google-text.chunks.txt",
        text: TEXT,
        reasoning: false,
        calls: &[],
        usage: (9, 23, 185),
        finish: UnifiedFinishReason::Stop,
    },
    Expect {
        file: "google-reasoning-gemini3.chunks.txt",
        text: "There are **3** \"r\"s in strawberry.\n\nSt**r**awbe**rr**y",
        reasoning: false,
        calls: &[],
        usage: (9, 23, 302),
        finish: UnifiedFinishReason::Stop,
    },
    Expect {
        file: "google-tool-call.chunks.txt",
        text: "",
        reasoning: false,
        calls: &["weather"],
        usage: (29, 15, 45),
        finish: UnifiedFinishReason::ToolCalls,
    },
    Expect {
        file: "google-tool-call-gemini3.chunks.txt",
        text: "",
        reasoning: false,
        calls: &["weather"],
        usage: (29, 15, 804),
        finish: UnifiedFinishReason::ToolCalls,
    },
    Expect {
        file: "google-stream-tool-call-arguments.chunks.txt",
        text: "",
        reasoning: false,
        calls: &["getWeather", "getWeather"],
        usage: (26, 23, 132),
        finish: UnifiedFinishReason::ToolCalls,
    },
    Expect {
        file: "google-stream-tool-call-array-arguments-missing-terminal-function-call.chunks.txt",
        text: "",
        reasoning: false,
        calls: &["writeItems"],
        usage: (54, 74, 121),
        finish: UnifiedFinishReason::ToolCalls,
    },
    Expect {
        file: "google-vertex-stream-tool-call-arguments-nested.1.chunks.txt",
        text: "",
        reasoning: false,
        calls: &["cookRecipe"],
        usage: (31, 684, 1026),
        finish: UnifiedFinishReason::ToolCalls,
    },
    Expect {
        file: "google-stream-no-args-tool-call.chunks.txt",
        text: "",
        reasoning: true,
        calls: &["read_theme", "read_screen", "read_screen", "read_screen"],
        usage: (249, 58, 183),
        finish: UnifiedFinishReason::ToolCalls,
    },
];

/// The fixture's lines (the `data:` payloads).
fn lines(file: &str) -> Vec<String> {
    let path = fixtures_dir().join(DIR).join(file);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path:?}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The body Gemini sends: one `data:` event per chunk, no end marker.
fn gemini_sse<S: AsRef<str>>(lines: &[S]) -> String {
    lines
        .iter()
        .map(|l| format!("data: {}\r\n\r\n", l.as_ref()))
        .collect()
}

/// An independent reference for streamed arguments: every `partialArgs` value set at its path
/// in a JSON tree (string pieces appended), every whole `args` taken as is. One entry per call.
fn reference_calls(lines: &[String]) -> Vec<(String, Value, Option<String>)> {
    let mut calls: Vec<(String, Value, Option<String>)> = Vec::new();
    for line in lines {
        let chunk: Value = serde_json::from_str(line).unwrap();
        let parts = chunk["candidates"][0]["content"]["parts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for part in parts {
            let Some(call) = part.get("functionCall") else {
                continue;
            };
            if let Some(name) = call.get("name").and_then(Value::as_str) {
                let args = call.get("args").cloned().unwrap_or(json!({}));
                let signature = part
                    .get("thoughtSignature")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                calls.push((name.to_string(), args, signature));
            }
            for arg in call
                .get("partialArgs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let path = arg["jsonPath"].as_str().unwrap();
                let slot = reference_slot(&mut calls.last_mut().unwrap().1, path);
                if let Some(s) = arg.get("stringValue").and_then(Value::as_str) {
                    let mut text = slot.as_str().unwrap_or("").to_string();
                    text.push_str(s);
                    *slot = json!(text);
                } else if let Some(n) = arg.get("numberValue") {
                    *slot = n.clone();
                } else if let Some(b) = arg.get("boolValue") {
                    *slot = b.clone();
                } else {
                    *slot = Value::Null;
                }
            }
        }
    }
    calls
}

fn reference_slot<'a>(mut value: &'a mut Value, path: &str) -> &'a mut Value {
    let path = path.strip_prefix('$').unwrap().replace('[', ".[");
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        if let Some(index) = segment.strip_prefix('[') {
            let index: usize = index.trim_end_matches(']').parse().unwrap();
            if !value.is_array() {
                *value = json!([]);
            }
            let array = value.as_array_mut().unwrap();
            while array.len() <= index {
                array.push(Value::Null);
            }
            value = &mut array[index];
        } else {
            if !value.is_object() {
                *value = json!({});
            }
            value = value
                .as_object_mut()
                .unwrap()
                .entry(segment)
                .or_insert(Value::Null);
        }
    }
    value
}

fn signature_of(metadata: &toolsmith_core::ProviderMetadata) -> Option<&str> {
    metadata.get("google")?.get("thoughtSignature")?.as_str()
}

fn verify(expect: &Expect, summary: &Summary) {
    let file = expect.file;
    assert!(summary.error.is_none(), "{file}: {:?}", summary.error);
    assert_eq!(summary.text, expect.text, "{file}");
    assert_eq!(!summary.reasoning.is_empty(), expect.reasoning, "{file}");
    let lines = lines(file);
    let reference = reference_calls(&lines);
    let names: Vec<&str> = summary.calls.iter().map(|c| c.tool_name.as_str()).collect();
    assert_eq!(names, expect.calls, "{file}");
    assert_eq!(reference.len(), summary.calls.len(), "{file}");
    for (call, (name, args, signature)) in summary.calls.iter().zip(&reference) {
        assert_eq!(&call.tool_name, name, "{file}");
        let input: Value = serde_json::from_str(&call.input)
            .unwrap_or_else(|e| panic!("{file}: {e}: {}", call.input));
        assert_eq!(&input, args, "{file}");
        // The signature is echoed back verbatim from the call's metadata.
        assert_eq!(
            signature_of(&call.provider_metadata),
            signature.as_deref(),
            "{file}"
        );
        assert!(call.tool_call_id.starts_with("call_"), "{file}");
        assert!(!call.provider_executed);
    }
    // Text signatures ride on the block end.
    let text_signatures: Vec<&str> = lines
        .iter()
        .flat_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|p| p.get("functionCall").is_none())
        .filter_map(|p| {
            p.get("thoughtSignature")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .map(|s| Box::leak(s.into_boxed_str()) as &str)
        .collect();
    let ended: Vec<&str> = summary
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::TextEnd {
                provider_metadata, ..
            }
            | ModelPart::ReasoningEnd {
                provider_metadata, ..
            } => signature_of(provider_metadata),
            _ => None,
        })
        .collect();
    assert_eq!(ended, text_signatures, "{file}");
    // Blocks close before a call starts (the order the message records them in).
    if let Some(first_call) = summary
        .parts
        .iter()
        .position(|p| matches!(p, ModelPart::ToolInputStart { .. }))
    {
        assert!(
            !summary.parts[first_call..].iter().any(|p| matches!(
                p,
                ModelPart::ReasoningDelta { .. } | ModelPart::TextDelta { .. }
            )),
            "{file}"
        );
    }
    let (prompt, candidates, thoughts) = expect.usage;
    let usage = summary.usage;
    assert_eq!(usage.input.total, Some(prompt), "{file}");
    assert_eq!(usage.input.no_cache, Some(prompt), "{file}");
    assert_eq!(usage.input.cache_read, None, "{file}");
    assert_eq!(usage.output.total, Some(candidates + thoughts), "{file}");
    assert_eq!(usage.output.text, Some(candidates), "{file}");
    assert_eq!(usage.output.reasoning, Some(thoughts), "{file}");
    assert_eq!(usage.server_tool_uses, 0, "{file}");
    let finish = summary.finish.as_ref().expect("finish");
    assert_eq!(finish.unified, expect.finish, "{file}");
    assert_eq!(finish.raw.as_deref(), Some("STOP"), "{file}");
    assert!(matches!(
        summary.parts.get(1),
        Some(ModelPart::ResponseMetadata {
            id: Some(_),
            model_id: Some(_)
        })
    ));
}

fn decode_payloads<S: AsRef<str>>(payloads: &[S]) -> Summary {
    decode_with(GeminiStreamDecoder::new(), payloads)
}

async fn decode_split(sse: &str, seed: u64, max: usize) -> Summary {
    let pieces = random_split(sse.as_bytes(), seed, max);
    let bytes = futures::stream::iter(pieces.into_iter().map(Ok::<_, Infallible>));
    let decoder = GeminiStreamDecoder::new();
    let (parts, error) = collect(decode_sse(bytes, None, decoder, Vec::new())).await;
    check(parts, error)
}

#[test]
fn every_fixture_decodes_directly() {
    for expect in FIXTURES {
        verify(expect, &decode_payloads(&lines(expect.file)));
    }
}

#[test]
fn every_fixture_in_the_directory_is_covered() {
    let dir = fixtures_dir().join(DIR);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(names.len(), 11, "{names:?}");
    for name in names {
        let covered = FIXTURES.iter().any(|e| e.file == name)
            || [
                "google-text.json",
                "google-tool-call.json",
                "google-429-retry-info.json",
            ]
            .contains(&name.as_str());
        assert!(covered, "fixture {name} has no expectation");
    }
}

#[tokio::test]
async fn every_fixture_decodes_with_random_chunk_boundaries() {
    for expect in FIXTURES {
        let sse = gemini_sse(&lines(expect.file));
        verify(expect, &decode_split(&sse, 1, 1).await);
        for seed in 1..=4 {
            for max in [3, 7, 64, 1024] {
                verify(expect, &decode_split(&sse, seed, max).await);
            }
        }
        // A proxy's `[DONE]` (Gemini sends none) changes nothing.
        verify(
            expect,
            &decode_split(&fixture_sse(DIR, expect.file), 9, 50).await,
        );
    }
}

fn loopback_model(server: &Server) -> GoogleGemini {
    GoogleGemini::new("gemini-test", Some(KEY), Some(&server.base_url))
        .unwrap()
        .with_http_settings(HttpSettings {
            retry: RetryPolicy::none(),
            idle_timeout: Duration::from_secs(10),
            ..HttpSettings::default()
        })
}

fn hi() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    }
}

#[tokio::test]
async fn every_fixture_decodes_through_a_loopback_server() {
    let mut replies = Vec::new();
    let mut order = Vec::new();
    for expect in FIXTURES {
        let sse = gemini_sse(&lines(expect.file));
        for (seed, chunked) in [(21, true), (22, false), (23, true)] {
            replies.push(Reply::sse(sse.clone()).split(seed, 48, chunked));
            order.push(expect);
        }
    }
    let server = Server::start(replies).await;
    let model = loopback_model(&server);
    for expect in order {
        let (parts, error) = collect(model.stream(&hi()).await.unwrap()).await;
        verify(expect, &check(parts, error));
    }
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.path == "/v1/models/gemini-test:streamGenerateContent?alt=sse")
    );
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-goog-api-key") == Some(KEY))
    );
    assert!(requests.iter().all(|r| r.header("authorization").is_none()));
}

fn json_fixture(name: &str) -> Value {
    let path = fixtures_dir().join(DIR).join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn whole_bodies_decode_to_the_same_parts_directly_and_over_http() {
    let text = json_fixture("google-text.json");
    let call = json_fixture("google-tool-call.json");
    let server = Server::start(vec![
        Reply::json(200, text.clone()),
        Reply::json(200, call.clone()),
    ])
    .await;
    let model = loopback_model(&server).with_streaming(false);
    for body in [&text, &call] {
        let direct = decode_response(body).unwrap();
        let (parts, error) = collect(model.stream(&hi()).await.unwrap()).await;
        let over_http = check(parts, error);
        let direct = check(direct, None);
        assert_eq!(direct.text, over_http.text);
        assert_eq!(direct.calls.len(), over_http.calls.len());
        let finish = over_http.finish.unwrap();
        assert_eq!(finish.raw.as_deref(), Some("STOP"));
        let candidates = body["usageMetadata"]["candidatesTokenCount"]
            .as_u64()
            .unwrap();
        let thoughts = body["usageMetadata"]["thoughtsTokenCount"]
            .as_u64()
            .unwrap();
        assert_eq!(over_http.usage.output.total, Some(candidates + thoughts));
        let prompt = body["usageMetadata"]["promptTokenCount"].as_u64();
        assert_eq!(over_http.usage.input.total, prompt);
        let part = &body["candidates"][0]["content"]["parts"][0];
        let signature = part["thoughtSignature"].as_str().unwrap();
        if body == &text {
            assert_eq!(over_http.text, part["text"].as_str().unwrap());
            assert_eq!(finish.unified, UnifiedFinishReason::Stop);
            let ends: Vec<_> = over_http
                .parts
                .iter()
                .filter_map(|p| match p {
                    ModelPart::TextEnd {
                        provider_metadata, ..
                    } => signature_of(provider_metadata),
                    _ => None,
                })
                .collect();
            assert_eq!(ends, [signature]);
        } else {
            assert_eq!(finish.unified, UnifiedFinishReason::ToolCalls);
            let call = &over_http.calls[0];
            assert_eq!(call.tool_name, "weather");
            assert_eq!(call.input, r#"{"location":"San Francisco"}"#);
            assert_eq!(signature_of(&call.provider_metadata), Some(signature));
        }
    }
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.path == "/v1/models/gemini-test:generateContent")
    );
}

#[test]
fn the_retry_info_fixture_is_a_rate_limit_with_its_delay() {
    let body = json_fixture("google-429-retry-info.json");
    let error = decode_response(&body).unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(error.retry_after, Some(Duration::from_millis(34_400)));
    assert_eq!(error.status, Some(429));
    assert_eq!(
        error.message,
        "google reported an error (429 RESOURCE_EXHAUSTED): You exceeded your current quota, please check your plan."
    );
}

#[tokio::test]
async fn broken_streams_over_http() {
    let mut truncated = lines("google-vertex-stream-tool-call-arguments-nested.1.chunks.txt");
    truncated.truncate(40);
    let server = Server::start(vec![
        Reply::sse(gemini_sse(&truncated)).split(4, 17, true),
        Reply::sse("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\ndata: {oops\n\n"),
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{not json".to_vec(),
            split: None,
            chunked: false,
        },
    ])
    .await;
    let model = loopback_model(&server);
    let (parts, error) = collect(model.stream(&hi()).await.unwrap()).await;
    let s = check(parts, error);
    assert!(s.error.unwrap().message.contains("truncated"));
    assert!(s.calls.is_empty());

    let (parts, error) = collect(model.stream(&hi()).await.unwrap()).await;
    let s = check(parts, error);
    assert_eq!(s.text, "a");
    assert!(s.error.unwrap().message.starts_with("Malformed chunk"));

    let error = model
        .clone()
        .with_streaming(false)
        .stream(&hi())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error
            .message
            .starts_with("The response body from google is not valid JSON")
    );
}

#[test]
fn mangled_fixtures_never_panic_and_keep_the_invariants() {
    let files: Vec<Vec<String>> = FIXTURES.iter().map(|e| lines(e.file)).collect();
    let mut rng = Rng::new(7);
    for round in 0..400 {
        let mut payloads = files[round % files.len()].clone();
        // Drop some lines, cut one, duplicate one.
        let drops = rng.below(3);
        for _ in 0..drops {
            if !payloads.is_empty() {
                let at = rng.below(payloads.len());
                payloads.remove(at);
            }
        }
        if !payloads.is_empty() {
            let at = rng.below(payloads.len());
            let line = payloads[at].clone();
            let mut cut = rng.below(line.len() + 1);
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            if rng.below(2) == 0 {
                payloads[at] = line[..cut].to_string();
            } else {
                payloads.insert(at, line);
            }
        }
        let s = decode_payloads(&payloads);
        for call in &s.calls {
            assert!(
                serde_json::from_str::<Value>(&call.input).is_ok(),
                "round {round}: {}",
                call.input
            );
        }
    }
}
