//! Gemini stream decoding: `GenerateContentResponse` chunks in, [`ModelPart`]s out.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_core::{
    FinishReason, InputTokens, ModelError, ModelErrorKind, ModelPart, ModelStream, OutputTokens,
    ProviderMetadata, Source, UnifiedFinishReason, Usage,
};

use super::args::ArgsWriter;
use super::fast::{HotChunk, Part, Tail, read_hot_chunk};
use super::wire::{Chunk, CitationMetadata, GroundingMetadata, UsageMetadata};
use crate::borrowed::Str;
use crate::decode::StreamDecoder;
use crate::errors::{excerpt, retry_info_delay, status_kind};
use crate::sse::SseStream;

mod calls;

/// The key under which Gemini data rides in [`ProviderMetadata`].
pub const PROVIDER: &str = "google";

/// The tool name of Gemini's code execution tool (`google.code_execution`): its `executableCode`
/// and `codeExecutionResult` parts are a provider-executed call and its result.
pub const CODE_EXECUTION: &str = "code_execution";

/// Turns Gemini stream payloads (each SSE `data:` is one `GenerateContentResponse`) into
/// [`ModelPart`]s.
///
/// - **Text and thoughts.** `text` parts stream as a text block, `thought: true` parts as a
///   reasoning block. A part's `thoughtSignature` ends its block: the block's end carries
///   `{"google": {"thoughtSignature": …}}` so the request builder can echo it on the same part,
///   and later text opens a new block. An empty text part carrying only a signature still makes
///   a (textless) block, so the signature is not lost.
/// - **Function calls.** A whole `functionCall {name, args}` becomes a tool input start, one
///   delta, an end and a [`ModelPart::ToolCall`] at once. A streamed one (`functionCall {name,
///   willContinue: true}`, then `partialArgs` by `jsonPath` with `stringValue` pieces,
///   `numberValue`, `boolValue`, `nullValue`, `structValue` or `listValue`) streams its
///   argument JSON as it is built, the deltas concatenating exactly to the final input. The call
///   ends at a `functionCall` whose `willContinue` is not true (the `functionCall: {}`
///   terminator, or a last `partialArgs` chunk when the terminator is missing), else at the next
///   named call, the next text, or a `STOP` finish reason. A call still streaming when another
///   finish reason (`MAX_TOKENS`, `SAFETY`…) stops the output keeps its arguments unclosed: the
///   malformed input becomes an error result instead of a call run with a truncated value. A
///   call's `thoughtSignature` rides in its
///   [`ModelToolCall::provider_metadata`](toolsmith_core::ModelToolCall::provider_metadata); the
///   wire `id`, when there is one, is the call id (also kept there, to be echoed), else a stable
///   id is generated.
/// - **Code execution.** An `executableCode` part is a provider-executed `code_execution` call
///   (input `{language, code}`), the next `codeExecutionResult` its [`ModelPart::ToolResult`]
///   (`{outcome, output}`, an error unless `OUTCOME_OK`); each run counts in
///   [`Usage::server_tool_uses`].
/// - **Grounding.** `groundingMetadata.groundingChunks[].web` become URL [`Source`]s (and
///   `citationMetadata.citationSources` too), each URL once per response; the distinct
///   `webSearchQueries` are counted in [`Usage::server_tool_uses`].
/// - **Finish.** Gemini has no end marker: the [`Finish`](ModelPart::Finish) part comes from
///   [`finish`](StreamDecoder::finish) at the end of the body, after a `finishReason` (or a
///   `promptFeedback.blockReason`) was seen, with the last chunk's usage: input
///   `promptTokenCount` (of which `cachedContentTokenCount` read from cache), output
///   `candidatesTokenCount + thoughtsTokenCount` (text and reasoning). `STOP` with function
///   calls is `tool-calls`; `MAX_TOKENS` `length`; `SAFETY`, `RECITATION`, `BLOCKLIST`,
///   `PROHIBITED_CONTENT`, `SPII` and a prompt block reason `content-filter`;
///   `MALFORMED_FUNCTION_CALL` and the other tool failures `error`; anything else `other`.
///
/// Only the first candidate is read. Unknown part kinds and fields are ignored.
///
/// ```
/// use toolsmith_core::{ModelPart, UnifiedFinishReason};
/// use toolsmith_providers::google::GeminiStreamDecoder;
/// use toolsmith_providers::decode::StreamDecoder;
///
/// let mut decoder = GeminiStreamDecoder::new();
/// let mut parts = Vec::new();
/// for data in [
///     r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]}}]}"#,
///     r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"now"}}]},
///        "finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":2}}"#,
/// ] {
///     decoder.push(data, &mut parts).unwrap();
/// }
/// decoder.finish(&mut parts).unwrap();
/// let Some(ModelPart::Finish { finish_reason, usage, .. }) = parts.last() else { panic!() };
/// assert_eq!(finish_reason.unified, UnifiedFinishReason::ToolCalls);
/// assert_eq!(usage.output.total, Some(2));
/// ```
#[derive(Debug)]
pub struct GeminiStreamDecoder {
    id_prefix: String,
    metadata_sent: bool,
    text: Option<Block>,
    reasoning: Option<Block>,
    blocks: usize,
    call: Option<OpenCall>,
    call_ids: HashSet<Arc<str>>,
    generated_ids: usize,
    calls: usize,
    /// The code execution call waiting for its result.
    pending_code: Option<String>,
    code_runs: u64,
    finish_reason: Option<String>,
    block_reason: Option<String>,
    usage: Option<Usage>,
    queries: HashSet<String>,
    source_urls: HashSet<String>,
    complete_body: bool,
    done: bool,
    /// What the stream's chunks repeat after their candidate, for the fast path.
    tail: Tail,
}

#[derive(Debug)]
struct Block {
    id: Arc<str>,
    signature: Option<String>,
}

#[derive(Debug)]
struct OpenCall {
    id: Arc<str>,
    wire_id: Option<String>,
    name: String,
    signature: Option<String>,
    args: ArgsWriter,
}

/// What a chunk says besides its candidates, as [`GeminiStreamDecoder::apply`] reads it from
/// either path.
struct Head<'a> {
    response_id: Option<Str<'a>>,
    model_version: Option<Str<'a>>,
    usage: Option<UsageMetadata>,
    block_reason: Option<Str<'a>>,
}

/// One candidate as [`GeminiStreamDecoder::apply`] reads it from either path: its parts are
/// serde's vector (converted one by one) or the fast path's one part (which reads only
/// candidates without sources).
struct CandidateView<'a, P> {
    index: Option<u64>,
    parts: P,
    finish_reason: Option<Str<'a>>,
    grounding: Option<Box<GroundingMetadata<'a>>>,
    citations: Option<Box<CitationMetadata<'a>>>,
}

impl Default for GeminiStreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl GeminiStreamDecoder {
    /// A decoder for one response.
    pub fn new() -> Self {
        GeminiStreamDecoder {
            id_prefix: format!("{:012x}", fastrand::u64(..) >> 16),
            metadata_sent: false,
            text: None,
            reasoning: None,
            blocks: 0,
            call: None,
            call_ids: HashSet::new(),
            generated_ids: 0,
            calls: 0,
            pending_code: None,
            code_runs: 0,
            finish_reason: None,
            block_reason: None,
            usage: None,
            queries: HashSet::new(),
            source_urls: HashSet::new(),
            complete_body: false,
            done: false,
            tail: Tail::default(),
        }
    }

    /// A decoder for a whole non-streamed body: a missing finish reason is not a truncation.
    pub(crate) fn for_body() -> Self {
        GeminiStreamDecoder {
            complete_body: true,
            ..Self::new()
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
        // Gemini never sends `[DONE]`; a proxy might.
        if self.done || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        // Text, thoughts and streamed call arguments, nearly every chunk, are read by hand;
        // anything else, and anything malformed, through serde (see `fast`).
        if fast {
            let mut chunk = HotChunk::default();
            if read_hot_chunk(data, &mut chunk, &mut self.tail).is_some() {
                let head = Head {
                    response_id: chunk.response_id,
                    model_version: chunk.model_version,
                    usage: chunk.usage_metadata,
                    block_reason: None,
                };
                let candidate = chunk.candidate.map(|c| CandidateView {
                    index: c.index,
                    parts: c.content.flatten(),
                    finish_reason: c.finish_reason,
                    grounding: None,
                    citations: None,
                });
                return self.apply(head, candidate, out);
            }
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(error) => {
                self.abort(out);
                // An error may come wrapped in an array, as Google's JSON streams send it.
                if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(data)
                    && let Some(inner) = items.first().and_then(|i| i.get("error"))
                {
                    return Err(stream_error(inner));
                }
                return Err(ModelError::new(
                    ModelErrorKind::InvalidResponse,
                    format!(
                        "Malformed chunk in the Gemini stream ({error}): {}",
                        excerpt(data, 200)
                    ),
                ));
            }
        };
        self.push_chunk(chunk, out)
    }

    /// Decodes one parsed chunk.
    pub(crate) fn push_chunk(
        &mut self,
        chunk: Chunk<'_>,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        if let Some(error) = chunk.error {
            self.abort(out);
            return Err(stream_error(&error));
        }
        let head = Head {
            response_id: chunk.response_id,
            model_version: chunk.model_version,
            usage: chunk.usage_metadata,
            block_reason: chunk.prompt_feedback.and_then(|f| f.block_reason),
        };
        // candidateCount > 1 is not supported: only the first candidate is read.
        let candidate = chunk
            .candidates
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
            .map(|c| CandidateView {
                index: c.index,
                parts: c
                    .content
                    .map(|c| c.parts)
                    .unwrap_or_default()
                    .into_iter()
                    .map(Part::from),
                finish_reason: c.finish_reason,
                grounding: c.grounding_metadata,
                citations: c.citation_metadata,
            });
        self.apply(head, candidate, out)
    }

    /// The parts of one chunk (not an error), however it was read: its head, then its first
    /// candidate, if any, read only when its index is 0.
    fn apply<'a>(
        &mut self,
        head: Head<'a>,
        candidate: Option<CandidateView<'a, impl IntoIterator<Item = Part<'a>>>>,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        if !self.metadata_sent && (head.response_id.is_some() || head.model_version.is_some()) {
            self.metadata_sent = true;
            out.push(ModelPart::ResponseMetadata {
                id: head.response_id.map(Str::into_owned),
                model_id: head.model_version.map(Str::into_owned),
            });
        }
        if let Some(usage) = head.usage.as_ref().and_then(map_usage) {
            self.usage = Some(usage);
        }
        if let Some(reason) = head
            .block_reason
            .filter(|r| !r.is_empty() && r != "BLOCK_REASON_UNSPECIFIED")
        {
            self.block_reason = Some(reason.into_owned());
        }
        let Some(candidate) = candidate.filter(|c| c.index.unwrap_or(0) == 0) else {
            return Ok(());
        };
        for part in candidate.parts {
            self.part(part, out)?;
        }
        if let Some(grounding) = candidate.grounding.map(|g| *g) {
            for query in grounding.web_search_queries {
                if let Value::String(query) = query {
                    self.queries.insert(query);
                }
            }
            for chunk in grounding.grounding_chunks {
                if let Some(web) = chunk.web {
                    self.source(web.uri.as_deref(), web.title.as_deref(), out);
                }
            }
        }
        if let Some(citations) = candidate.citations.map(|c| *c) {
            for citation in citations.citation_sources {
                self.source(citation.uri.as_deref(), citation.title.as_deref(), out);
            }
        }
        if let Some(reason) = candidate
            .finish_reason
            .filter(|r| !r.is_empty() && r != "FINISH_REASON_UNSPECIFIED")
        {
            // A call still streaming when the output stops for any reason but STOP (the token
            // limit, a filter) is cut short: its arguments are left unclosed, so the loop sees
            // malformed input instead of running a call whose last value was truncated.
            let cut_short = reason != "STOP";
            self.finish_reason = Some(reason.into_owned());
            self.close_blocks(out);
            if cut_short {
                self.end_cut_call(out);
            } else {
                self.end_call(out);
            }
        }
        Ok(())
    }

    fn part(&mut self, part: Part<'_>, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        let signature = part
            .thought_signature
            .filter(|s| !s.is_empty())
            .map(Str::into_owned);
        if let Some(call) = part.function_call {
            return self.function_call(call, signature, out);
        }
        if let Some(code) = part.executable_code {
            self.executable_code(*code, signature, out);
            return Ok(());
        }
        if let Some(result) = part.code_execution_result {
            self.code_result(*result, signature, out);
            return Ok(());
        }
        if let Some(data) = part.inline_data {
            self.end_call(out);
            self.close_blocks(out);
            out.push(ModelPart::File {
                media_type: data
                    .mime_type
                    .map_or_else(|| "application/octet-stream".into(), Str::into_owned),
                data: data.data.map(Str::into_owned).unwrap_or_default(),
            });
            return Ok(());
        }
        let text = part.text.map(Str::into_owned).unwrap_or_default();
        if text.is_empty() && signature.is_none() {
            return Ok(());
        }
        self.end_call(out);
        if part.thought == Some(true) {
            self.reasoning_delta(text, signature, out);
        } else {
            self.text_delta(text, signature, out);
        }
        Ok(())
    }

    fn next_block_id(&mut self, kind: &str) -> Arc<str> {
        let id = format!("{kind}_{}_{}", self.id_prefix, self.blocks);
        self.blocks += 1;
        id.into()
    }

    fn reasoning_delta(
        &mut self,
        delta: String,
        signature: Option<String>,
        out: &mut Vec<ModelPart>,
    ) {
        close(&mut self.text, out, false);
        if self.reasoning.is_none() {
            let id = self.next_block_id("reasoning");
            out.push(ModelPart::ReasoningStart { id: id.clone() });
            self.reasoning = Some(Block {
                id,
                signature: None,
            });
        }
        if let Some(block) = &mut self.reasoning {
            if !delta.is_empty() {
                out.push(ModelPart::ReasoningDelta {
                    id: block.id.clone(),
                    delta,
                });
            }
            if signature.is_some() {
                block.signature = signature;
                close(&mut self.reasoning, out, true);
            }
        }
    }

    fn text_delta(&mut self, delta: String, signature: Option<String>, out: &mut Vec<ModelPart>) {
        close(&mut self.reasoning, out, true);
        if self.text.is_none() {
            let id = self.next_block_id("text");
            out.push(ModelPart::TextStart { id: id.clone() });
            self.text = Some(Block {
                id,
                signature: None,
            });
        }
        if let Some(block) = &mut self.text {
            if !delta.is_empty() {
                out.push(ModelPart::TextDelta {
                    id: block.id.clone(),
                    delta,
                });
            }
            if signature.is_some() {
                block.signature = signature;
                close(&mut self.text, out, false);
            }
        }
    }

    fn close_blocks(&mut self, out: &mut Vec<ModelPart>) {
        close(&mut self.reasoning, out, true);
        close(&mut self.text, out, false);
    }

    fn source(&mut self, url: Option<&str>, title: Option<&str>, out: &mut Vec<ModelPart>) {
        let Some(url) = url.filter(|u| !u.is_empty()) else {
            return;
        };
        if self.source_urls.contains(url) {
            return;
        }
        let url = url.to_owned();
        self.source_urls.insert(url.clone());
        out.push(ModelPart::Source(Source {
            source_type: "url".into(),
            id: format!("src_{}_{}", self.id_prefix, self.source_urls.len()),
            url: Some(url),
            title: title.filter(|t| !t.is_empty()).map(str::to_owned),
        }));
    }

    /// Closes what is open after a failure (no tool call: its input is incomplete) and ignores
    /// anything later.
    fn abort(&mut self, out: &mut Vec<ModelPart>) {
        self.close_blocks(out);
        if let Some(call) = self.call.take() {
            out.push(ModelPart::ToolInputEnd { id: call.id });
        }
        self.done = true;
    }
}

/// Ends a text (`reasoning: false`) or reasoning block, its signature in the metadata.
fn close(block: &mut Option<Block>, out: &mut Vec<ModelPart>, reasoning: bool) {
    let Some(block) = block.take() else {
        return;
    };
    let mut provider_metadata = ProviderMetadata::default();
    if let Some(signature) = block.signature {
        provider_metadata.insert(PROVIDER, json!({"thoughtSignature": signature}));
    }
    out.push(if reasoning {
        ModelPart::ReasoningEnd {
            id: block.id,
            provider_metadata,
        }
    } else {
        ModelPart::TextEnd {
            id: block.id,
            provider_metadata,
        }
    });
}

fn map_usage(usage: &UsageMetadata) -> Option<Usage> {
    let UsageMetadata {
        prompt_token_count: prompt,
        cached_content_token_count: cached,
        candidates_token_count: candidates,
        thoughts_token_count: thoughts,
    } = *usage;
    if prompt.is_none() && candidates.is_none() && thoughts.is_none() {
        return None;
    }
    Some(Usage {
        input: InputTokens {
            total: prompt,
            no_cache: prompt.map(|p| p.saturating_sub(cached.unwrap_or(0))),
            cache_read: cached,
            cache_write: None,
        },
        output: OutputTokens {
            total: match (candidates, thoughts) {
                (None, None) => None,
                // Saturating: absurd counts from a server must not overflow (a panic in debug
                // builds, a wrapped total in release ones).
                (c, t) => Some(c.unwrap_or(0).saturating_add(t.unwrap_or(0))),
            },
            text: candidates,
            reasoning: thoughts,
        },
        server_tool_uses: 0,
    })
}

/// The error for an in-stream (or in-body) `error` object.
pub(crate) fn stream_error(error: &Value) -> ModelError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .unwrap_or("The provider reported an error.");
    let status = error.get("status").and_then(Value::as_str).unwrap_or("");
    let code = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..=599).contains(c));
    let kind = match (code, status) {
        (Some(code), _) => status_kind(code),
        (None, "RESOURCE_EXHAUSTED") => ModelErrorKind::RateLimited,
        (None, "UNAVAILABLE" | "INTERNAL") => ModelErrorKind::Server,
        (None, "DEADLINE_EXCEEDED") => ModelErrorKind::Timeout,
        (None, "UNAUTHENTICATED" | "PERMISSION_DENIED") => ModelErrorKind::Auth,
        (None, "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "NOT_FOUND" | "OUT_OF_RANGE") => {
            ModelErrorKind::InvalidRequest
        }
        _ => ModelErrorKind::Other,
    };
    let label = match (code, status) {
        (Some(code), "") => format!(" ({code})"),
        (Some(code), status) => format!(" ({code} {status})"),
        (None, "") => String::new(),
        (None, status) => format!(" ({status})"),
    };
    let mut model_error =
        ModelError::new(kind, format!("google reported an error{label}: {message}"));
    if let Some(code) = code {
        model_error = model_error.with_status(code);
    }
    if let Some(delay) = retry_info_delay(error) {
        model_error = model_error.with_retry_after(delay);
    }
    model_error
}

#[cfg(test)]
impl GeminiStreamDecoder {
    /// A decoder whose generated ids are fixed, so two decoders' parts can be compared.
    pub(super) fn with_id_prefix(prefix: &str) -> Self {
        GeminiStreamDecoder {
            id_prefix: prefix.to_owned(),
            ..Self::new()
        }
    }
}

impl StreamDecoder for GeminiStreamDecoder {
    /// Decodes one event payload, appending the parts it yields to `out`.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` for a payload that is not a JSON object, or for function-call arguments
    /// that cannot be placed (no open call, a malformed `jsonPath`); the provider's error (kind
    /// from its `code` / `status`, `retry_after` from a `RetryInfo`) for an in-stream `error`.
    /// What was open is closed first (no incomplete tool call is emitted) and the stream should
    /// end there.
    fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        self.push_with(data, out, true)
    }

    /// Ends the response after the last payload, appending the closing parts.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` — `The Gemini stream ended without a finish reason (truncated
    /// response).` — when no `finishReason` (nor prompt block reason) was seen: open text and
    /// reasoning blocks are closed and an open tool input ended, but the incomplete call is not
    /// emitted and there is no `Finish` part.
    fn finish(&mut self, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        if self.finish_reason.is_none() && self.block_reason.is_none() && !self.complete_body {
            self.abort(out);
            return Err(ModelError::new(
                ModelErrorKind::InvalidResponse,
                "The Gemini stream ended without a finish reason (truncated response).",
            ));
        }
        self.close_blocks(out);
        self.end_call(out);
        let unified = match self.finish_reason.as_deref() {
            Some("STOP") if self.calls > 0 => UnifiedFinishReason::ToolCalls,
            Some("STOP") => UnifiedFinishReason::Stop,
            Some("MAX_TOKENS") => UnifiedFinishReason::Length,
            Some(
                "SAFETY"
                | "RECITATION"
                | "BLOCKLIST"
                | "PROHIBITED_CONTENT"
                | "SPII"
                | "IMAGE_SAFETY"
                | "IMAGE_PROHIBITED_CONTENT"
                | "IMAGE_RECITATION",
            ) => UnifiedFinishReason::ContentFilter,
            Some(
                "MALFORMED_FUNCTION_CALL"
                | "UNEXPECTED_TOOL_CALL"
                | "TOO_MANY_TOOL_CALLS"
                | "MISSING_THOUGHT_SIGNATURE"
                | "MALFORMED_RESPONSE",
            ) => UnifiedFinishReason::Error,
            Some(_) => UnifiedFinishReason::Other,
            None if self.block_reason.is_some() => UnifiedFinishReason::ContentFilter,
            None if self.calls > 0 => UnifiedFinishReason::ToolCalls,
            None => UnifiedFinishReason::Stop,
        };
        let mut finish_reason = FinishReason::new(unified);
        finish_reason.raw = self.finish_reason.clone().or(self.block_reason.clone());
        let mut usage = self.usage.unwrap_or_default();
        usage.server_tool_uses = self.queries.len() as u64 + self.code_runs;
        out.push(ModelPart::Finish {
            usage,
            finish_reason,
            provider_metadata: ProviderMetadata::default(),
        });
        self.done = true;
        Ok(())
    }

    /// Whether the response is over (finished or failed): later payloads are ignored.
    fn is_done(&self) -> bool {
        self.done
    }
}

/// Decodes an event stream into the model's parts, prefixed by a `StreamStart` with `warnings`.
pub fn decode_events(events: SseStream, warnings: Vec<String>) -> ModelStream {
    crate::decode::decode_events(events, GeminiStreamDecoder::new(), warnings)
}
