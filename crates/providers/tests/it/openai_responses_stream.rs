//! The Responses decoder on edge cases: reasoning round trips, custom and client-run tools,
//! hosted results, the leaked `parallel` wrapper, in-stream errors, truncation, unknown and
//! mutated events.

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_core::{ModelErrorKind, ModelPart, UnifiedFinishReason};
use toolsmith_providers::openai_responses::{ResponsesStreamDecoder, TRUNCATED, decode_response};

const OPENAI: &str = "openai-responses";
const LOCAL: &str = "openai-compatible-local";

fn decode_lines<S: AsRef<str>>(lines: &[S]) -> Summary {
    decode_with(ResponsesStreamDecoder::new(), lines)
}

#[test]
fn reasoning_round_trip_data_is_on_the_reasoning_end() {
    let lines = responses_of(OPENAI, "openai-reasoning-encrypted-content.1.chunks.txt").remove(0);
    let done: Value = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .unwrap();
    let s = decode_lines(&lines);
    let ends: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::ReasoningEnd {
                id,
                provider_metadata,
            } => Some((
                id.to_string(),
                provider_metadata.get("openai").unwrap().clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 1);
    assert_eq!(
        ends[0].0,
        format!("{}:0", done["item"]["id"].as_str().unwrap())
    );
    assert_eq!(
        ends[0].1,
        json!({"itemId": done["item"]["id"], "reasoningEncryptedContent": done["item"]["encrypted_content"]})
    );
    assert!(s.reasoning.starts_with("**Calculating step-by-step"));
    // The call carries its item id; 39 argument deltas concatenate to the arguments.
    let call = &s.calls[0];
    assert_eq!(call.tool_call_id, "call_AB6AaRZ1FYZB2RwS6A5vbdqn");
    assert_eq!(
        call.provider_metadata.get("openai").unwrap(),
        &json!({"itemId": "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f"})
    );
    let deltas = s
        .parts
        .iter()
        .filter(|p| matches!(p, ModelPart::ToolInputDelta { .. }))
        .count();
    assert_eq!(deltas, 13);

    // LM Studio's raw reasoning text is marked as such; its call had no argument deltas.
    let s = decode_lines(&responses_of(LOCAL, "lmstudio-tool-call.1.chunks.txt")[0]);
    let raw = s.parts.iter().find_map(|p| match p {
        ModelPart::ReasoningEnd {
            id,
            provider_metadata,
        } => Some((
            id.to_string(),
            provider_metadata.get("openai").unwrap().clone(),
        )),
        _ => None,
    });
    assert_eq!(
        raw.unwrap(),
        (
            "rs_3yo6zy4vu4hq6iegqwhn1:text:0".to_string(),
            json!({"itemId": "rs_3yo6zy4vu4hq6iegqwhn1", "reasoningEncryptedContent": null, "reasoningText": true})
        )
    );
    let deltas: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::ToolInputDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, [r#"{"location":"San Francisco"}"#]);
}

#[test]
fn the_custom_tool_input_streams_as_an_escaped_json_string() {
    let s = decode_lines(&responses_of(OPENAI, "openai-custom-tool.1.chunks.txt")[0]);
    let deltas: Vec<_> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::ToolInputDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        [
            "{\"input\":\"",
            "SELECT * ",
            "FROM users ",
            "WHERE age > 25",
            "\"}"
        ]
    );
    let call = &s.calls[0];
    assert_eq!(call.tool_call_id, "call_custom_sql_001");
    assert_eq!(
        call.provider_metadata.get("openai").unwrap(),
        &json!({"itemId": "ct_abc123def456", "type": "custom_tool_call"})
    );
    // Quotes and newlines in the free-form input stay valid JSON.
    let lines = [
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"custom_tool_call","id":"ct","call_id":"c","name":"raw","input":""}}"#,
        r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"say \"hi\"\n"}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"custom_tool_call","id":"ct","call_id":"c","name":"raw","input":"say \"hi\"\nnow"}}"#,
        r#"{"type":"response.completed","response":{"status":"completed"}}"#,
    ];
    let s = decode_lines(&lines);
    let input: Value = serde_json::from_str(&s.calls[0].input).unwrap();
    assert_eq!(input, json!({"input": "say \"hi\"\nnow"}));
}

#[test]
fn client_executed_openai_tools_are_local_calls_with_their_item_type() {
    let s = decode_lines(&responses_of(OPENAI, "openai-client-tool-search.1.chunks.txt")[0]);
    let call = &s.calls[0];
    // The done item's call id wins over the one in `output_item.added`.
    assert_eq!(call.tool_call_id, "call_RWTIIVfxsJW9fecsg6fy23Dy");
    assert!(!call.provider_executed);
    assert_eq!(
        call.provider_metadata.get("openai").unwrap()["type"],
        "tool_search_call"
    );
    let s = decode_lines(&responses_of(OPENAI, "openai-shell-tool.1.chunks.txt")[0]);
    assert_eq!(
        s.calls[0].provider_metadata.get("openai").unwrap(),
        &json!({"itemId": "sh_0434d6d64b12b08900692f639c9f0481959c30e03ca0bb2ef8", "type": "shell_call"})
    );
}

#[test]
fn hosted_results_carry_the_item_and_mcp_approval_requests_are_visible() {
    let s = decode_lines(&responses_of(OPENAI, "openai-mcp-tool-approval.1.chunks.txt")[0]);
    let approval = s
        .calls
        .iter()
        .find(|c| c.tool_name == "mcp.create_short_url")
        .unwrap();
    assert_eq!(
        approval.tool_call_id,
        "mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe"
    );
    let input: Value = serde_json::from_str(&approval.input).unwrap();
    assert_eq!(input["url"], "https://ai-sdk.dev/");
    assert_eq!(
        approval.provider_metadata.get("openai").unwrap()["type"],
        "mcp_approval_request"
    );
    let result = s
        .parts
        .iter()
        .find_map(|p| match p {
            ModelPart::ToolResult {
                tool_call_id,
                result,
                is_error,
                ..
            } if *tool_call_id == approval.tool_call_id => Some((result.clone(), *is_error)),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.0["type"], "mcp_approval_request");
    assert!(!result.1);
}

fn repaired_wrapper() -> Vec<String> {
    let mut lines = responses_of(OPENAI, "parallel-tool-call-wrapper.1.chunks.txt").remove(0);
    for line in &mut lines {
        if serde_json::from_str::<Value>(line).is_err() {
            line.push('}');
        }
    }
    lines
}

#[test]
fn the_broken_parallel_wrapper_fixture_is_a_clean_invalid_response() {
    let lines = responses_of(OPENAI, "parallel-tool-call-wrapper.1.chunks.txt").remove(0);
    let s = decode_lines(&lines);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    assert!(
        error.message.starts_with("Malformed Responses event ("),
        "{}",
        error.message
    );
    assert!(s.calls.is_empty() && s.finish.is_none());

    // Only the last line broken: the calls are out, but the stream still fails cleanly.
    let mut last_broken = repaired_wrapper();
    let n = last_broken.len();
    last_broken[n - 1].pop();
    let s = decode_lines(&last_broken);
    assert_eq!(s.error.unwrap().kind, ModelErrorKind::InvalidResponse);
    assert!(s.finish.is_none());
}

#[test]
fn the_leaked_parallel_wrapper_expands_into_its_calls() {
    let s = decode_lines(&repaired_wrapper());
    assert!(s.error.is_none(), "{:?}", s.error);
    let calls: Vec<_> = s
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
    assert_eq!(
        calls,
        [
            (
                "call_parallel_0",
                "weather",
                r#"{"location":"San Francisco"}"#
            ),
            ("call_parallel_1", "cityAttractions", r#"{"city":"Rome"}"#),
        ]
    );
    assert!(s.calls.iter().all(|c| c.provider_metadata.is_empty()));
    let finish = s.finish.unwrap();
    assert_eq!(finish.unified, UnifiedFinishReason::ToolCalls);
    assert_eq!(s.usage.input.total, Some(34));
    assert_eq!(s.usage.output.total, Some(28));

    // A real tool named `parallel` with other arguments is left alone.
    let lines = [
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc","call_id":"c","name":"parallel","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"n\":"}"#,
        r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"2}"}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc","call_id":"c","name":"parallel","arguments":"{\"n\":2}"}}"#,
        r#"{"type":"response.completed","response":{"status":"completed"}}"#,
    ];
    let s = decode_lines(&lines);
    assert_eq!(s.calls.len(), 1);
    assert_eq!(s.calls[0].tool_name, "parallel");
    assert_eq!(s.calls[0].input, r#"{"n":2}"#);
}

#[test]
fn in_stream_errors_carry_the_providers_message_and_code() {
    let lines = responses_of(OPENAI, "openai-error.1.chunks.txt").remove(0);
    let s = decode_lines(&lines);
    let error = s.error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert!(
        error.message.starts_with(
            "The provider reported an error (insufficient_quota): You exceeded your current quota"
        ),
        "{}",
        error.message
    );
    assert!(s.finish.is_none());

    // `response.failed` alone (no `error` event) is an error too.
    let failed: Vec<String> = lines
        .iter()
        .filter(|l| !l.contains(r#""type":"error""#))
        .cloned()
        .collect();
    let error = decode_lines(&failed).error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert!(error.message.contains("insufficient_quota"));

    let server = [
        r#"{"type":"error","error":{"type":"server_error","code":"server_error","message":"Overloaded"}}"#,
    ];
    let error = decode_lines(&server).error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(
        error.message,
        "The provider reported an error (server_error): Overloaded"
    );
}

#[test]
fn truncated_streams_fail_without_a_finish_or_an_incomplete_call() {
    let lines = responses_of(OPENAI, "openai-reasoning-encrypted-content.1.chunks.txt").remove(0);
    // Cut everywhere before `response.completed`.
    for cut in 1..lines.len() {
        let s = decode_lines(&lines[..cut]);
        let error = s.error.expect("truncated");
        assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
        assert_eq!(error.message, TRUNCATED);
        assert!(s.finish.is_none());
        // A call appears only once its item is done.
        let done = lines[..cut]
            .iter()
            .any(|l| l.contains("output_item.done") && l.contains("function_call"));
        assert_eq!(s.calls.len(), usize::from(done), "cut at {cut}");
    }
}

#[test]
fn incomplete_responses_map_their_reason() {
    for (reason, unified) in [
        ("max_output_tokens", UnifiedFinishReason::Length),
        ("content_filter", UnifiedFinishReason::ContentFilter),
        ("something_new", UnifiedFinishReason::Other),
    ] {
        let lines = [
            json!({"type": "response.created", "response": {"id": "r", "model": "m"}}).to_string(),
            json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg", "delta": "Hal"}).to_string(),
            json!({"type": "response.incomplete", "response": {"status": "incomplete",
                "incomplete_details": {"reason": reason},
                "usage": {"input_tokens": 5, "output_tokens": 16}}})
            .to_string(),
        ];
        let s = decode_lines(&lines);
        assert!(s.error.is_none());
        assert_eq!(s.text, "Hal");
        let finish = s.finish.unwrap();
        assert_eq!(finish.unified, unified);
        assert_eq!(finish.raw.as_deref(), Some(reason));
    }
}

#[test]
fn refusals_stream_as_text_and_generated_images_as_files() {
    let lines = [
        json!({"type": "response.created", "response": {"id": "r", "model": "m"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "image_generation_call", "id": "ig_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "image_generation_call", "id": "ig_1", "status": "completed",
                "output_format": "webp", "result": "UklGRg=="}}),
        json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"type": "message", "id": "msg_1", "content": []}}),
        json!({"type": "response.refusal.delta", "output_index": 1, "item_id": "msg_1",
            "delta": "I can't help with that."}),
        json!({"type": "response.output_item.done", "output_index": 1,
            "item": {"type": "message", "id": "msg_1",
                "content": [{"type": "refusal", "refusal": "I can't help with that."}]}}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ]
    .map(|l| l.to_string());
    let s = decode_lines(&lines);
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.text, "I can't help with that.");
    assert_eq!(s.calls.len(), 1);
    assert!(s.calls[0].provider_executed);
    assert_eq!(s.calls[0].tool_name, "image_generation");
    assert!(s.parts.iter().any(|p| matches!(p,
        ModelPart::File { media_type, data } if media_type == "image/webp" && data == "UklGRg==")));
    // The same from a non-streamed body (no refusal delta: the done item's refusal is used).
    let body = json!({"id": "r", "status": "completed", "output": [
        {"type": "message", "id": "msg_1", "content": [{"type": "refusal", "refusal": "No."}]}
    ]});
    let s = check(decode_response(&body).unwrap(), None);
    assert_eq!(s.text, "No.");
    assert_eq!(s.finish.unwrap().unified, UnifiedFinishReason::Stop);
}

#[test]
fn items_without_ids_and_repeated_events() {
    // A server that sends no item ids, repeats `added`, and skips `added` for a message.
    let lines = [
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "delta": "Done."}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ]
    .map(|l| l.to_string());
    let s = decode_lines(&lines);
    assert!(s.error.is_none(), "{:?}", s.error);
    assert_eq!(s.calls.len(), 1);
    assert_eq!(s.calls[0].input, "{}");
    assert_eq!(s.text, "Done.");
    assert_eq!(s.finish.unwrap().unified, UnifiedFinishReason::ToolCalls);
    assert!(s.usage.is_empty());
    // Generated item ids never reach the metadata the next request would echo.
    assert!(s.calls[0].provider_metadata.is_empty());
    assert!(s.parts.iter().all(|p| !matches!(p,
        ModelPart::TextEnd { provider_metadata, .. } if !provider_metadata.is_empty())));
}

#[test]
fn reasoning_deltas_find_their_block_by_part() {
    // Summary parts and raw text interleaved in one item, then an item whose texts come only
    // with its done event (one block already opened, empty).
    let lines = [
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1"}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "A"}),
        json!({"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "delta": "raw"}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "B"}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "C"}),
        json!({"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "delta": ""}),
        json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": [{"text": "unused"}]}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 1, "item_id": "rs_2"}),
        json!({"type": "response.output_item.done", "output_index": 1,
            "item": {"type": "reasoning", "id": "rs_2", "summary": [{"text": "S0"}, {"text": "S1"}],
                "content": [{"text": "R0"}]}}),
        json!({"type": "response.completed", "response": {"status": "completed"}}),
    ]
    .map(|l| l.to_string());
    let s = decode_lines(&lines);
    assert!(s.error.is_none(), "{:?}", s.error);
    let reasoning: Vec<String> = s
        .parts
        .iter()
        .filter_map(|p| match p {
            ModelPart::ReasoningStart { id } => Some(format!("start {id}")),
            ModelPart::ReasoningDelta { id, delta } => Some(format!("delta {id} {delta}")),
            ModelPart::ReasoningEnd {
                id,
                provider_metadata,
            } => {
                let raw = provider_metadata
                    .get("openai")
                    .unwrap()
                    .get("reasoningText");
                Some(format!("end {id} {raw:?}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        reasoning,
        [
            "start rs_1:0",
            "delta rs_1:0 A",
            "start rs_1:text:0",
            "delta rs_1:text:0 raw",
            "start rs_1:1",
            "delta rs_1:1 B",
            "delta rs_1:0 C",
            "end rs_1:0 None",
            "end rs_1:text:0 Some(Bool(true))",
            "end rs_1:1 None",
            "start rs_2:0",
            "delta rs_2:0 S0",
            "start rs_2:1",
            "delta rs_2:1 S1",
            "start rs_2:text:0",
            "delta rs_2:text:0 R0",
            "end rs_2:0 None",
            "end rs_2:1 None",
            "end rs_2:text:0 Some(Bool(true))",
        ]
    );
}
