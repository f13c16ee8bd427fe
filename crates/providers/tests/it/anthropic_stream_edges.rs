//! Anthropic stream edge cases beyond the recorded fixtures: malformed payloads, in-stream
//! errors, unknown events, thinking signatures, error results, messages without
//! `message_stop`, and mangled event sequences that must never panic.

use crate::common::*;
use serde_json::json;
use toolsmith_core::{ModelErrorKind, ModelPart, UnifiedFinishReason};
use toolsmith_providers::anthropic::MessagesStreamDecoder;
use toolsmith_providers::decode::StreamDecoder;

fn decode_lines(sse: &str) -> Summary {
    let payloads: Vec<&str> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .collect();
    decode_with(MessagesStreamDecoder::new(), &payloads)
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

#[test]
fn malformed_error_and_unknown_events() {
    let start = r#"{"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}"#;
    let text =
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
    let delta =
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}"#;

    let s = decode_lines(&chunks_to_sse([
        start,
        text,
        delta,
        r#"{"type":"content_block_delta","index":0,"#,
    ]));
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error
            .message
            .starts_with("Malformed event in the Anthropic stream"),
        "{}",
        error.message
    );
    assert_eq!(s.text, "a");

    for (kind, expected) in [
        ("overloaded_error", ModelErrorKind::Server),
        ("api_error", ModelErrorKind::Server),
        ("rate_limit_error", ModelErrorKind::RateLimited),
        ("invalid_request_error", ModelErrorKind::InvalidRequest),
        ("authentication_error", ModelErrorKind::Auth),
        ("something_new", ModelErrorKind::Other),
    ] {
        let error_event =
            json!({"type": "error", "error": {"type": kind, "message": "Overloaded"}}).to_string();
        let s = decode_lines(&chunks_to_sse([start, text, delta, error_event.as_str()]));
        let error = s.error.unwrap();
        assert_eq!(error.kind, expected, "{kind}");
        assert_eq!(
            error.message,
            format!("Anthropic reported an error ({kind}): Overloaded")
        );
        assert!(s.finish.is_none());
    }

    // Unknown events, blocks and deltas are ignored; deltas of unknown blocks too.
    let s = decode_lines(&chunks_to_sse([
        start,
        r#"{"type":"brand_new_event","x":1}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"hologram","data":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"hologram_delta","x":"y"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"sparkle_delta"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}"#,
        r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"lost"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"no_type":true}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"output_tokens":3}}"#,
        r#"{"type":"message_stop"}"#,
    ]));
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.text, "ok");
    let finish = s.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::Other);
    assert_eq!(finish.raw.as_deref(), Some("pause_turn"));
    assert_eq!(s.usage.output.total, Some(3));
}

#[test]
fn thinking_and_redacted_thinking_carry_their_metadata() {
    let s = decode_lines(&chunks_to_sse([
        r#"{"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBsig=="}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"add","input":{}}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":40,"server_tool_use":{"web_search_requests":2,"code_execution_requests":1}}}"#,
        r#"{"type":"message_stop"}"#,
    ]));
    assert!(s.error.is_none());
    assert_eq!(s.reasoning, "Let me think.");
    let ends: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::ReasoningEnd {
                id,
                provider_metadata,
            } => Some((id.to_string(), provider_metadata.get("anthropic").cloned())),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("m:0".to_string(), Some(json!({"signature": "EqQBsig=="}))),
            (
                "m:1".to_string(),
                Some(json!({"redactedData": "EmwKAhgBEgy3va"}))
            ),
        ]
    );
    assert_eq!(s.calls[0].input, r#"{"a":1}"#);
    assert_eq!(s.usage.input.total, Some(115));
    assert_eq!(s.usage.input.no_cache, Some(10));
    assert_eq!(s.usage.input.cache_read, Some(100));
    assert_eq!(s.usage.input.cache_write, Some(5));
    assert_eq!(s.usage.output.total, Some(40));
    assert_eq!(s.usage.server_tool_uses, 3);
    let finish = s.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::Length);
}

#[test]
fn a_web_search_error_result_has_no_sources_and_does_not_break_the_stream() {
    let s = decode_lines(&chunks_to_sse([
        r#"{"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":"Sorry."}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}"#,
        r#"{"type":"message_stop"}"#,
    ]));
    assert!(s.error.is_none());
    assert_eq!(s.text, "Sorry.");
    assert_eq!(s.calls[0].input, r#"{"query":"x"}"#);
    assert!(s.calls[0].provider_executed);
    let results = tool_results(&s.parts);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "an *_error content is an error result");
    assert!(sources(&s.parts).is_empty());
    let result = s
        .parts
        .iter()
        .find_map(|p| match p {
            ModelPart::ToolResult {
                tool_name, result, ..
            } => Some((tool_name.clone(), result.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        result,
        (
            "web_search".to_string(),
            json!({"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"})
        )
    );
}

#[test]
fn a_new_message_without_message_stop_continues_the_response() {
    let s = decode_lines(&chunks_to_sse([
        r#"{"type":"message_start","message":{"id":"msg_a","model":"c","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"One."}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        // Same id again: a duplicate, ignored.
        r#"{"type":"message_start","message":{"id":"msg_a","model":"c","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}"#,
        // A new id after complete blocks: msg_a is over, msg_b goes on.
        r#"{"type":"message_start","message":{"id":"msg_b","model":"c","content":[{"type":"tool_use","id":"toolu_x","name":"f","input":{"k":[1,2]}}],"stop_reason":"tool_use","usage":{"input_tokens":7,"output_tokens":2}}}"#,
        r#"{"type":"message_stop"}"#,
    ]));
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.text, "One.");
    assert_eq!(s.calls.len(), 1);
    assert_eq!(s.calls[0].input, r#"{"k":[1,2]}"#);
    assert_eq!(s.usage.input.total, Some(12));
    assert_eq!(s.usage.output.total, Some(3));
    let finish = s.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::ToolCalls);
}

/// Two tool blocks with one id (a server repeating it) were two calls with the same id, the
/// second's input started while the first's was open: anything keyed by the call id (results,
/// approvals, the journal) would take them for one. The second gets a generated id, as an id
/// the server had already used for a generated one is not reused either. Found by fuzzing.
#[test]
fn a_repeated_tool_id_is_replaced_by_a_generated_one() {
    let s = decode_lines(&chunks_to_sse([
        r#"{"type":"message_start","message":{"id":"msg_a","model":"c","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"g","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\":1}"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"y\":2}"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_generated_1","name":"h","input":{"z":3}}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ]));
    assert!(s.error.is_none(), "{:?}", s.error);
    let calls: Vec<(&str, &str, &str)> = s
        .calls
        .iter()
        .map(|c| (&*c.tool_call_id, &*c.tool_name, &*c.input))
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_1", "f", r#"{"x":1}"#),
            ("toolu_generated_1", "g", r#"{"y":2}"#),
            ("toolu_generated_2", "h", r#"{"z":3}"#),
        ]
    );
    let starts = s
        .parts
        .iter()
        .filter(|p| matches!(p, ModelPart::ToolInputStart { .. }))
        .count();
    assert_eq!(starts, 3);
}

/// Bad input never panics: fixture events shuffled, dropped, duplicated and cut short.
#[test]
fn shuffled_and_mangled_events_never_panic() {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(fixtures_dir().join("anthropic")).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".chunks.txt") {
            let text = std::fs::read_to_string(path).unwrap();
            lines.extend(text.lines().map(str::to_string));
        }
    }
    let mut rng = Rng::new(42);
    for round in 0..300 {
        let mut decoder = MessagesStreamDecoder::new();
        let mut parts = Vec::new();
        for _ in 0..(1 + rng.below(60)) {
            let line = &lines[rng.below(lines.len())];
            let data = match rng.below(4) {
                0 => {
                    let mut cut = rng.below(line.len() + 1);
                    while !line.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    line[..cut].to_string()
                }
                _ => line.clone(),
            };
            if decoder.push(&data, &mut parts).is_err() {
                break;
            }
        }
        let _ = decoder.finish(&mut parts);
        let finishes = parts
            .iter()
            .filter(|p| matches!(p, ModelPart::Finish { .. }))
            .count();
        assert!(finishes <= 1, "round {round}");
    }
}
