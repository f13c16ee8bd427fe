//! Synthetic text streams for the linearity bench: `n` deltas of `"word "` in each wire's
//! format, wrapped in the events a real response opens and closes with, so the decoder runs
//! its ordinary path. Plain string builders, so they compile (and are checked to be JSON) before
//! the decoders that read them exist.

use serde_json::json;

/// The delta every generator streams.
pub const WORD: &str = "word ";

/// A stream of `n` text deltas, as the `data:` payloads of one response.
pub type Generator = fn(usize) -> Vec<String>;

/// Every generator, by wire, for the JSON check that runs whether or not its decoder exists.
pub const ALL: &[(&str, Generator)] = &[
    ("openai-chat", chat),
    ("anthropic", anthropic),
    ("openai-responses", responses),
    ("google", gemini),
];

/// Chat Completions: a role chunk, `n` content deltas, a finish chunk with usage, `[DONE]`.
pub fn chat(n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n + 3);
    out.push(
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"gpt-4.1-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#
            .to_owned(),
    );
    let delta = json!({"choices": [{"index": 0, "delta": {"content": WORD}}]}).to_string();
    out.extend(std::iter::repeat_n(delta, n));
    out.push(
        json!({
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": n + 10},
        })
        .to_string(),
    );
    out.push("[DONE]".to_owned());
    out
}

/// Anthropic Messages: `message_start`, one text block of `n` `text_delta`s, `message_delta`,
/// `message_stop`.
pub fn anthropic(n: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(n + 5);
    out.push(
        json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }})
        .to_string(),
    );
    out.push(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            .to_string(),
    );
    let delta = json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": WORD}})
    .to_string();
    out.extend(std::iter::repeat_n(delta, n));
    out.push(json!({"type": "content_block_stop", "index": 0}).to_string());
    out.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": n}})
        .to_string(),
    );
    out.push(json!({"type": "message_stop"}).to_string());
    out
}

/// OpenAI Responses: `response.created`, one message item with one `output_text` part of `n`
/// `response.output_text.delta`s, the `.done` events carrying the whole text, and
/// `response.completed` with usage.
pub fn responses(n: usize) -> Vec<String> {
    let text = WORD.repeat(n);
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    let item = json!({"id": "msg_1", "type": "message", "status": "completed",
        "role": "assistant", "content": [part]});
    let mut seq = 0..;
    let mut out = Vec::with_capacity(n + 7);
    out.push(
        json!({"type": "response.created", "sequence_number": seq.next(), "response": {
            "id": "resp_1", "object": "response", "created_at": 0, "status": "in_progress",
            "model": "gpt-5-mini", "output": []}})
        .to_string(),
    );
    out.push(
        json!({"type": "response.output_item.added", "sequence_number": seq.next(), "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "status": "in_progress",
                "role": "assistant", "content": []}})
        .to_string(),
    );
    out.push(
        json!({"type": "response.content_part.added", "sequence_number": seq.next(),
            "item_id": "msg_1", "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}})
        .to_string(),
    );
    for k in (&mut seq).take(n) {
        out.push(
            json!({"type": "response.output_text.delta", "sequence_number": k,
                "item_id": "msg_1", "output_index": 0, "content_index": 0,
                "delta": WORD, "logprobs": []})
            .to_string(),
        );
    }
    out.push(
        json!({"type": "response.output_text.done", "sequence_number": seq.next(),
            "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": text, "logprobs": []})
        .to_string(),
    );
    out.push(
        json!({"type": "response.content_part.done", "sequence_number": seq.next(),
            "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": part})
        .to_string(),
    );
    out.push(
        json!({"type": "response.output_item.done", "sequence_number": seq.next(),
            "output_index": 0, "item": item})
        .to_string(),
    );
    out.push(
        json!({"type": "response.completed", "sequence_number": seq.next(), "response": {
            "id": "resp_1", "object": "response", "created_at": 0, "status": "completed",
            "model": "gpt-5-mini", "output": [item],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": n, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": n + 10}}})
        .to_string(),
    );
    out
}

/// Gemini `streamGenerateContent?alt=sse`: `n` candidates with one text part each, the last
/// with `finishReason` and usage.
pub fn gemini(n: usize) -> Vec<String> {
    let delta = json!({"candidates": [{"content": {"parts": [{"text": WORD}], "role": "model"},
        "index": 0}], "modelVersion": "gemini-2.5-flash"})
    .to_string();
    let mut out = Vec::with_capacity(n);
    out.extend(std::iter::repeat_n(delta, n.saturating_sub(1)));
    out.push(
        json!({"candidates": [{"content": {"parts": [{"text": WORD}], "role": "model"},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": n,
                "totalTokenCount": n + 10},
            "modelVersion": "gemini-2.5-flash"})
        .to_string(),
    );
    out
}
