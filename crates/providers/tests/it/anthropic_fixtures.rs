//! Every Anthropic Messages fixture replayed through the decoder: directly, with random chunk
//! boundaries, and through a loopback HTTP server; the non-streamed bodies through
//! `decode_response`.

use std::convert::Infallible;
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_core::{
    LanguageModel, Message, ModelErrorKind, ModelPart, ModelRequest, UnifiedFinishReason,
};
use toolsmith_providers::ModelBuilder;
use toolsmith_providers::anthropic::{
    AnthropicMessages, MessagesStreamDecoder, TRUNCATED, decode_response,
};
use toolsmith_providers::decode::decode_sse;
use toolsmith_providers::{HttpSettings, RetryPolicy};

const DIR: &str = "anthropic";

/// Exact usage: (input total, no_cache, cache_read, cache_write, output, server tool uses).
type Tokens = (u64, u64, Option<u64>, Option<u64>, u64, u64);

/// What each fixture must decode to.
struct Expect {
    file: &'static str,
    text_prefix: &'static str,
    text_len: usize,
    reasoning: &'static str,
    /// (name, input JSON or "" for any valid JSON object, provider-executed).
    calls: &'static [(&'static str, &'static str, bool)],
    /// (tool_use_id, block type, is_error).
    results: &'static [(&'static str, &'static str, bool)],
    sources: usize,
    usage: Tokens,
    finish: UnifiedFinishReason,
    raw: &'static str,
}

const P1: (&str, &str, bool) = ("rollDie", r#"{"player":"player1"}"#, false);
const P2: (&str, &str, bool) = ("rollDie", r#"{"player":"player2"}"#, false);

const FIXTURES: &[Expect] = &[
    Expect {
        file: "anthropic-text.chunks.txt",
        text_prefix: "Hello! I'm doing well, thank you for asking.",
        text_len: 108,
        reasoning: "",
        calls: &[],
        results: &[],
        sources: 0,
        usage: (12, 12, Some(0), Some(0), 30, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        file: "anthropic-tool-no-args.chunks.txt",
        text_prefix: "I'll update the issue list for you.",
        text_len: 35,
        reasoning: "",
        calls: &[("updateIssueList", "{}", false)],
        results: &[],
        sources: 0,
        usage: (565, 565, Some(0), Some(0), 48, 0),
        finish: UnifiedFinishReason::ToolCalls,
        raw: "tool_use",
    },
    Expect {
        file: "anthropic-json-tool.1.chunks.txt",
        text_prefix: "",
        text_len: 0,
        reasoning: "",
        calls: &[(
            "json",
            r#"{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}"#,
            false,
        )],
        results: &[],
        sources: 0,
        usage: (849, 849, Some(0), Some(0), 47, 0),
        finish: UnifiedFinishReason::ToolCalls,
        raw: "tool_use",
    },
    Expect {
        file: "anthropic-json-tool.2.chunks.txt",
        text_prefix: "I'll invoke the JSON response tool.",
        text_len: 35,
        reasoning: "",
        calls: &[(
            "json",
            r#"{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}"#,
            false,
        )],
        results: &[],
        sources: 0,
        usage: (849, 849, Some(0), Some(0), 47, 0),
        finish: UnifiedFinishReason::ToolCalls,
        raw: "tool_use",
    },
    Expect {
        file: "anthropic-web-search-tool.1.chunks.txt",
        text_prefix: "Based on my search results, here are the key tech news",
        text_len: 2402,
        reasoning: "",
        calls: &[(
            "web_search",
            r#"{"query": "tech news today September 26 2025"}"#,
            true,
        )],
        results: &[(
            "srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k",
            "web_search_tool_result",
            false,
        )],
        sources: 10,
        usage: (15665, 15665, Some(0), Some(0), 795, 1),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        file: "anthropic-web-fetch-tool.1.chunks.txt",
        text_prefix: "I'll fetch the content from that Wikipedia page",
        text_len: 1666,
        reasoning: "",
        calls: &[("web_fetch", "", true)],
        results: &[(
            "srvtoolu_01VNMRfQny2LCrLKEdYaVcCe",
            "web_fetch_tool_result",
            false,
        )],
        sources: 0,
        usage: (4230, 4230, Some(0), Some(0), 446, 1),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        file: "anthropic-mcp.1.chunks.txt",
        text_prefix: "The echo tool responded back with: **hello world**",
        text_len: 112,
        reasoning: "",
        calls: &[("echo", r#"{"message": "hello world"}"#, true)],
        results: &[(
            "mcptoolu_017CuqaJcXe5ZHJjaz3KS1AT",
            "mcp_tool_result",
            false,
        )],
        sources: 0,
        usage: (1250, 1250, Some(0), Some(0), 83, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        file: "anthropic-code-execution-20250825.1.chunks.txt",
        text_prefix: "I'll create a Python script to calculate Fibonacci numbers",
        text_len: 795,
        reasoning: "",
        calls: &[
            ("text_editor_code_execution", "", true),
            ("bash_code_execution", "", true),
        ],
        results: &[
            (
                "srvtoolu_0112cP8RpnKv67t2cscmN4ia",
                "text_editor_code_execution_tool_result",
                false,
            ),
            (
                "srvtoolu_01K2E2j5mkxbtLqNBc6RJHds",
                "bash_code_execution_tool_result",
                false,
            ),
        ],
        sources: 0,
        usage: (8050, 8050, Some(0), Some(0), 771, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        // 14 messages: usage summed, finish from the last one.
        file: "anthropic-programmatic-tool-calling.1.chunks.txt",
        text_prefix: "I'll help you simulate this game between two players",
        text_len: 835,
        reasoning: "",
        calls: &[
            ("code_execution", "", true),
            P1,
            P2,
            P1,
            P2,
            P1,
            P2,
            P1,
            P2,
            P1,
            P2,
            P1,
            P2,
            P1,
            P2,
        ],
        results: &[(
            "srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK",
            "code_execution_tool_result",
            false,
        )],
        sources: 0,
        usage: (3369 + 4551, 3369 + 4551, Some(0), Some(0), 725 + 197, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        file: "anthropic-tool-search-regex.1.chunks.txt",
        text_prefix: "",
        text_len: 325,
        reasoning: "",
        calls: &[
            ("tool_search_tool_regex", "", true),
            (
                "get_temp_data",
                r#"{"location": "San Francisco, CA"}"#,
                false,
            ),
        ],
        results: &[(
            "srvtoolu_01TFsKhwiJYqVMitK2XGtH87",
            "tool_search_tool_result",
            false,
        )],
        sources: 0,
        usage: (1681 + 1071, 1681 + 1071, Some(0), Some(0), 163 + 67, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        // input_tokens late in message_delta wins; no cache fields at all.
        file: "anthropic-message-delta-input-tokens.chunks.txt",
        text_prefix: "pong",
        text_len: 4,
        reasoning: "",
        calls: &[],
        results: &[],
        sources: 0,
        usage: (61, 61, None, None, 2, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        file: "anthropic-refusal.chunks.txt",
        text_prefix: "",
        text_len: 0,
        reasoning: "",
        calls: &[],
        results: &[],
        sources: 0,
        usage: (18, 18, Some(0), Some(0), 5, 0),
        finish: UnifiedFinishReason::ContentFilter,
        raw: "refusal",
    },
    Expect {
        file: "anthropic-fallback.chunks.txt",
        text_prefix: "The printing press was invented by Johannes Gutenberg around 1440.",
        text_len: 66,
        reasoning: "",
        calls: &[],
        results: &[],
        sources: 0,
        usage: (412, 412, Some(0), Some(0), 264, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
    Expect {
        file: "duplicate-message-start.chunks.txt",
        text_prefix: "Hello, World!",
        text_len: 13,
        reasoning: "",
        calls: &[],
        results: &[],
        sources: 0,
        usage: (17, 17, None, None, 227, 0),
        finish: UnifiedFinishReason::Stop,
        raw: "end_turn",
    },
];

const SPLICED: &str = "spliced-message-start.chunks.txt";

fn verify(expect: &Expect, summary: &Summary) {
    let file = expect.file;
    assert!(summary.error.is_none(), "{file}: {:?}", summary.error);
    assert!(
        summary.text.starts_with(expect.text_prefix),
        "{file}: text {:?}",
        summary.text
    );
    assert_eq!(summary.text.len(), expect.text_len, "{file}");
    assert_eq!(summary.reasoning, expect.reasoning, "{file}");

    assert_eq!(summary.calls.len(), expect.calls.len(), "{file}");
    for (call, (name, input, provider_executed)) in summary.calls.iter().zip(expect.calls) {
        assert_eq!(call.tool_name, *name, "{file}");
        assert_eq!(call.provider_executed, *provider_executed, "{file}: {name}");
        let got: Value = serde_json::from_str(&call.input)
            .unwrap_or_else(|e| panic!("{file}: {name} input {:?}: {e}", call.input));
        assert!(got.is_object(), "{file}: {name}");
        if !input.is_empty() {
            let want: Value = serde_json::from_str(input).unwrap();
            assert_eq!(got, want, "{file}: {name}");
        }
    }

    // Provider-executed calls and results pair up by id, the call first.
    let results = tool_results(&summary.parts);
    let got: Vec<(&str, &str, bool)> = results
        .iter()
        .map(|(id, kind, error, _)| (id.as_str(), kind.as_str(), *error))
        .collect();
    assert_eq!(got, expect.results, "{file}");
    let server_calls: Vec<&str> = summary
        .calls
        .iter()
        .filter(|c| c.provider_executed)
        .map(|c| c.tool_call_id.as_str())
        .collect();
    assert_eq!(server_calls.len(), results.len(), "{file}");
    for (id, _, _, position) in &results {
        let call_at = summary
            .parts
            .iter()
            .position(|p| matches!(p, ModelPart::ToolCall(c) if &c.tool_call_id == id))
            .unwrap_or_else(|| panic!("{file}: result {id} has no call"));
        assert!(call_at < *position, "{file}: result {id} before its call");
    }

    let sources = sources(&summary.parts);
    assert_eq!(sources.len(), expect.sources, "{file}");
    if let Some((id, _, _, _)) = results.first() {
        for (i, (source_id, url, _)) in sources.iter().enumerate() {
            assert_eq!(source_id, &format!("{id}:{i}"), "{file}");
            assert!(url.starts_with("https://"), "{file}");
        }
    }

    let finish = summary.finish.as_ref().expect("finish");
    assert_eq!(finish.unified, expect.finish, "{file}");
    assert_eq!(finish.raw.as_deref(), Some(expect.raw), "{file}");
    let (total, no_cache, read, write, output, server) = expect.usage;
    let usage = summary.usage;
    assert_eq!(usage.input.total, Some(total), "{file}");
    assert_eq!(usage.input.no_cache, Some(no_cache), "{file}");
    assert_eq!(usage.input.cache_read, read, "{file}");
    assert_eq!(usage.input.cache_write, write, "{file}");
    assert_eq!(usage.output.total, Some(output), "{file}");
    assert_eq!(usage.server_tool_uses, server, "{file}");

    // Metadata comes once, first after the stream start.
    assert!(
        matches!(
            summary.parts.get(1),
            Some(ModelPart::ResponseMetadata {
                id: Some(_),
                model_id: Some(_)
            })
        ),
        "{file}"
    );
    assert_eq!(
        summary
            .parts
            .iter()
            .filter(|p| matches!(p, ModelPart::ResponseMetadata { .. }))
            .count(),
        1,
        "{file}"
    );
}

/// (tool_use_id, block type, is_error, position) of every provider-executed result.
fn tool_results(parts: &[ModelPart]) -> Vec<(String, String, bool, usize)> {
    parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            ModelPart::ToolResult {
                tool_call_id,
                is_error,
                provider_metadata,
                ..
            } => Some((
                tool_call_id.clone(),
                provider_metadata.get("anthropic").unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                *is_error,
                i,
            )),
            _ => None,
        })
        .collect()
}

fn sources(parts: &[ModelPart]) -> Vec<(String, String, Option<String>)> {
    parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::Source(s) => {
                assert_eq!(s.source_type, "url");
                Some((s.id.clone(), s.url.clone().unwrap(), s.title.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The fixture as Anthropic sends it: `event: <type>` before each `data:`.
fn fixture_with_event_names(file: &str) -> String {
    let text = std::fs::read_to_string(fixtures_dir().join(DIR).join(file)).unwrap();
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let kind = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_string))
            .unwrap_or_else(|| "message".into());
        out.push_str(&format!("event: {kind}\ndata: {line}\n\n"));
    }
    out
}

fn decode_lines(sse: &str) -> Summary {
    let payloads: Vec<&str> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .collect();
    decode_with(MessagesStreamDecoder::new(), &payloads)
}

async fn decode_split(sse: &str, seed: u64, max: usize) -> Summary {
    let pieces = random_split(sse.as_bytes(), seed, max);
    let bytes = futures::stream::iter(pieces.into_iter().map(Ok::<_, Infallible>));
    let decoder = MessagesStreamDecoder::new();
    let (parts, error) = collect(decode_sse(bytes, None, decoder, Vec::new())).await;
    check(parts, error)
}

#[test]
fn every_fixture_decodes_directly() {
    for expect in FIXTURES {
        verify(expect, &decode_lines(&fixture_sse(DIR, expect.file)));
        // Without the [DONE] sentinel (as Anthropic really ends), and with event names.
        verify(
            expect,
            &decode_lines(&fixture_with_event_names(expect.file)),
        );
    }
}

#[test]
fn every_fixture_in_the_directory_is_covered() {
    for entry in std::fs::read_dir(fixtures_dir().join(DIR)).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".chunks.txt") {
            assert!(
                name == SPLICED || FIXTURES.iter().any(|e| e.file == name),
                "fixture {name} has no expectation"
            );
        }
    }
}

#[tokio::test]
async fn every_fixture_decodes_with_random_chunk_boundaries() {
    for expect in FIXTURES {
        let sse = fixture_with_event_names(expect.file);
        // One-byte pieces for the small fixtures (debug builds make it slow for the large ones).
        if sse.len() < 8_000 {
            verify(expect, &decode_split(&sse, 1, 1).await);
        }
        for seed in 1..=2 {
            for max in [31, 257, 4096] {
                verify(expect, &decode_split(&sse, seed, max).await);
            }
        }
    }
}

#[tokio::test]
async fn every_fixture_decodes_through_a_loopback_server() {
    let mut replies = Vec::new();
    let mut order = Vec::new();
    for expect in FIXTURES {
        for (seed, chunked, events) in [(11, true, true), (12, false, false)] {
            let sse = if events {
                fixture_with_event_names(expect.file)
            } else {
                fixture_sse(DIR, expect.file)
            };
            replies.push(Reply::sse(sse).split(seed, 512, chunked));
            order.push(expect);
        }
    }
    let server = Server::start(replies).await;
    let model = AnthropicMessages::new("claude-test", Some("sk-ant-test"), Some(&server.base_url))
        .unwrap()
        .with_http_settings(HttpSettings {
            retry: RetryPolicy::none(),
            idle_timeout: Duration::from_secs(10),
            ..HttpSettings::default()
        });
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    for expect in order {
        let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
        verify(expect, &check(parts, error));
    }
    for received in server.requests() {
        assert_eq!(received.path, "/v1/messages");
        assert_eq!(received.header("x-api-key"), Some("sk-ant-test"));
        assert_eq!(received.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(received.header("accept"), Some("text/event-stream"));
        assert_eq!(received.body["stream"], true);
    }
}

#[test]
fn web_search_results_become_sources_and_text_citations_stay_metadata() {
    let summary = decode_lines(&fixture_sse(DIR, "anthropic-web-search-tool.1.chunks.txt"));
    let sources = sources(&summary.parts);
    assert_eq!(
        sources[0],
        (
            "srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k:0".to_string(),
            "https://www.crescendo.ai/news/latest-ai-news-and-updates".to_string(),
            Some("The Latest AI News and AI Breakthroughs that Matter Most: 2025 | News".into())
        )
    );
    // The 14 citations_delta are kept on their text blocks, verbatim.
    let citations: Vec<&Value> = summary
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::TextEnd {
                provider_metadata, ..
            } => provider_metadata.get("anthropic"),
            _ => None,
        })
        .flat_map(|m| m["citations"].as_array().unwrap())
        .collect();
    assert_eq!(citations.len(), 14);
    assert_eq!(citations[0]["type"], "web_search_result_location");
    assert!(citations[0]["encrypted_index"].is_string());
    // The provider-executed call keeps its block type for the echo.
    let call = &summary.calls[0];
    assert_eq!(
        call.provider_metadata.get("anthropic"),
        Some(&json!({"type": "server_tool_use"}))
    );
}

#[test]
fn refusal_fallback_and_container_reach_the_finish_metadata() {
    let finish_metadata = |file: &str| {
        let summary = decode_lines(&fixture_sse(DIR, file));
        match summary.parts.last() {
            Some(ModelPart::Finish {
                provider_metadata, ..
            }) => provider_metadata
                .get("anthropic")
                .cloned()
                .unwrap_or_default(),
            other => panic!("{file}: {other:?}"),
        }
    };
    let refusal = finish_metadata("anthropic-refusal.chunks.txt");
    assert_eq!(refusal["stop_details"]["category"], "cyber");
    let fallback = finish_metadata("anthropic-fallback.chunks.txt");
    assert_eq!(
        fallback["fallback"],
        json!({"from": {"model": "claude-fable-5"}, "to": {"model": "claude-opus-4-8"}})
    );
    let code = finish_metadata("anthropic-code-execution-20250825.1.chunks.txt");
    assert_eq!(
        code["container"]["id"],
        "container_011CU6pTr2hLT47seQ5Xs4yj"
    );
    // The refusal has no content blocks at all.
    let summary = decode_lines(&fixture_sse(DIR, "anthropic-refusal.chunks.txt"));
    assert!(
        summary
            .parts
            .iter()
            .all(|p| !matches!(p, ModelPart::TextStart { .. }))
    );
}

#[test]
fn programmatic_calls_keep_their_caller() {
    let summary = decode_lines(&fixture_sse(
        DIR,
        "anthropic-programmatic-tool-calling.1.chunks.txt",
    ));
    let caller = json!({"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK"}});
    let roll: Vec<_> = summary
        .calls
        .iter()
        .filter(|c| c.tool_name == "rollDie")
        .collect();
    assert_eq!(roll.len(), 14);
    assert!(
        roll.iter()
            .all(|c| c.provider_metadata.get("anthropic") == Some(&caller))
    );
    assert_eq!(
        summary.calls[0].provider_metadata.get("anthropic"),
        Some(&json!({"type": "server_tool_use", "caller": {"type": "direct"}}))
    );
}

#[tokio::test]
async fn a_spliced_stream_is_an_error_without_tool_call_or_finish() {
    for sse in [fixture_sse(DIR, SPLICED), fixture_with_event_names(SPLICED)] {
        let direct = decode_lines(&sse);
        for summary in [direct, decode_split(&sse, 3, 7).await] {
            let error = summary.error.as_ref().expect("an error");
            assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
            assert_eq!(
                error.message,
                "A second message started (msg_second) while the input of tool call \"test-tool\" (content block 1 of msg_first) was still open: the Anthropic stream is spliced."
            );
            assert!(summary.calls.is_empty());
            assert!(summary.finish.is_none());
            assert_eq!(summary.reasoning, "I will call the tool.");
            // The first thinking block ended normally, with its signature.
            assert!(summary.parts.iter().any(|p| matches!(
                p,
                ModelPart::ReasoningEnd { provider_metadata, .. }
                    if provider_metadata.get("anthropic") == Some(&json!({"signature": "sig-first"}))
            )));
            // The open tool input was ended.
            assert!(matches!(
                summary.parts.last(),
                Some(ModelPart::ToolInputEnd { id }) if &**id == "toolu_first"
            ));
        }
    }
}

#[test]
fn truncated_streams_close_what_is_open_and_report_it() {
    let file = fixtures_dir()
        .join(DIR)
        .join("anthropic-tool-search-regex.1.chunks.txt");
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Every prefix that stops before the final message_stop is truncated.
    for cut in 0..lines.len() {
        if cut > 0 && lines[cut - 1].contains("\"message_stop\"") {
            // Between two messages the stream looks complete (see the decoder's docs).
            continue;
        }
        let sse: String = lines[..cut]
            .iter()
            .map(|l| format!("data: {l}\n\n"))
            .collect();
        let summary = decode_lines(&sse);
        let error = summary.error.expect("truncated");
        assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
        assert_eq!(error.message, TRUNCATED);
        // Only calls whose block stopped were emitted.
        assert!(summary.calls.len() <= 2);
    }
    // Mid-input: the open tool input is ended, no call.
    let sse: String = lines[..28]
        .iter()
        .map(|l| format!("data: {l}\n\n"))
        .collect();
    let summary = decode_lines(&sse);
    assert!(summary.calls.iter().all(|c| c.tool_name != "get_temp_data"));
    assert!(summary.parts.iter().any(
        |p| matches!(p, ModelPart::ToolInputEnd { id } if &**id == "toolu_01UmPwkecewaEpMupy2ywk8b")
    ));
}

fn load_json(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures_dir().join(DIR).join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn non_streamed_bodies_decode_to_the_same_parts() {
    let parts = decode_response(&load_json("anthropic-text.json")).unwrap();
    let s = check(parts, None);
    assert_eq!(
        s.text,
        "Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?"
    );
    assert_eq!(s.usage.input.total, Some(12));
    assert_eq!(s.usage.output.total, Some(29));
    assert_eq!(s.finish.unwrap().raw.as_deref(), Some("end_turn"));

    let parts = decode_response(&load_json("anthropic-web-search-tool.1.json")).unwrap();
    let s = check(parts, None);
    let calls: Vec<_> = s
        .calls
        .iter()
        .map(|c| (c.tool_call_id.as_str(), c.provider_executed))
        .collect();
    assert_eq!(
        calls,
        [
            ("srvtoolu_01Qxbje4duKBes3Nj42MkZug", true),
            ("srvtoolu_01HyorfKHSCsjCUVH6WHcNUC", true)
        ]
    );
    let results = tool_results(&s.parts);
    assert_eq!(results.len(), 2);
    let sources = sources(&s.parts);
    assert!(!sources.is_empty());
    assert!(
        sources
            .iter()
            .all(|(id, _, _)| id.starts_with("srvtoolu_01Qxbje4duKBes3Nj42MkZug:"))
    );
    assert_eq!(s.usage.input.total, Some(27118));
    assert_eq!(s.usage.output.total, Some(600));
    assert_eq!(s.usage.server_tool_uses, 2);
    assert_eq!(s.finish.unwrap().unified, UnifiedFinishReason::Stop);

    let parts = decode_response(&load_json("anthropic-web-fetch-tool.error.json")).unwrap();
    let s = check(parts, None);
    let results = tool_results(&s.parts);
    assert_eq!(
        results
            .iter()
            .map(|(id, kind, error, _)| (id.as_str(), kind.as_str(), *error))
            .collect::<Vec<_>>(),
        [(
            "srvtoolu_013gia34XNKyTfwHxaPCKEVd",
            "web_fetch_tool_result",
            true
        )]
    );
    assert_eq!(s.usage.server_tool_uses, 1);

    let error = decode_response(
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
    .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Server);
    let error = decode_response(&json!({"hello": 1})).unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
}

#[tokio::test]
async fn non_streamed_calls_over_http() {
    let server = Server::start(vec![
        Reply::json(200, load_json("anthropic-web-search-tool.1.json")),
        Reply::json(200, load_json("anthropic-text.json")),
    ])
    .await;
    let model = AnthropicMessages::new("claude-test", Some("sk-ant-test"), Some(&server.base_url))
        .unwrap()
        .with_streaming(false);
    let request = ModelRequest {
        messages: vec![Message::user("news?")],
        ..Default::default()
    };
    let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
    let s = check(parts, error);
    assert_eq!(s.calls.len(), 2);
    assert_eq!(s.usage.server_tool_uses, 2);
    let (parts, error) = collect(model.stream(&request).await.unwrap()).await;
    let s = check(parts, error);
    assert!(s.text.starts_with("Hello!"));
    let requests = server.requests();
    assert_eq!(requests[0].body["stream"], false);
    assert_eq!(requests[0].header("accept"), Some("application/json"));
    // Streamed and non-streamed decode the same way: compare the text fixture's stream.
    let streamed = decode_lines(&fixture_sse(DIR, "anthropic-text.chunks.txt"));
    let kinds = |parts: &[ModelPart]| -> Vec<String> {
        parts
            .iter()
            .map(|p| {
                serde_json::to_value(p).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .filter(|t| t != "text-delta")
            .collect()
    };
    let body = decode_response(&load_json("anthropic-text.json")).unwrap();
    assert_eq!(kinds(&streamed.parts), kinds(&body));
}
