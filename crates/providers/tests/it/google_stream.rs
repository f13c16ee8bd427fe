//! Synthetic Gemini streams: missing terminators, wire ids, unusual argument values, grounding,
//! code execution, finish reasons, and broken streams that must end in clean errors.

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_core::{ModelErrorKind, ModelPart, UnifiedFinishReason};
use toolsmith_providers::google::{GeminiStreamDecoder, decode_response};

const TEXT: &str = "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y";

/// A fixture's lines (the `data:` payloads).
fn lines(file: &str) -> Vec<String> {
    let path = fixtures_dir().join("google").join(file);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path:?}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn signature_of(metadata: &toolsmith_core::ProviderMetadata) -> Option<&str> {
    metadata.get("google")?.get("thoughtSignature")?.as_str()
}

fn decode_payloads<S: AsRef<str>>(payloads: &[S]) -> Summary {
    decode_with(GeminiStreamDecoder::new(), payloads)
}

fn chunk(parts: Value) -> String {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}}]}).to_string()
}

fn last(parts: Value, finish: &str) -> String {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
        "usageMetadata": {"promptTokenCount": 10, "cachedContentTokenCount": 4,
            "candidatesTokenCount": 5, "thoughtsTokenCount": 2}
    })
    .to_string()
}

#[test]
fn missing_terminators_wire_ids_and_unusual_values() {
    let payloads = [
        chunk(json!([{"text": "Let me ", "thought": true}])),
        chunk(json!([{"text": "think.", "thought": true, "thoughtSignature": "sig-r"}])),
        // Streamed, never terminated: the next named call ends it.
        chunk(
            json!([{"functionCall": {"name": "a", "willContinue": true, "id": "fc_1"},
            "thoughtSignature": "sig-a"}]),
        ),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.q", "stringValue": "é\"\n", "willContinue": true},
            {"jsonPath": "$.n", "numberValue": 3.0},
            {"jsonPath": "$.f", "boolValue": false},
            {"jsonPath": "$.z", "nullValue": null},
            {"jsonPath": "$['odd key'][1]", "numberValue": 0.25},
            {"jsonPath": "$.obj", "structValue": {"k": [1]}}
        ], "willContinue": true}}])),
        // A second call reusing the wire id gets a fresh id.
        chunk(json!([{"functionCall": {"name": "b", "args": {"x": 1}, "id": "fc_1"}}])),
        // Streamed, cut by text: the text ends it.
        chunk(json!([{"functionCall": {"name": "c", "willContinue": true}}])),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.s", "stringValue": "par", "willContinue": true}], "willContinue": true}}])),
        chunk(json!([{"text": "Done."}, {"somethingNew": {"code": "1"}}, {"videoMetadata": {}}])),
        // Streamed, cut by the finish reason.
        chunk(json!([{"functionCall": {"name": "d", "willContinue": true}}])),
        last(
            json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.list[0]", "stringValue": "x", "willContinue": true}], "willContinue": true}}]),
            "STOP",
        ),
    ];
    let s = decode_payloads(&payloads);
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.reasoning, "Let me think.");
    assert_eq!(s.text, "Done.");
    let calls: Vec<(&str, &str)> = s
        .calls
        .iter()
        .map(|c| (c.tool_name.as_str(), c.input.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "a",
                r#"{"q":"é\"\n","n":3,"f":false,"z":null,"odd key":[null,0.25],"obj":{"k":[1]}}"#
            ),
            ("b", r#"{"x":1}"#),
            ("c", r#"{"s":"par"}"#),
            ("d", r#"{"list":["x"]}"#),
        ]
    );
    assert_eq!(s.calls[0].tool_call_id, "fc_1");
    assert_eq!(
        s.calls[0].provider_metadata.get("google").unwrap(),
        &json!({"thoughtSignature": "sig-a", "id": "fc_1"})
    );
    assert_ne!(s.calls[1].tool_call_id, "fc_1");
    assert_eq!(
        s.calls[1].provider_metadata.get("google").unwrap()["id"],
        "fc_1"
    );
    let reasoning_end = s.parts.iter().find_map(|p| match p {
        ModelPart::ReasoningEnd {
            provider_metadata, ..
        } => signature_of(provider_metadata),
        _ => None,
    });
    assert_eq!(reasoning_end, Some("sig-r"));
    let finish = s.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::ToolCalls);
    assert_eq!(s.usage.input.total, Some(10));
    assert_eq!(s.usage.input.cache_read, Some(4));
    assert_eq!(s.usage.input.no_cache, Some(6));
    assert_eq!(s.usage.output.total, Some(7));
}

#[test]
fn grounding_becomes_sources_and_search_counts() {
    let grounding = json!({
        "webSearchQueries": ["rust 2024 edition", "rust release date"],
        "groundingChunks": [
            {"web": {"uri": "https://blog.rust-lang.org/a", "title": "Rust Blog"}},
            {"web": {"uri": "https://doc.rust-lang.org/edition-guide"}},
            {"retrievedContext": {"uri": "gs://x"}}
        ]
    });
    let payloads = [
        chunk(json!([{"text": "Rust 2024 shipped."}])),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": "STOP", "groundingMetadata": grounding}]})
        .to_string(),
        // Repeated metadata adds nothing.
        json!({"candidates": [{"groundingMetadata": grounding}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}})
        .to_string(),
    ];
    let s = decode_payloads(&payloads);
    let sources: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::Source(source) => Some(source.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sources.len(), 2);
    assert_eq!(sources[0].source_type, "url");
    assert_eq!(
        sources[0].url.as_deref(),
        Some("https://blog.rust-lang.org/a")
    );
    assert_eq!(sources[0].title.as_deref(), Some("Rust Blog"));
    assert_eq!(sources[1].title, None);
    assert_ne!(sources[0].id, sources[1].id);
    assert_eq!(s.usage.server_tool_uses, 2);
    assert_eq!(s.usage.output.total, Some(4));
    assert_eq!(s.finish.unwrap().unified, UnifiedFinishReason::Stop);
}

#[test]
fn finish_reasons_map_to_the_unified_vocabulary() {
    let cases = [
        ("MAX_TOKENS", UnifiedFinishReason::Length),
        ("SAFETY", UnifiedFinishReason::ContentFilter),
        ("RECITATION", UnifiedFinishReason::ContentFilter),
        ("PROHIBITED_CONTENT", UnifiedFinishReason::ContentFilter),
        ("MALFORMED_FUNCTION_CALL", UnifiedFinishReason::Error),
        ("LANGUAGE", UnifiedFinishReason::Other),
        ("SOMETHING_NEW", UnifiedFinishReason::Other),
    ];
    for (raw, unified) in cases {
        let s = decode_payloads(&[last(json!([{"text": "x"}]), raw)]);
        let finish = s.finish.unwrap();
        assert_eq!(
            (finish.unified, finish.raw.as_deref()),
            (unified, Some(raw))
        );
    }
    // A blocked prompt: no candidates at all.
    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 7}})
    .to_string();
    let s = decode_payloads(&[blocked]);
    let finish = s.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::ContentFilter);
    assert_eq!(finish.raw.as_deref(), Some("SAFETY"));
    assert_eq!(s.usage.input.total, Some(7));
    assert_eq!(s.usage.output.total, None);
}

#[test]
fn an_empty_signed_part_after_a_call_keeps_its_signature() {
    let s = decode_payloads(&[
        chunk(json!([{"functionCall": {"name": "f", "args": {}}}])),
        last(json!([{"text": "", "thoughtSignature": "sig-t"}]), "STOP"),
    ]);
    assert_eq!(s.calls[0].input, "{}");
    let ends: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::TextEnd {
                provider_metadata, ..
            } => Some(signature_of(provider_metadata)),
            _ => None,
        })
        .collect();
    assert_eq!(ends, [Some("sig-t")]);
}

#[test]
fn broken_streams_end_in_clean_errors() {
    // Truncated in the middle of a streamed call: no finish reason.
    let mut truncated = lines("google-stream-tool-call-arguments.chunks.txt");
    truncated.truncate(6);
    let s = decode_payloads(&truncated);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert_eq!(
        error.message,
        "The Gemini stream ended without a finish reason (truncated response)."
    );
    assert_eq!(s.calls.len(), 1, "only the complete first call is emitted");
    assert!(matches!(
        s.parts.last(),
        Some(ModelPart::ToolInputEnd { .. })
    ));

    // Truncated text: the block is closed, no finish.
    let mut text = lines("google-text.chunks.txt");
    text.truncate(2);
    let s = decode_payloads(&text);
    assert_eq!(s.text, TEXT);
    assert!(s.error.unwrap().message.contains("truncated"));

    // Malformed JSON.
    let s = decode_payloads(&[chunk(json!([{"text": "a"}])), "{\"candidates\":[".into()]);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error
            .message
            .starts_with("Malformed chunk in the Gemini stream"),
        "{}",
        error.message
    );
    assert_eq!(s.text, "a");

    // Not an object, wrong types.
    for bad in ["[1,2]", "42", r#"{"candidates":{"x":1}}"#] {
        let s = decode_payloads(&[bad]);
        assert_eq!(
            s.error.unwrap().kind,
            ModelErrorKind::InvalidResponse,
            "{bad}"
        );
    }

    // An in-stream error, mid-call.
    let s = decode_payloads(&[
        chunk(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})
            .to_string(),
    ]);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(
        error.message,
        "google reported an error (503 UNAVAILABLE): The model is overloaded."
    );
    assert!(s.calls.is_empty());

    // The same, wrapped in an array.
    let s = decode_payloads(
        &[json!([{"error": {"code": 500, "message": "Internal error.",
        "status": "INTERNAL"}}])
        .to_string()],
    );
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(
        error.message,
        "google reported an error (500 INTERNAL): Internal error."
    );

    // Arguments with no call, and an unsupported path.
    let s = decode_payloads(&[chunk(
        json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}}]),
    )]);
    assert_eq!(
        s.error.unwrap().message,
        "The Gemini stream sent function-call arguments without a function name."
    );
    let s = decode_payloads(&[
        chunk(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
        chunk(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "a..b", "stringValue": "x"}]}}]),
        ),
    ]);
    assert!(
        s.error.unwrap().message.starts_with(
            "The Gemini stream sent a function-call argument at an unsupported jsonPath"
        )
    );

    // An index far past an array's end: the skipped elements would be written as `null`s, four
    // billion of them here (found by fuzzing: 2 GiB from a 6 KiB stream). A few are allowed, not
    // more than 1 000 in one call's arguments.
    let call = chunk(json!([{"functionCall": {"name": "f", "willContinue": true}}]));
    let s = decode_payloads(&[
        call.clone(),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.a[2]", "numberValue": 1},
            {"jsonPath": "$.b[998]", "numberValue": 2}
        ]}}])),
        last(json!([]), "STOP"),
    ]);
    assert!(s.error.is_none(), "{:?}", s.error);
    let input: Value = serde_json::from_str(&s.calls[0].input).unwrap();
    assert_eq!(input["a"], json!([null, null, 1]));
    assert_eq!(input["b"].as_array().unwrap().len(), 999);
    let s = decode_payloads(&[
        call,
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.a[2]", "numberValue": 1},
            {"jsonPath": "$.items[4000000000]", "numberValue": 2}
        ]}}])),
    ]);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert_eq!(
        error.message,
        "The Gemini stream sent a function-call argument at index 4000000000 of an array of 0 \
         elements: a call's arguments may skip at most 1000 elements in all \
         ($.items[4000000000])."
    );

    // Whole bodies: not JSON objects.
    assert_eq!(
        decode_response(&json!([1])).unwrap_err().kind,
        ModelErrorKind::InvalidResponse
    );
}

#[test]
fn code_execution_is_a_provider_executed_call_with_its_result() {
    let s = decode_payloads(&[
        chunk(json!([{"text": "Computing."}])),
        chunk(
            json!([{"executableCode": {"language": "PYTHON", "code": "print(2**10)"},
            "thoughtSignature": "sig-code"}]),
        ),
        chunk(json!([{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1024\n"}}])),
        chunk(json!([{"executableCode": {"language": "PYTHON", "code": "1/0"}}])),
        chunk(
            json!([{"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}}]),
        ),
        last(json!([{"text": "2^10 = 1024."}]), "STOP"),
    ]);
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.text, "Computing.2^10 = 1024.");
    assert_eq!(s.calls.len(), 2);
    assert!(
        s.calls
            .iter()
            .all(|c| c.provider_executed && c.tool_name == "code_execution")
    );
    assert_eq!(
        s.calls[0].input,
        r#"{"language":"PYTHON","code":"print(2**10)"}"#
    );
    assert_eq!(
        signature_of(&s.calls[0].provider_metadata),
        Some("sig-code")
    );
    let results: Vec<(String, Value, bool)> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::ToolResult {
                tool_call_id,
                result,
                is_error,
                ..
            } => Some((tool_call_id.clone(), result.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            (
                s.calls[0].tool_call_id.clone(),
                json!({"outcome": "OUTCOME_OK", "output": "1024\n"}),
                false
            ),
            (
                s.calls[1].tool_call_id.clone(),
                json!({"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}),
                true
            ),
        ]
    );
    // Provider-executed calls are not client tool calls: the step just stops.
    assert_eq!(s.finish.unwrap().unified, UnifiedFinishReason::Stop);
    assert_eq!(s.usage.server_tool_uses, 2);
}

#[test]
fn a_call_cut_by_the_token_limit_keeps_malformed_arguments() {
    let s = decode_payloads(&[
        chunk(json!([{"functionCall": {"name": "write", "args": {"path": "a.txt"}}}])),
        chunk(json!([{"functionCall": {"name": "write", "willContinue": true}}])),
        chunk(json!([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.path", "stringValue": "b.txt"},
            {"jsonPath": "$.text", "stringValue": "The first half of", "willContinue": true}],
            "willContinue": true}}])),
        last(json!([]), "MAX_TOKENS"),
    ]);
    assert!(s.error.is_none(), "{:?}", s.error);
    let inputs: Vec<&str> = s.calls.iter().map(|c| c.input.as_str()).collect();
    // The complete call is intact; the cut one is not passed off as complete JSON.
    assert_eq!(
        inputs,
        [
            r#"{"path":"a.txt"}"#,
            r#"{"path":"b.txt","text":"The first half of"#
        ]
    );
    assert!(serde_json::from_str::<Value>(inputs[1]).is_err());
    let finish = s.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::Length);
    assert_eq!(finish.raw.as_deref(), Some("MAX_TOKENS"));
}
