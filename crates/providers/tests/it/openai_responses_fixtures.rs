//! Every Responses fixture (OpenAI and LM Studio) replayed through the decoder: directly, with
//! random chunk boundaries, through a loopback HTTP server, and as non-streamed bodies.

mod expected;

use std::convert::Infallible;
use std::time::Duration;

use crate::common::*;
use expected::{Expect, FIXTURES, LOCAL, OPENAI};
use serde_json::{Value, json};
use toolsmith_core::{
    LanguageModel, Message, ModelErrorKind, ModelPart, ModelRequest, UnifiedFinishReason,
};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::decode::decode_sse;
use toolsmith_providers::openai_responses::{
    OpenAiResponses, ResponsesStreamDecoder, TRUNCATED, decode_response,
};
use toolsmith_providers::{HttpSettings, RetryPolicy};

fn lines_of(expect: &Expect) -> Vec<String> {
    responses_of(expect.dir, expect.file)[expect.response].clone()
}

fn sse_of(lines: &[String]) -> String {
    chunks_to_sse(lines.iter().map(String::as_str))
}

/// Checks the wire-specific invariants on top of [`check`]'s.
fn verify(expect: &Expect, s: &Summary) {
    let name = format!("{}#{}", expect.file, expect.response);
    assert!(s.error.is_none(), "{name}: {:?}", s.error);
    assert!(
        s.text.starts_with(expect.text_prefix),
        "{name}: text {:?}",
        s.text
    );
    assert_eq!(!s.reasoning.is_empty(), expect.reasoning, "{name}");
    let local: Vec<_> = s.calls.iter().filter(|c| !c.provider_executed).collect();
    assert_eq!(local.len(), expect.calls.len(), "{name}: {local:?}");
    for (call, (want_name, want_input)) in local.iter().zip(expect.calls) {
        assert_eq!(call.tool_name, *want_name, "{name}");
        let got: Value = serde_json::from_str(&call.input).unwrap();
        let want: Value = serde_json::from_str(want_input).unwrap();
        assert_eq!(got, want, "{name}");
        assert!(!call.tool_call_id.is_empty(), "{name}");
        let openai = call
            .provider_metadata
            .get("openai")
            .expect("openai metadata");
        assert!(openai["itemId"].is_string(), "{name}: {openai}");
    }
    // Provider-executed calls: each paired with exactly one result, after it.
    let hosted: Vec<_> = s.calls.iter().filter(|c| c.provider_executed).collect();
    let names: Vec<&str> = hosted.iter().map(|c| c.tool_name.as_str()).collect();
    assert_eq!(names, expect.hosted, "{name}");
    for call in &hosted {
        let call_at = s
            .parts
            .iter()
            .position(
                |p| matches!(p, ModelPart::ToolCall(c) if c.tool_call_id == call.tool_call_id),
            )
            .unwrap();
        let results: Vec<usize> = s
            .parts
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, ModelPart::ToolResult { tool_call_id, .. } if *tool_call_id == call.tool_call_id))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(results.len(), 1, "{name}: {}", call.tool_call_id);
        assert!(results[0] > call_at, "{name}: result before call");
        let input: Value = serde_json::from_str(&call.input).unwrap();
        assert!(input.is_object(), "{name}: hosted input {input}");
    }
    let results = s
        .parts
        .iter()
        .filter(|p| matches!(p, ModelPart::ToolResult { .. }))
        .count();
    assert_eq!(results, hosted.len(), "{name}: results without calls");
    // Sources: ids unique, url sources have urls.
    let sources: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::Source(source) => Some(source),
            _ => None,
        })
        .collect();
    let urls = sources.iter().filter(|x| x.source_type == "url").count();
    let docs = sources
        .iter()
        .filter(|x| x.source_type == "document")
        .count();
    assert_eq!(
        (urls, docs),
        (expect.url_sources, expect.document_sources),
        "{name}"
    );
    for source in &sources {
        if source.source_type == "url" {
            assert!(source.url.as_deref().unwrap().starts_with("https://"));
            assert!(source.title.is_some());
        }
    }
    let ids: std::collections::HashSet<_> = sources.iter().map(|x| &x.id).collect();
    assert_eq!(ids.len(), sources.len(), "{name}: duplicate source ids");
    // Text blocks end with their item id; reasoning blocks with item id and encrypted content.
    for part in &s.parts {
        match part {
            ModelPart::TextEnd {
                id,
                provider_metadata,
            } => {
                assert_eq!(
                    provider_metadata.get("openai").unwrap()["itemId"],
                    json!(id)
                );
            }
            ModelPart::ReasoningEnd {
                id,
                provider_metadata,
            } => {
                let openai = provider_metadata.get("openai").unwrap();
                let item = openai["itemId"].as_str().unwrap();
                assert!(id.starts_with(item), "{name}: {id} / {item}");
                assert!(openai.get("reasoningEncryptedContent").is_some());
            }
            _ => {}
        }
    }
    let (input, output, cached, reasoning, server) = expect.usage;
    assert_eq!(s.usage.input.total, Some(input), "{name}");
    assert_eq!(s.usage.input.cache_read, Some(cached), "{name}");
    assert_eq!(s.usage.input.no_cache, Some(input - cached), "{name}");
    assert_eq!(s.usage.output.total, Some(output), "{name}");
    assert_eq!(s.usage.output.reasoning, Some(reasoning), "{name}");
    assert_eq!(s.usage.output.text, Some(output - reasoning), "{name}");
    assert_eq!(s.usage.server_tool_uses, server, "{name}");
    let finish = s.finish.as_ref().expect("finish");
    assert_eq!(finish.unified, expect.finish, "{name}");
    assert_eq!(finish.raw.as_deref(), Some(expect.raw), "{name}");
    assert!(
        matches!(
            s.parts.get(1),
            Some(ModelPart::ResponseMetadata {
                id: Some(_),
                model_id: Some(_)
            })
        ),
        "{name}: metadata second"
    );
}

fn decode_lines<S: AsRef<str>>(lines: &[S]) -> Summary {
    decode_with(ResponsesStreamDecoder::new(), lines)
}

async fn decode_split(sse: &str, seed: u64, max: usize) -> Summary {
    let pieces = random_split(sse.as_bytes(), seed, max);
    let bytes = futures::stream::iter(pieces.into_iter().map(Ok::<_, Infallible>));
    let decoder = ResponsesStreamDecoder::new();
    let (parts, error) = collect(decode_sse(bytes, None, decoder, Vec::new())).await;
    check(parts, error)
}

#[test]
fn every_fixture_decodes_directly() {
    for expect in FIXTURES {
        verify(expect, &decode_lines(&lines_of(expect)));
    }
}

#[test]
fn every_fixture_in_both_directories_is_covered() {
    for dir in [OPENAI, LOCAL] {
        for entry in std::fs::read_dir(fixtures_dir().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().to_string();
            if !name.ends_with(".chunks.txt") {
                continue;
            }
            let covered = FIXTURES.iter().any(|e| e.file == name)
                || matches!(
                    name.as_str(),
                    "openai-error.1.chunks.txt" | "parallel-tool-call-wrapper.1.chunks.txt"
                );
            assert!(covered, "fixture {dir}/{name} has no expectation");
            let count = responses_of(dir, &name).len();
            let expected = FIXTURES.iter().filter(|e| e.file == name).count();
            assert!(
                expected == 0 || expected == count,
                "{name}: {count} responses, {expected} expectations"
            );
        }
    }
}

#[tokio::test]
async fn every_fixture_decodes_with_random_chunk_boundaries() {
    for expect in FIXTURES {
        let sse = sse_of(&lines_of(expect));
        // Tiny pieces for the small fixtures only: the SSE parser rescans a partial line on
        // each piece, and `response.completed` lines run to tens of kilobytes.
        let small = sse.len() < 12_000;
        if small {
            verify(expect, &decode_split(&sse, 1, 1).await);
        }
        let sizes: &[usize] = if small {
            &[5, 64, 1024]
        } else {
            &[29, 64, 1024]
        };
        for seed in 1..=3 {
            for &max in sizes {
                verify(expect, &decode_split(&sse, seed, max).await);
            }
        }
    }
}

#[test]
fn a_body_with_several_responses_stops_at_the_first() {
    for file in [
        "openai-reasoning-encrypted-content.1.chunks.txt",
        "openai-shell-tool.1.chunks.txt",
    ] {
        let all: Vec<String> = responses_of(OPENAI, file).concat();
        let whole = decode_lines(&all);
        let first = FIXTURES
            .iter()
            .find(|e| e.file == file && e.response == 0)
            .unwrap();
        verify(first, &whole);
    }
}

/// Parts with deltas merged and sources moved to the end (the stream interleaves them with the
/// text) with their generated ids blanked, for comparing two decodings.
fn normalised(parts: &[ModelPart]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut sources = Vec::new();
    for part in parts {
        let mut value = serde_json::to_value(part).unwrap();
        // OpenAI re-encrypts reasoning for each snapshot: only its presence can be compared.
        if let Some(encrypted) =
            value.pointer_mut("/providerMetadata/openai/reasoningEncryptedContent")
            && encrypted.is_string()
        {
            *encrypted = json!("<encrypted>");
        }
        if let ModelPart::Source(_) = part {
            let mut value = value;
            value["id"] = json!("");
            sources.push(value);
            continue;
        }
        let kind = value["type"].as_str().unwrap_or("").to_string();
        if kind.ends_with("-delta")
            && let Some(last) = out.last_mut()
            && last["type"] == value["type"]
            && last["id"] == value["id"]
        {
            let merged = format!(
                "{}{}",
                last["delta"].as_str().unwrap(),
                value["delta"].as_str().unwrap()
            );
            last["delta"] = json!(merged);
            continue;
        }
        out.push(value);
    }
    out.extend(sources);
    out
}

#[test]
fn non_streamed_bodies_decode_to_the_same_parts_as_their_streams() {
    for expect in FIXTURES {
        let lines = lines_of(expect);
        let completed: Value = lines
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["type"] == "response.completed")
            .unwrap();
        let body = &completed["response"];
        let streamed = decode_lines(&lines);
        let parts = decode_response(body).unwrap();
        let whole = check(parts, None);
        verify(expect, &whole);
        // The stream's `added` items can be emptier than its `done` ones, which is all that
        // differs: compare the parts from the first block on.
        assert_eq!(
            normalised(&whole.parts),
            normalised(&streamed.parts),
            "{}#{}",
            expect.file,
            expect.response
        );
    }
}

#[test]
fn the_recorded_non_streamed_bodies_decode() {
    let read = |dir: &str, file: &str| -> Value {
        let text = std::fs::read_to_string(fixtures_dir().join(dir).join(file)).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let s = check(
        decode_response(&read(OPENAI, "openai-web-search-tool.1.json")).unwrap(),
        None,
    );
    assert!(
        s.text.starts_with("Short answer first — yes."),
        "{}",
        s.text
    );
    let hosted = s.calls.iter().filter(|c| c.provider_executed).count();
    assert_eq!(hosted, 3);
    assert_eq!(s.usage.server_tool_uses, 3);
    assert_eq!(s.usage.input.total, Some(19681));
    assert_eq!(s.usage.input.cache_read, Some(3712));
    assert_eq!(s.usage.output.reasoning, Some(3136));
    let sources = s
        .parts
        .iter()
        .filter(|p| matches!(p, ModelPart::Source(x) if x.url.is_some()))
        .count();
    assert!(sources > 0);
    assert_eq!(s.finish.unwrap().unified, UnifiedFinishReason::Stop);

    let s = check(
        decode_response(&read(LOCAL, "lmstudio-tool-call.1.json")).unwrap(),
        None,
    );
    assert_eq!(s.calls.len(), 1);
    assert_eq!(s.calls[0].tool_call_id, "call_2866856768160095");
    assert_eq!(s.calls[0].input, r#"{"location":"San Francisco"}"#);
    assert_eq!(s.usage.input.cache_read, Some(891));
    assert_eq!(s.finish.unwrap().unified, UnifiedFinishReason::ToolCalls);

    // Failed and malformed bodies.
    let error = decode_response(
        &json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}}),
    )
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(
        decode_response(&json!([1])).unwrap_err().kind,
        ModelErrorKind::InvalidResponse
    );
}

fn quiet(model: OpenAiResponses) -> OpenAiResponses {
    model.with_http_settings(HttpSettings {
        retry: RetryPolicy::none(),
        idle_timeout: Duration::from_secs(10),
        ..HttpSettings::default()
    })
}

#[tokio::test]
async fn every_fixture_decodes_through_a_loopback_server() {
    let mut replies = Vec::new();
    let mut order = Vec::new();
    for expect in FIXTURES {
        let sse = sse_of(&lines_of(expect));
        for (seed, chunked) in [(11, true), (12, false), (13, true)] {
            replies.push(Reply::sse(sse.clone()).split(seed, 48, chunked));
            order.push(expect);
        }
    }
    let server = Server::start(replies).await;
    let model = quiet(OpenAiResponses::compatible("local", &server.base_url, None));
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    for expect in order {
        let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
        verify(expect, &check(parts, error));
    }
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.path == "/v1/responses"));
    assert!(requests.iter().all(|r| r.header("authorization").is_none()));
    assert!(requests.iter().all(|r| r.body["stream"] == true));
}

#[tokio::test]
async fn broken_fixtures_fail_cleanly_through_a_loopback_server() {
    let wrapper = sse_of(&responses_of(OPENAI, "parallel-tool-call-wrapper.1.chunks.txt")[0]);
    let error = sse_of(&responses_of(OPENAI, "openai-error.1.chunks.txt")[0]);
    let lines = responses_of(OPENAI, "openai-reasoning-encrypted-content.1.chunks.txt").remove(0);
    // Cut mid-arguments, without `[DONE]`.
    let truncated: String = lines[..20]
        .iter()
        .map(|l| format!("data: {l}\n\n"))
        .collect();
    let server = Server::start(vec![
        Reply::sse(wrapper).split(3, 17, true),
        Reply::sse(error).split(4, 9, false),
        Reply::sse(truncated).split(5, 33, true),
    ])
    .await;
    let model = quiet(OpenAiResponses::compatible("local", &server.base_url, None));
    let request = ModelRequest::default();
    let mut kinds = Vec::new();
    for _ in 0..3 {
        let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
        let s = check(parts, error);
        assert!(s.finish.is_none() && s.calls.is_empty());
        kinds.push(s.error.unwrap());
    }
    assert_eq!(kinds[0].kind, ModelErrorKind::InvalidResponse);
    assert_eq!(kinds[1].kind, ModelErrorKind::RateLimited);
    assert_eq!(kinds[2].message, TRUNCATED);
}

#[tokio::test]
async fn non_streamed_calls_go_through_the_same_decoder() {
    let text =
        std::fs::read_to_string(fixtures_dir().join(LOCAL).join("lmstudio-tool-call.1.json"))
            .unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    let server = Server::start(vec![Reply::json(200, body)]).await;
    let model =
        quiet(OpenAiResponses::compatible("local", &server.base_url, None)).with_streaming(false);
    let request = ModelRequest {
        messages: vec![Message::user("weather?")],
        settings: toolsmith_core::CallSettings {
            top_k: Some(3),
            ..Default::default()
        },
        ..Default::default()
    };
    let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
    let s = check(parts, error);
    assert!(s.error.is_none());
    assert_eq!(s.calls[0].tool_name, "weather");
    assert_eq!(
        s.warnings,
        ["top_k is not supported by openai-responses/local; ignored."]
    );
    let requests = server.requests();
    assert_eq!(requests[0].body["stream"], false);
    assert_eq!(requests[0].header("accept"), Some("application/json"));
}

#[test]
fn unknown_events_and_items_are_ignored() {
    let mut lines = responses_of(OPENAI, "openai-custom-tool.1.chunks.txt").remove(0);
    lines.insert(
        2,
        r#"{"type":"response.future_event","output_index":0,"x":1}"#.to_string(),
    );
    lines.insert(
        3,
        r#"{"type":"response.output_item.added","output_index":9,"item":{"type":"hologram","id":"h1"}}"#
            .to_string(),
    );
    lines.insert(
        4,
        r#"{"type":"response.output_item.done","output_index":9,"item":{"type":"hologram","id":"h1"}}"#
            .to_string(),
    );
    let expect = FIXTURES
        .iter()
        .find(|e| e.file == "openai-custom-tool.1.chunks.txt")
        .unwrap();
    verify(expect, &decode_lines(&lines));
    // A future event whose fields have other types than today's is ignored too.
    let mut odd = responses_of(OPENAI, "openai-custom-tool.1.chunks.txt").remove(0);
    odd.insert(
        2,
        r#"{"type":"response.hologram.delta","output_index":"zero","delta":{"x":1}}"#.to_string(),
    );
    verify(expect, &decode_lines(&odd));
    // Not an object, not JSON at all, or a known event of the wrong shape: clean errors.
    for bad in [
        "[1,2]",
        "{\"type\":",
        "\u{1F600}",
        r#"{"type":"response.output_text.delta","output_index":0,"delta":7}"#,
    ] {
        let error = decode_lines(&[bad]).error.unwrap();
        assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{bad}");
    }
    let error = decode_lines(&[r#"{"type":"response.output_text.delta","delta":7}"#])
        .error
        .unwrap();
    assert!(
        error
            .message
            .starts_with("Unexpected Responses event shape ("),
        "{}",
        error.message
    );
    // OpenAI's documented `error` event is flat: code and message on the event.
    let flat =
        [r#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null}"#];
    let error = decode_lines(&flat).error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(
        error.message,
        "The provider reported an error (rate_limit_exceeded): Slow down."
    );
}

#[test]
fn mutated_streams_never_panic_and_stay_balanced() {
    // Drop, duplicate and cut lines of every fixture at random: whatever comes out must keep
    // the stream invariants (balanced blocks, no call without its input, at most one finish).
    for expect in FIXTURES {
        let lines = lines_of(expect);
        for seed in 1..=40 {
            let mut rng = Rng::new(seed);
            let mut mutated = Vec::new();
            for line in &lines {
                match rng.below(12) {
                    0 => {}
                    1 => {
                        mutated.push(line.clone());
                        mutated.push(line.clone());
                    }
                    2 => {
                        let mut cut = rng.below(line.len().max(1));
                        while !line.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        mutated.push(line[..cut].to_string());
                    }
                    _ => mutated.push(line.clone()),
                }
            }
            let _ = decode_lines(&mutated);
            let body: Value = lines
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|e| e["type"] == "response.completed")
                .map(|e| e["response"].clone())
                .unwrap();
            // Items shuffled or mangled in a body: decoded or refused, never a panic.
            let mut shuffled = body.clone();
            if let Some(output) = shuffled["output"].as_array_mut() {
                output.reverse();
                if let Some(first) = output.first_mut() {
                    first["type"] = json!(["not", "a", "type"]);
                }
            }
            if let Ok(parts) = decode_response(&shuffled) {
                let _ = check(parts, None);
            }
        }
    }
}
