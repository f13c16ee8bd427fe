//! Chat Completions stream decoding: chunks in, [`ModelPart`]s out.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use toolsmith_core::{
    FinishReason, InputTokens, ModelError, ModelErrorKind, ModelPart, ModelStream, ModelToolCall,
    OutputTokens, ProviderMetadata, Source, UnifiedFinishReason, Usage,
};

use super::fast::{Head, HotChunk, read_hot_chunk};
use super::wire::{Choice, Chunk, ToolCallDelta, WireUsage};
use crate::borrowed::{Str, StrOrValue};
use crate::decode::StreamDecoder;
use crate::errors::excerpt;
use crate::sse::SseStream;

/// Turns Chat Completions stream payloads (the `data:` of each event) into [`ModelPart`]s.
///
/// Text and `reasoning_content` / `reasoning` deltas stream as they arrive. Tool calls are
/// assembled by `index`, tolerating the quirks of OpenAI-compatible servers: a missing or
/// constant index (calls are then told apart by id, or by a new name), a missing `type`, an
/// index starting at 1, a whole call in one delta, empty argument deltas, no `usage` (the
/// usage is then unknown), a legacy `function_call` beside or instead of `tool_calls` (read
/// only when a delta has no `tool_calls`), and spaces or line ends around the arguments (trimmed
/// from the call's input). Call ids: a call whose id is missing, empty or already taken by an
/// earlier call of the response gets a unique generated one, `call_<response prefix>_<n>`
/// (the prefix random per response, `n` counting generated ids from 1), so the tool results
/// find their calls. A call's input streams as `ToolInputStart` / `ToolInputDelta`s; its
/// `ToolInputEnd` and [`ModelPart::ToolCall`] come when the choice finishes. The `Finish` part
/// comes at `[DONE]` (or the end of the stream), after the usage chunk.
///
/// ```
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::openai_chat::ChatStreamDecoder;
/// use toolsmith_providers::decode::StreamDecoder;
///
/// let mut decoder = ChatStreamDecoder::new();
/// let mut parts = Vec::new();
/// for data in [
///     r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
///     r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
///     "[DONE]",
/// ] {
///     decoder.push(data, &mut parts).unwrap();
/// }
/// decoder.finish(&mut parts).unwrap();
/// assert!(matches!(parts.last(), Some(ModelPart::Finish { .. })));
/// ```
#[derive(Debug)]
pub struct ChatStreamDecoder {
    id_prefix: String,
    metadata_sent: bool,
    text: Option<Arc<str>>,
    reasoning: Option<Arc<str>>,
    blocks: usize,
    calls: Vec<CallState>,
    generated_ids: usize,
    finish_reason: Option<String>,
    sources: usize,
    usage: Option<Usage>,
    done: bool,
    /// The start the stream's chunks repeat, for the fast path.
    head: Head,
    /// Whether a stream without a finish reason says what to try ([`TRUNCATION_HINT`]).
    pub(super) truncation_hint: bool,
}

/// What a truncated stream's error adds for OpenAI-compatible servers: some (llama-cpp-python
/// with `chatml-function-calling`) cannot stream tool calls and drop the stream, while the same
/// request answered whole returns the call.
pub(super) const TRUNCATION_HINT: &str = " (some OpenAI-compatible servers cannot stream tool \
     calls: try \"stream\": false in the model config, or --no-stream)";

#[derive(Debug)]
struct CallState {
    index: Option<i64>,
    provider_id: Option<String>,
    id: Arc<str>,
    name: Option<String>,
    arguments: String,
    /// How much of `arguments` went out as input deltas: white space around the JSON is held
    /// back, so the deltas concatenate to the trimmed input.
    emitted: usize,
    started: bool,
    ended: bool,
}

impl CallState {
    /// The arguments not yet sent as a delta, without the white space before the JSON and
    /// without any at the end so far (sent later if more arguments follow it).
    fn take_delta(&mut self) -> Option<String> {
        let args = &self.arguments;
        let lead = args.len() - args.trim_start().len();
        let end = args.trim_end().len();
        let from = self.emitted.max(lead);
        (end > from).then(|| {
            self.emitted = end;
            args[from..end].to_string()
        })
    }

    /// The input: the arguments without surrounding white space.
    fn take_input(&mut self) -> String {
        let input = std::mem::take(&mut self.arguments);
        if input.trim().len() == input.len() {
            input
        } else {
            input.trim().to_string()
        }
    }
}

impl Default for ChatStreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChatStreamDecoder {
    /// A decoder for one response.
    pub fn new() -> Self {
        ChatStreamDecoder {
            id_prefix: format!("{:012x}", fastrand::u64(..) >> 16),
            metadata_sent: false,
            text: None,
            reasoning: None,
            blocks: 0,
            calls: Vec::new(),
            generated_ids: 0,
            finish_reason: None,
            sources: 0,
            usage: None,
            done: false,
            head: Head::default(),
            truncation_hint: false,
        }
    }

    /// [`push`](StreamDecoder::push), trying the hand-written reader of the hot chunk shapes
    /// first when `fast` (always, but in the tests and fuzz targets comparing the two paths).
    #[doc(hidden)]
    pub fn push_with(
        &mut self,
        data: &str,
        out: &mut Vec<ModelPart>,
        fast: bool,
    ) -> Result<(), ModelError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.end(out);
            return Ok(());
        }
        // Text and reasoning deltas, nearly every chunk, are read by hand; anything else, and
        // anything malformed, through serde (see `fast`).
        if fast {
            let mut chunk = HotChunk::default();
            if read_hot_chunk(data, &mut chunk, &mut self.head).is_some() {
                self.apply(chunk.id, chunk.model, chunk.usage, chunk.choice, out);
                return Ok(());
            }
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(error) => return Err(self.malformed("chunk in the stream", &error, data, out)),
        };
        self.push_chunk(chunk, out)
    }

    /// A whole (non-streamed) `chat.completion` body, already parsed: read as one chunk straight
    /// from the value (its strings borrowed, nothing printed back to text), its `message` like a
    /// delta.
    pub(super) fn push_value(
        &mut self,
        body: &Value,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        let chunk = match Chunk::deserialize(body) {
            Ok(chunk) => chunk,
            Err(error) => {
                return Err(self.malformed("chat completion", &error, &body.to_string(), out));
            }
        };
        self.push_chunk(chunk, out)
    }

    /// The error of a body that is not what it should be (`Malformed <what> (<why>): <the
    /// first 200 characters>`), the open blocks and calls closed first.
    fn malformed(
        &mut self,
        what: &str,
        error: &serde_json::Error,
        text: &str,
        out: &mut Vec<ModelPart>,
    ) -> ModelError {
        self.abort(out);
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("Malformed {what} ({error}): {}", excerpt(text, 200)),
        )
    }

    /// One parsed chunk: the provider's error, or its parts.
    fn push_chunk(&mut self, chunk: Chunk<'_>, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            self.abort(out);
            return Err(stream_error(&error));
        }
        self.apply(chunk.id, chunk.model, chunk.usage, chunk.choices, out);
        Ok(())
    }

    /// The parts of one chunk (not an error), however it was read.
    fn apply<'a>(
        &mut self,
        id: Option<Str<'a>>,
        model: Option<Str<'a>>,
        usage: Option<WireUsage>,
        choices: impl IntoIterator<Item = Choice<'a>>,
        out: &mut Vec<ModelPart>,
    ) {
        // Every chunk repeats the id and model; only the first is kept (they are borrowed, so
        // the others cost no copy).
        if !self.metadata_sent && (id.is_some() || model.is_some()) {
            self.metadata_sent = true;
            out.push(ModelPart::ResponseMetadata {
                id: id.map(Str::into_owned),
                model_id: model.map(Str::into_owned),
            });
        }
        if let Some(usage) = usage {
            self.usage = Some(map_usage(&usage));
        }
        // n > 1 is not supported: only the first choice is read.
        for choice in choices.into_iter().filter(|c| c.index.unwrap_or(0) == 0) {
            if let Some(delta) = choice.delta.or(choice.message.map(|m| *m)) {
                let reasoning = delta.reasoning_content.or(delta.reasoning);
                if let Some(reasoning) = reasoning.filter(|r| !r.as_str().is_empty()) {
                    self.reasoning_delta(reasoning.into_owned(), out);
                }
                if let Some(content) = delta.content.filter(|c| !c.as_str().is_empty()) {
                    self.text_delta(content.into_owned(), out);
                }
                match delta.tool_calls {
                    Some(calls) if !calls.is_empty() => {
                        for call in calls {
                            self.tool_call_delta(call, out);
                        }
                    }
                    // The legacy single call, only when there is no `tool_calls` beside it
                    // (llama-cpp-python repeats its first call there).
                    _ => {
                        if let Some(function) = delta.function_call {
                            let call = ToolCallDelta {
                                index: None,
                                id: None,
                                function: Some(function),
                            };
                            self.tool_call_delta(call, out);
                        }
                    }
                }
                for annotation in delta.annotations.unwrap_or_default() {
                    if annotation.kind.as_ref().map(Str::as_str) != Some("url_citation") {
                        continue;
                    }
                    let Some(citation) = annotation.url_citation else {
                        continue;
                    };
                    let Some(url) = citation.url else { continue };
                    self.sources += 1;
                    out.push(ModelPart::Source(Source {
                        source_type: "url".into(),
                        id: format!("src_{}_{}", self.id_prefix, self.sources),
                        url: Some(url.into_owned()),
                        title: citation.title.map(Str::into_owned),
                    }));
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.as_str().is_empty()) {
                self.finish_reason = Some(reason.into_owned());
                self.close_blocks(out);
                self.flush_calls(out);
            }
        }
    }

    /// Closes what is open after a failure: text and reasoning ends, tool input ends (but no
    /// tool calls: their input is incomplete), and ignores anything later.
    fn abort(&mut self, out: &mut Vec<ModelPart>) {
        self.close_blocks(out);
        for call in &mut self.calls {
            if call.started && !call.ended {
                call.ended = true;
                out.push(ModelPart::ToolInputEnd {
                    id: call.id.clone(),
                });
            }
        }
        self.done = true;
    }

    /// `[DONE]`, or the end of a stream that had a finish reason.
    fn end(&mut self, out: &mut Vec<ModelPart>) {
        self.close_blocks(out);
        self.flush_calls(out);
        let raw = self.finish_reason.clone();
        let has_calls = !self.calls.is_empty();
        let unified = match raw.as_deref() {
            Some("stop") if has_calls => UnifiedFinishReason::ToolCalls,
            Some("stop" | "end_turn" | "eos") => UnifiedFinishReason::Stop,
            Some("length" | "max_tokens") => UnifiedFinishReason::Length,
            Some("tool_calls" | "function_call" | "tool_use") => UnifiedFinishReason::ToolCalls,
            Some("content_filter") => UnifiedFinishReason::ContentFilter,
            Some("error") => UnifiedFinishReason::Error,
            Some(_) => UnifiedFinishReason::Other,
            None if has_calls => UnifiedFinishReason::ToolCalls,
            None => UnifiedFinishReason::Stop,
        };
        let mut finish_reason = FinishReason::new(unified);
        finish_reason.raw = raw;
        out.push(ModelPart::Finish {
            usage: self.usage.unwrap_or_default(),
            finish_reason,
            provider_metadata: ProviderMetadata::default(),
        });
        self.done = true;
    }

    fn next_block_id(&mut self, kind: &str) -> Arc<str> {
        let id = format!("{kind}_{}_{}", self.id_prefix, self.blocks);
        self.blocks += 1;
        id.into()
    }

    fn reasoning_delta(&mut self, delta: String, out: &mut Vec<ModelPart>) {
        let id = match &self.reasoning {
            Some(id) => id.clone(),
            None => {
                let id = self.next_block_id("reasoning");
                out.push(ModelPart::ReasoningStart { id: id.clone() });
                self.reasoning = Some(id.clone());
                id
            }
        };
        out.push(ModelPart::ReasoningDelta { id, delta });
    }

    fn text_delta(&mut self, delta: String, out: &mut Vec<ModelPart>) {
        // Reasoning precedes the answer: the first answer text closes it.
        if let Some(id) = self.reasoning.take() {
            out.push(ModelPart::ReasoningEnd {
                id,
                provider_metadata: ProviderMetadata::default(),
            });
        }
        let id = match &self.text {
            Some(id) => id.clone(),
            None => {
                let id = self.next_block_id("text");
                out.push(ModelPart::TextStart { id: id.clone() });
                self.text = Some(id.clone());
                id
            }
        };
        out.push(ModelPart::TextDelta { id, delta });
    }

    fn close_blocks(&mut self, out: &mut Vec<ModelPart>) {
        if let Some(id) = self.reasoning.take() {
            out.push(ModelPart::ReasoningEnd {
                id,
                provider_metadata: ProviderMetadata::default(),
            });
        }
        if let Some(id) = self.text.take() {
            out.push(ModelPart::TextEnd {
                id,
                provider_metadata: ProviderMetadata::default(),
            });
        }
    }

    /// Which call a delta continues, or `None` for a new call.
    fn slot_for(
        &self,
        index: Option<i64>,
        provider_id: Option<&str>,
        name: Option<&str>,
    ) -> Option<usize> {
        if let Some(pid) = provider_id {
            // The same id continues a call, unless the index or a new name says it is another
            // call reusing the id (servers that number every call `call_0`, or repeat one id).
            if let Some(i) = self.calls.iter().rposition(|c| {
                !c.ended
                    && c.provider_id.as_deref() == Some(pid)
                    && !(index.is_some() && c.index.is_some() && c.index != index)
                    && !(name.is_some() && c.name.is_some() && is_complete_json(&c.arguments))
            }) {
                return Some(i);
            }
            // A new id is a new call, unless a call at this index started without one.
            return self.calls.iter().position(|c| {
                !c.ended
                    && !c.started
                    && c.provider_id.is_none()
                    && index.is_some()
                    && c.index == index
            });
        }
        let i = match index {
            Some(index) => self
                .calls
                .iter()
                .rposition(|c| c.index == Some(index) && !c.ended)?,
            None => self.calls.iter().rposition(|c| !c.ended)?,
        };
        // A name arriving for a call that already has one and whose arguments are complete is
        // the next call (servers with a constant or missing index).
        let call = &self.calls[i];
        let starts_next = name.is_some()
            && call.name.is_some()
            && (call.name.as_deref() != name || is_complete_json(&call.arguments));
        (!starts_next).then_some(i)
    }

    fn tool_call_delta(&mut self, delta: ToolCallDelta<'_>, out: &mut Vec<ModelPart>) {
        let provider_id = delta
            .id
            .filter(|id| !id.as_str().is_empty())
            .map(Str::into_owned);
        let function = delta.function.unwrap_or_default();
        let name = function
            .name
            .filter(|n| !n.as_str().is_empty())
            .map(Str::into_owned);
        let arguments = match function.arguments {
            Some(StrOrValue::Str(s)) => s.into_owned(),
            Some(StrOrValue::Value(Value::Null)) | None => String::new(),
            Some(StrOrValue::Value(other)) => other.to_string(),
        };
        let slot = match self.slot_for(delta.index, provider_id.as_deref(), name.as_deref()) {
            Some(i) => i,
            None => {
                let id = match &provider_id {
                    Some(pid) if !self.calls.iter().any(|c| *c.id == **pid) => pid.as_str().into(),
                    _ => {
                        self.generated_ids += 1;
                        format!("call_{}_{}", self.id_prefix, self.generated_ids).into()
                    }
                };
                self.calls.push(CallState {
                    index: delta.index,
                    provider_id: provider_id.clone(),
                    id,
                    name: None,
                    arguments: String::new(),
                    emitted: 0,
                    started: false,
                    ended: false,
                });
                self.calls.len() - 1
            }
        };
        let taken = provider_id
            .as_deref()
            .is_some_and(|pid| self.calls.iter().any(|c| *c.id == *pid));
        let call = &mut self.calls[slot];
        if call.provider_id.is_none() && provider_id.is_some() && !call.started && !taken {
            call.id = provider_id.as_deref().unwrap_or_default().into();
            call.provider_id = provider_id;
        }
        if call.name.is_none() {
            call.name = name;
        }
        if !call.started && call.name.is_some() {
            call.started = true;
            out.push(ModelPart::ToolInputStart {
                id: call.id.clone(),
                tool_name: call.name.clone().unwrap_or_default(),
                provider_executed: false,
            });
        }
        call.arguments.push_str(&arguments);
        if call.started
            && let Some(delta) = call.take_delta()
        {
            out.push(ModelPart::ToolInputDelta {
                id: call.id.clone(),
                delta,
            });
        }
    }

    fn flush_calls(&mut self, out: &mut Vec<ModelPart>) {
        for call in &mut self.calls {
            if call.ended {
                continue;
            }
            call.ended = true;
            let name = call.name.clone().unwrap_or_default();
            if !call.started {
                out.push(ModelPart::ToolInputStart {
                    id: call.id.clone(),
                    tool_name: name.clone(),
                    provider_executed: false,
                });
                if let Some(delta) = call.take_delta() {
                    out.push(ModelPart::ToolInputDelta {
                        id: call.id.clone(),
                        delta,
                    });
                }
            }
            out.push(ModelPart::ToolInputEnd {
                id: call.id.clone(),
            });
            // Spaces or line ends around the JSON (llama.cpp-based servers) are not the input's.
            let input = call.take_input();
            out.push(ModelPart::ToolCall(ModelToolCall::new(
                &*call.id, name, input,
            )));
        }
    }
}

fn is_complete_json(text: &str) -> bool {
    !text.trim().is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

fn map_usage(usage: &WireUsage) -> Usage {
    let cached = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens);
    let reasoning = usage
        .completion_tokens_details
        .as_ref()
        .and_then(|d| d.reasoning_tokens);
    let total_out = usage.completion_tokens;
    Usage {
        input: InputTokens {
            total: usage.prompt_tokens,
            no_cache: usage
                .prompt_tokens
                .map(|p| p.saturating_sub(cached.unwrap_or(0))),
            cache_read: cached,
            cache_write: None,
        },
        output: OutputTokens {
            total: total_out,
            // Some servers (xAI) count reasoning outside completion_tokens: leave text unknown.
            text: match (total_out, reasoning) {
                (Some(t), Some(r)) if r <= t => Some(t - r),
                (Some(t), None) => Some(t),
                _ => None,
            },
            reasoning,
        },
        server_tool_uses: 0,
    }
}

fn stream_error(error: &Value) -> ModelError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .unwrap_or("The provider reported an error in the stream.");
    let code = ["type", "code"]
        .iter()
        .filter_map(|k| error.get(*k))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    let kind = if code.contains("rate_limit") || code.contains("429") {
        ModelErrorKind::RateLimited
    } else if code.contains("server") || code.contains("overloaded") || code.contains("50") {
        ModelErrorKind::Server
    } else if code.contains("invalid_request") || code.contains("400") {
        ModelErrorKind::InvalidRequest
    } else {
        ModelErrorKind::Other
    };
    ModelError::new(kind, format!("The provider reported an error: {message}"))
}

#[cfg(test)]
impl ChatStreamDecoder {
    /// A decoder whose generated ids are fixed, so two decoders' parts can be compared.
    pub(super) fn with_id_prefix(prefix: &str) -> Self {
        ChatStreamDecoder {
            id_prefix: prefix.to_owned(),
            ..Self::new()
        }
    }
}

impl StreamDecoder for ChatStreamDecoder {
    /// Decodes one event payload, appending the parts it yields to `out`.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` for a payload that is not JSON, or the provider's error for an in-stream
    /// `error` object. Parts already assembled are in `out`; the stream should end there.
    fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        self.push_with(data, out, true)
    }

    /// Ends the response after the last payload, appending the closing parts.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` when the stream ended with neither a finish reason nor `[DONE]`: what
    /// was assembled is closed first (text and reasoning ends, tool input ends; incomplete tool
    /// calls are not emitted as calls), and no `Finish` part is added.
    fn finish(&mut self, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        if self.finish_reason.is_some() {
            self.end(out);
            return Ok(());
        }
        self.abort(out);
        let mut message =
            "The Chat Completions stream ended without a finish reason (truncated response)."
                .to_string();
        if self.truncation_hint {
            message.push_str(TRUNCATION_HINT);
        }
        Err(ModelError::new(ModelErrorKind::InvalidResponse, message))
    }

    /// Whether `[DONE]` was seen: later payloads are ignored.
    fn is_done(&self) -> bool {
        self.done
    }
}

/// Decodes an event stream into the model's parts, prefixed by a `StreamStart` with `warnings`.
pub fn decode_events(events: SseStream, warnings: Vec<String>) -> ModelStream {
    crate::decode::decode_events(events, ChatStreamDecoder::new(), warnings)
}
