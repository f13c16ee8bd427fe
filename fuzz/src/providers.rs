//! The providers' parsers: each wire's stream decoder (its hand-written fast path against serde
//! on the same payloads) and whole-body decoder, provider error bodies, scripted-model files;
//! and agent configs, which name the model.

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use toolsmith_config::{AgentConfig, ModelConfig};
use toolsmith_core::{LanguageModel, ModelError, ModelPart, ModelRequest};
use toolsmith_providers::decode::StreamDecoder;
use toolsmith_providers::{
    ScriptedModel, anthropic, errors, google, openai_chat, openai_responses, retry_after_header,
};

use crate::parts::Blocks;

/// A wire's stream decoder with its two ways of reading a payload.
trait Wire: StreamDecoder + Sized {
    /// A decoder; two made after the same seed generate the same ids.
    fn make() -> Self;
    /// `push`, with the fast path (`true`) or serde alone.
    fn push_with(
        &mut self,
        data: &str,
        out: &mut Vec<ModelPart>,
        fast: bool,
    ) -> Result<(), ModelError>;
    /// The wire's whole-body (non-streamed) decoder.
    fn decode_response(body: &Value) -> Result<Vec<ModelPart>, ModelError>;
}

macro_rules! wire {
    ($decoder:ty, $module:ident) => {
        impl Wire for $decoder {
            fn make() -> Self {
                <$decoder>::new()
            }
            fn push_with(
                &mut self,
                data: &str,
                out: &mut Vec<ModelPart>,
                fast: bool,
            ) -> Result<(), ModelError> {
                <$decoder>::push_with(self, data, out, fast)
            }
            fn decode_response(body: &Value) -> Result<Vec<ModelPart>, ModelError> {
                $module::decode_response(body)
            }
        }
    };
}

wire!(openai_chat::ChatStreamDecoder, openai_chat);
wire!(openai_responses::ResponsesStreamDecoder, openai_responses);
wire!(anthropic::MessagesStreamDecoder, anthropic);
wire!(google::GeminiStreamDecoder, google);

/// Each line of `data` is one event's payload (as the recorded `*.chunks.txt` fixtures hold
/// them). Pushed to two decoders, one reading with the fast path, one with serde alone, every
/// push must give the same result and parts, and so must `finish`, as the stream is driven
/// (it ends at the first error or once the decoder is done). The parts must be well-formed.
/// The whole input, when it is JSON, also goes through the wire's whole-body decoder.
fn wire<D: Wire>(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    fastrand::seed(7);
    let mut fast = D::make();
    fastrand::seed(7);
    let mut slow = D::make();
    let (mut fast_out, mut slow_out) = (Vec::new(), Vec::new());
    let mut blocks = Blocks::unique_calls();
    let mut ended = false;
    for payload in text.split('\n') {
        let fast_result = fast.push_with(payload, &mut fast_out, true);
        let slow_result = slow.push_with(payload, &mut slow_out, false);
        assert_eq!(fast_result, slow_result, "result of {payload}");
        assert_eq!(fast_out, slow_out, "parts after {payload}");
        assert_eq!(fast.is_done(), slow.is_done());
        blocks.check_all(&fast_out);
        fast_out.clear();
        slow_out.clear();
        if fast_result.is_err() || fast.is_done() {
            ended = true;
            break;
        }
    }
    if !ended {
        let fast_result = fast.finish(&mut fast_out);
        assert_eq!(fast_result, slow.finish(&mut slow_out), "finish");
        assert_eq!(fast_out, slow_out, "parts of finish");
        blocks.check_all(&fast_out);
        if fast_result.is_ok() && blocks.finished() {
            blocks.all_closed("the end");
        }
    }

    if let Ok(body) = serde_json::from_slice::<Value>(data) {
        whole::<D>(&body);
    }
}

/// A whole body: `StreamStart` first, then well-formed parts ending in `Finish`.
fn whole<D: Wire>(body: &Value) {
    let Ok(parts) = D::decode_response(body) else {
        return;
    };
    let (first, rest) = parts.split_first().expect("a stream start");
    assert!(matches!(first, ModelPart::StreamStart { .. }), "{first:?}");
    let mut blocks = Blocks::unique_calls();
    blocks.check_all(rest);
    assert!(
        matches!(rest.last(), Some(ModelPart::Finish { .. })),
        "a whole body's parts end with its finish: {parts:?}"
    );
}

/// Chat Completions (`openai:`, `openai-compatible:`): see [`wire`].
pub fn wire_openai_chat(data: &[u8]) {
    wire::<openai_chat::ChatStreamDecoder>(data);
}

/// The Responses API (`openai-responses:`): see [`wire`].
pub fn wire_openai_responses(data: &[u8]) {
    wire::<openai_responses::ResponsesStreamDecoder>(data);
}

/// Anthropic Messages (`anthropic:`): see [`wire`].
pub fn wire_anthropic(data: &[u8]) {
    wire::<anthropic::MessagesStreamDecoder>(data);
}

/// Gemini's `generateContent` (`google:`): see [`wire`].
pub fn wire_google(data: &[u8]) {
    wire::<google::GeminiStreamDecoder>(data);
}

/// An HTTP error answer: the first two bytes are the status, the third the length of the API
/// key (at most 63), which follows, then a byte giving the length of the `retry-after-ms` and
/// `retry-after` header values (at most 63, the two split at a NUL), which follow; the rest is
/// the body. As `http.rs` reads it: [`retry_after_header`], then [`errors::status_error`],
/// which must take its kind from the status, never show the key, and keep the headers' delay
/// or read the body's as a duration; [`errors::provider_message`] and
/// [`errors::retry_info_delay`] must not fail on any body.
pub fn provider_errors(data: &[u8]) {
    let [hi, lo, key_len, rest @ ..] = data else {
        return;
    };
    let status = u16::from_be_bytes([*hi, *lo]);
    let (key, rest) = rest.split_at(usize::from(key_len % 64).min(rest.len()));
    let key = String::from_utf8_lossy(key);
    let (headers, body) = match rest.split_first() {
        Some((len, rest)) => rest.split_at(usize::from(len % 64).min(rest.len())),
        None => (&[][..], rest),
    };
    let body = String::from_utf8_lossy(body);
    let (ms, seconds) = crate::split_nul(headers);
    let mut map = HeaderMap::new();
    for (name, value) in [("retry-after-ms", ms), ("retry-after", seconds)] {
        if let Ok(value) = HeaderValue::from_bytes(value)
            && !value.is_empty()
        {
            map.insert(name, value);
        }
    }
    let header_delay = retry_after_header(&map);
    let error = errors::status_error("provider", status, &body, header_delay, Some(&key));
    assert_eq!(error.kind, errors::status_kind(status));
    assert_eq!(error.status, Some(status));
    // The key is gone, unless "[redacted]" itself spells it, or a bracket lets it run into one.
    if key.len() >= 4 && !key.contains(['[', ']']) && !"[redacted]".contains(&*key) {
        assert!(
            !error.message.contains(&*key),
            "the key in {:?}",
            error.message
        );
    }
    let _ = errors::provider_message(&body);
    let body_delay = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|value| errors::retry_info_delay(&value));
    assert_eq!(error.retry_after, header_delay.or(body_delay));
}

/// An agent config's JSON text: parsed twice to the same config; its model's `PROVIDER:MODEL`
/// reads back as the same provider and name; its client tools and MCP selections build.
pub fn agent_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = AgentConfig::from_json(text) else {
        return;
    };
    assert_eq!(AgentConfig::from_json(text).as_ref(), Ok(&config));
    for model in [&config.model, &config.summarize_model]
        .into_iter()
        .flatten()
    {
        if !model.provider.contains(':') {
            let back = ModelConfig::parse(&model.spec()).expect("a model's spec parses");
            assert_eq!(
                (back.provider, back.name),
                (model.provider.clone(), model.name.clone())
            );
        }
    }
    for tool in &config.client_tools {
        let _ = tool.tool();
    }
    let _ = config.mcp_selections();
    let _ = config.async_tool();
}

/// A scripted-model file (`--model scripted:FILE`): when it parses, every scripted turn (at
/// most eight calls) streams well-formed parts, `StreamStart` first, ending in `Finish` unless
/// the turn says otherwise, its delays on a paused clock.
pub fn scripted_model(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(model) = ScriptedModel::from_json(text) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let request = ModelRequest::default();
        for _ in 0..8 {
            let stream = match model.stream(&request).await {
                Ok(stream) => stream,
                Err(error) if error.message.starts_with("The scripted model has no turn") => {
                    return;
                }
                Err(_) => continue,
            };
            let parts: Vec<_> = stream.collect().await;
            let mut parts = parts.into_iter();
            assert!(matches!(
                parts.next(),
                Some(Ok(ModelPart::StreamStart { .. }))
            ));
            let mut blocks = Blocks::default();
            let mut failed = false;
            for part in parts {
                assert!(!failed, "a part after the stream's error");
                match part {
                    Ok(part) => blocks.check(&part),
                    Err(_) => failed = true,
                }
            }
            if blocks.finished() {
                blocks.all_closed("the end");
            }
        }
    });
}
