//! Messages API stream decoding: events in, [`ModelPart`]s out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsmith_core::{
    FinishReason, InputTokens, ModelError, ModelErrorKind, ModelPart, ModelStream, ModelToolCall,
    OutputTokens, ProviderMetadata, Source, UnifiedFinishReason, Usage,
};

use super::fast::read_hot_event;
use super::wire::{Delta, Event, WireMessage, WireUsage};
use crate::decode::StreamDecoder;
use crate::errors::excerpt;
use crate::sse::SseStream;

/// The key provider metadata is stored under.
pub(crate) const PROVIDER: &str = "anthropic";

/// The error a stream that ends before `message_stop` reports.
pub const TRUNCATED: &str = "The Anthropic stream ended before message_stop (truncated response).";

/// Turns Messages API stream events (the `data:` payload of each server-sent event; its `type`
/// field names the event) into [`ModelPart`]s.
///
/// - `message_start` gives the [`ModelPart::ResponseMetadata`] (once) and the input usage; any
///   blocks already in its `content` are emitted at once, as if streamed (programmatic tool
///   calling sends whole `tool_use` turns this way).
/// - `content_block_start` / `_delta` / `_stop` stream text (`text_delta`), reasoning
///   (`thinking_delta`, `signature_delta`: the signature rides on the `ReasoningEnd` as
///   `{"anthropic":{"signature":…}}`; `redacted_thinking` as `{"anthropic":{"redactedData":…}}`)
///   and tool input (`input_json_delta`). A `tool_use` block is a client call; a
///   `server_tool_use` or `mcp_tool_use` block a provider-executed one. Input that never got a
///   delta is the start block's `input` (`{}` when empty); the concatenated deltas always equal
///   the [`ModelPart::ToolCall`]'s input. A block without an id, or with the id of an earlier
///   block of the response, gets a generated one (`toolu_generated_<n>`).
/// - Every `*_tool_result` block (`web_search_tool_result`, `web_fetch_tool_result`,
///   `code_execution_tool_result`, `bash_code_execution_tool_result`,
///   `text_editor_code_execution_tool_result`, `tool_search_tool_result`, `mcp_tool_result`…)
///   becomes a [`ModelPart::ToolResult`] paired by `tool_use_id`, its `result` the block's
///   `content` verbatim; it is an error when the content is an `*_error` object (or the block
///   says `is_error: true`). The block's other fields (its `type`…) ride in the provider
///   metadata so the request builder echoes the block back exactly.
/// - Sources, as in the Deuz SDK: each element of a `web_search_tool_result` that has a `url`
///   becomes a [`ModelPart::Source`] with id `<tool_use_id>:<i>` (`i` counts the emitted elements
///   from 0). Text-block citations (`citations_delta`) are *not* sources; they are kept on the
///   `TextEnd` as `{"anthropic":{"citations":[…]}}` and echoed back with the text.
/// - `message_delta` gives the stop reason and the final usage (its counts replace those of
///   `message_start`, so a late `input_tokens` wins); `message_stop` ends the message. `ping`
///   and unknown events, blocks and deltas (a `fallback` block…) are ignored; a `fallback`
///   block, the `container`, `stop_sequence` and `stop_details` are kept in the `Finish`
///   part's metadata.
///
/// **Several messages in one stream.** A `message_start` after a `message_stop` continues the
/// response with another message (the recorded programmatic-tool-calling stream chains 14):
/// the parts of every message are emitted in order, usage is summed over the messages and the
/// finish reason is the last message's. So the one `Finish` part comes when the body ends (or
/// at a `[DONE]` sentinel), not at `message_stop`. A `message_start` while a message is open is
/// a duplicate and ignored (same id, or nothing streamed yet), unless a content block is still
/// open: then the stream is spliced and decoding fails (open blocks closed, no tool call for the
/// open input, no `Finish`). A new message after complete blocks (or after `message_delta`)
/// without `message_stop` ends the previous message. A body cut exactly after a `message_stop`
/// cannot be told from a complete response.
///
/// Usage: `input.total` = `input_tokens` + `cache_creation_input_tokens` +
/// `cache_read_input_tokens`, `no_cache` = `input_tokens`, `cache_write` =
/// `cache_creation_input_tokens`, `cache_read` = `cache_read_input_tokens`, `output.total` =
/// `output_tokens` (thinking included; the split is not reported), `server_tool_uses` = the sum
/// of the `server_tool_use` counts (`web_search_requests`, `web_fetch_requests`,
/// `code_execution_requests`…).
///
/// Finish reasons: `end_turn` and `stop_sequence` → stop, `max_tokens` and
/// `model_context_window_exceeded` → length, `tool_use` → tool-calls, `refusal` →
/// content-filter, `pause_turn` and anything else → other; the raw string is kept.
///
/// ```
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::anthropic::MessagesStreamDecoder;
/// use toolsmith_providers::decode::StreamDecoder;
///
/// let mut decoder = MessagesStreamDecoder::new();
/// let mut parts = Vec::new();
/// for data in [
///     r#"{"type":"message_start","message":{"id":"msg_1","model":"claude","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}"#,
///     r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
///     r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
///     r#"{"type":"content_block_stop","index":0}"#,
///     r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
///     r#"{"type":"message_stop"}"#,
/// ] {
///     decoder.push(data, &mut parts).unwrap();
/// }
/// decoder.finish(&mut parts).unwrap();
/// let Some(ModelPart::Finish { usage, .. }) = parts.last() else { panic!() };
/// assert_eq!((usage.input.total, usage.output.total), (Some(5), Some(2)));
/// ```
#[derive(Debug, Default)]
pub struct MessagesStreamDecoder {
    metadata_sent: bool,
    state: MessageState,
    message_id: Option<String>,
    /// Whether the open message has had a content block.
    had_blocks: bool,
    blocks: Vec<(u64, Block)>,
    /// The open message's usage and stop reason.
    usage: WireUsage,
    stop_reason: Option<String>,
    /// Summed over the stopped messages.
    total: Option<Usage>,
    last_stop_reason: Option<String>,
    finish_metadata: Map<String, Value>,
    /// Provider-executed calls' names, to name their results.
    server_tools: HashMap<String, String>,
    /// The ids of the response's tool blocks so far.
    tool_ids: HashSet<Arc<str>>,
    generated_ids: usize,
    done: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum MessageState {
    #[default]
    None,
    Open,
    Stopped,
}

#[derive(Debug)]
enum Block {
    Text {
        id: Arc<str>,
        citations: Vec<Value>,
    },
    Reasoning {
        id: Arc<str>,
        signature: Option<String>,
        redacted: Option<String>,
    },
    Tool {
        id: Arc<str>,
        name: String,
        input: String,
        start_input: String,
        provider_executed: bool,
        metadata: Map<String, Value>,
    },
    /// A result (emitted at its start), a `fallback` block or an unknown block.
    Other,
}

impl MessagesStreamDecoder {
    /// A decoder for one response.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`push`](StreamDecoder::push), trying the hand-written reader of the hot event shapes
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
            return self.finish(out);
        }
        // Token deltas and the small events around them, nearly every event, are read by hand;
        // anything else, and anything malformed, through serde (see `fast`).
        let mut event = Event::default();
        if !fast || read_hot_event(data, &mut event).is_none() {
            event = match serde_json::from_str(data) {
                Ok(event) => event,
                Err(error) => {
                    self.abort(out);
                    return Err(ModelError::new(
                        ModelErrorKind::InvalidResponse,
                        format!(
                            "Malformed event in the Anthropic stream ({error}): {}",
                            excerpt(data, 200)
                        ),
                    ));
                }
            };
        }
        self.apply(&mut event, out)
    }

    /// The parts of one event, however it was read. The event is taken apart in place (its
    /// fields moved out): moving a whole event or delta cost a memcpy of some 200 bytes on
    /// every token.
    fn apply(&mut self, event: &mut Event<'_>, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        match event.kind.as_deref().unwrap_or_default() {
            "message_start" => {
                self.message_start(event.message.take().map(|m| *m).unwrap_or_default(), out)?
            }
            "content_block_start" => {
                let index = event.index.unwrap_or(0);
                self.block_start(
                    index,
                    event.content_block.take().map(|b| *b).unwrap_or_default(),
                    out,
                );
            }
            "content_block_delta" => {
                if let Some(delta) = &mut event.delta {
                    self.block_delta(event.index.unwrap_or(0), delta, out);
                }
            }
            "content_block_stop" => self.block_stop(event.index.unwrap_or(0), out),
            "message_delta" => {
                self.open_message();
                if let Some(delta) = event.delta.take() {
                    if let Some(reason) = delta.stop_reason {
                        self.stop_reason = Some(reason.into_owned());
                    }
                    self.keep(
                        "stop_sequence",
                        delta.stop_sequence.map(|s| Value::String(s.into_owned())),
                    );
                    self.keep("stop_details", delta.stop_details.map(|v| *v));
                    self.keep("container", delta.container.map(|v| *v));
                }
                if let Some(usage) = event.usage.take().map(|u| *u) {
                    self.usage.merge(usage);
                }
            }
            "message_stop" => self.message_stop(out),
            "error" => {
                self.abort(out);
                return Err(stream_error(event.error.as_deref()));
            }
            // `ping` and event types this build does not know.
            _ => {}
        }
        Ok(())
    }

    /// Decodes a whole message (a non-streamed response body): as a `message_start` holding
    /// every block, then `message_stop`.
    pub(crate) fn whole_message(
        &mut self,
        message: WireMessage,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        self.message_start(message, out)?;
        self.message_stop(out);
        Ok(())
    }

    fn keep(&mut self, key: &str, value: Option<Value>) {
        if let Some(value) = value.filter(|v| !v.is_null()) {
            self.finish_metadata.insert(key.into(), value);
        }
    }

    /// Blocks or deltas before any `message_start`: a message is open all the same.
    fn open_message(&mut self) {
        if self.state == MessageState::None {
            self.state = MessageState::Open;
        }
    }

    fn message_start(
        &mut self,
        message: WireMessage,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        if self.state == MessageState::Open {
            if let Some((index, block)) = self.blocks.first() {
                let what = match block {
                    Block::Tool { name, .. } => format!("the input of tool call {name:?}"),
                    Block::Text { .. } => "a text block".to_string(),
                    Block::Reasoning { .. } => "a thinking block".to_string(),
                    Block::Other => "a content block".to_string(),
                };
                let message = format!(
                    "A second message started ({}) while {what} (content block {index} of {}) was still open: the Anthropic stream is spliced.",
                    message.id.as_deref().unwrap_or("no id"),
                    self.message_id.as_deref().unwrap_or("the first message"),
                );
                self.abort(out);
                return Err(ModelError::new(ModelErrorKind::InvalidResponse, message));
            }
            let same = message.id.is_none() || message.id == self.message_id;
            if self.stop_reason.is_none() && (same || !self.had_blocks) {
                // A duplicate `message_start`: the message goes on.
                return Ok(());
            }
            // The message is over though `message_stop` never came (`message_delta` did, or a
            // new message id follows content).
            self.message_stop(out);
        }
        self.state = MessageState::Open;
        if !self.metadata_sent {
            self.metadata_sent = true;
            out.push(ModelPart::ResponseMetadata {
                id: message.id.clone(),
                model_id: message.model.clone(),
            });
        }
        self.message_id = message.id;
        self.had_blocks = false;
        self.usage = message.usage.unwrap_or_default();
        self.stop_reason = message.stop_reason;
        self.keep("stop_sequence", message.stop_sequence.map(Value::String));
        self.keep("stop_details", message.stop_details);
        self.keep("container", message.container);
        for (index, block) in message.content.into_iter().enumerate() {
            let index = index as u64;
            self.block_start(index, block, out);
            self.block_stop(index, out);
        }
        Ok(())
    }

    fn message_stop(&mut self, out: &mut Vec<ModelPart>) {
        // Blocks a server forgot to stop are finished as they are.
        while let Some((index, _)) = self.blocks.first() {
            let index = *index;
            self.block_stop(index, out);
        }
        if self.state == MessageState::Stopped {
            return;
        }
        self.state = MessageState::Stopped;
        let usage = map_usage(&std::mem::take(&mut self.usage));
        self.total = Some(match self.total {
            Some(total) => total + usage,
            None => usage,
        });
        self.last_stop_reason = self.stop_reason.take();
    }

    fn block_id(&self, index: u64) -> Arc<str> {
        format!("{}:{index}", self.message_id.as_deref().unwrap_or("msg")).into()
    }

    fn block_start(&mut self, index: u64, mut block: Map<String, Value>, out: &mut Vec<ModelPart>) {
        self.open_message();
        self.had_blocks = true;
        if self.blocks.iter().any(|(i, _)| *i == index) {
            self.block_stop(index, out);
        }
        let kind = match block.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => String::new(),
        };
        let state = match kind.as_str() {
            "text" => {
                let id = self.block_id(index);
                out.push(ModelPart::TextStart { id: id.clone() });
                if let Some(text) = string(&block, "text").filter(|t| !t.is_empty()) {
                    out.push(ModelPart::TextDelta {
                        id: id.clone(),
                        delta: text.to_string(),
                    });
                }
                let citations = match block.shift_remove("citations") {
                    Some(Value::Array(citations)) => citations,
                    _ => Vec::new(),
                };
                Block::Text { id, citations }
            }
            "thinking" | "redacted_thinking" => {
                let id = self.block_id(index);
                out.push(ModelPart::ReasoningStart { id: id.clone() });
                if let Some(text) = string(&block, "thinking").filter(|t| !t.is_empty()) {
                    out.push(ModelPart::ReasoningDelta {
                        id: id.clone(),
                        delta: text.to_string(),
                    });
                }
                Block::Reasoning {
                    id,
                    signature: string(&block, "signature")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string),
                    redacted: (kind == "redacted_thinking")
                        .then(|| string(&block, "data").unwrap_or_default().to_string()),
                }
            }
            "tool_use" | "server_tool_use" | "mcp_tool_use" => self.tool_start(kind, block, out),
            _ if kind.ends_with("_tool_result") => {
                self.tool_result(block, out);
                Block::Other
            }
            "fallback" => {
                block.shift_remove("type");
                self.finish_metadata
                    .insert("fallback".into(), Value::Object(block));
                Block::Other
            }
            _ => Block::Other,
        };
        self.blocks.push((index, state));
    }

    fn tool_start(
        &mut self,
        kind: String,
        mut block: Map<String, Value>,
        out: &mut Vec<ModelPart>,
    ) -> Block {
        let provider_executed = kind != "tool_use";
        // An id an earlier block of the response has (a server repeating one) would make two
        // calls one: that block gets a generated id, as a Chat Completions call does.
        let id: Arc<str> = match block.shift_remove("id") {
            Some(Value::String(id)) if !id.is_empty() && !self.tool_ids.contains(id.as_str()) => {
                id.into()
            }
            _ => loop {
                self.generated_ids += 1;
                let id = format!("toolu_generated_{}", self.generated_ids);
                if !self.tool_ids.contains(id.as_str()) {
                    break id.into();
                }
            },
        };
        self.tool_ids.insert(id.clone());
        let name = match block.shift_remove("name") {
            Some(Value::String(name)) => name,
            _ => String::new(),
        };
        let start_input = match block.shift_remove("input") {
            Some(Value::Object(map)) if map.is_empty() => String::new(),
            Some(Value::Null) | None => String::new(),
            Some(input) => input.to_string(),
        };
        if provider_executed {
            self.server_tools.insert(id.to_string(), name.clone());
        } else {
            // A client call's metadata holds only what is not implied (its `caller`…).
            block.shift_remove("type");
        }
        out.push(ModelPart::ToolInputStart {
            id: id.clone(),
            tool_name: name.clone(),
            provider_executed,
        });
        Block::Tool {
            id,
            name,
            input: String::new(),
            start_input,
            provider_executed,
            metadata: block,
        }
    }

    fn tool_result(&mut self, mut block: Map<String, Value>, out: &mut Vec<ModelPart>) {
        let tool_use_id = match block.shift_remove("tool_use_id") {
            Some(Value::String(id)) => id,
            _ => String::new(),
        };
        let kind = string(&block, "type").unwrap_or_default().to_string();
        let content = block.shift_remove("content").unwrap_or(Value::Null);
        let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true)
            || content
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("_error"));
        let tool_name = self
            .server_tools
            .get(&tool_use_id)
            .cloned()
            .unwrap_or_else(|| kind.trim_end_matches("_tool_result").to_string());
        let sources = if kind == "web_search_tool_result" {
            web_search_sources(&tool_use_id, &content)
        } else {
            Vec::new()
        };
        let mut provider_metadata = ProviderMetadata::default();
        provider_metadata.insert(PROVIDER, Value::Object(block));
        out.push(ModelPart::ToolResult {
            tool_call_id: tool_use_id,
            tool_name,
            result: content,
            is_error,
            provider_metadata,
        });
        out.extend(sources.into_iter().map(ModelPart::Source));
    }

    fn block_delta(&mut self, index: u64, delta: &mut Delta<'_>, out: &mut Vec<ModelPart>) {
        let Some((_, block)) = self.blocks.iter_mut().find(|(i, _)| *i == index) else {
            return;
        };
        match (block, delta.kind.as_deref()) {
            (Block::Text { id, .. }, Some("text_delta")) => {
                if let Some(text) = delta.text.take().filter(|t| !t.is_empty()) {
                    out.push(ModelPart::TextDelta {
                        id: id.clone(),
                        delta: text.into_owned(),
                    });
                }
            }
            (Block::Text { citations, .. }, Some("citations_delta")) => {
                citations.extend(delta.citation.take().map(|c| *c));
            }
            (Block::Reasoning { id, .. }, Some("thinking_delta")) => {
                if let Some(text) = delta.thinking.take().filter(|t| !t.is_empty()) {
                    out.push(ModelPart::ReasoningDelta {
                        id: id.clone(),
                        delta: text.into_owned(),
                    });
                }
            }
            (Block::Reasoning { signature, .. }, Some("signature_delta")) => {
                if let Some(more) = delta.signature.take() {
                    signature.get_or_insert_with(String::new).push_str(&more);
                }
            }
            (Block::Tool { id, input, .. }, Some("input_json_delta")) => {
                if let Some(json) = delta.partial_json.take().filter(|j| !j.is_empty()) {
                    input.push_str(&json);
                    out.push(ModelPart::ToolInputDelta {
                        id: id.clone(),
                        delta: json.into_owned(),
                    });
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, index: u64, out: &mut Vec<ModelPart>) {
        let Some(pos) = self.blocks.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, block) = self.blocks.remove(pos);
        match block {
            Block::Text { id, citations } => {
                let mut provider_metadata = ProviderMetadata::default();
                if !citations.is_empty() {
                    provider_metadata.insert(PROVIDER, json!({ "citations": citations }));
                }
                out.push(ModelPart::TextEnd {
                    id,
                    provider_metadata,
                });
            }
            Block::Reasoning {
                id,
                signature,
                redacted,
            } => {
                let mut data = Map::new();
                if let Some(signature) = signature {
                    data.insert("signature".into(), Value::String(signature));
                }
                if let Some(redacted) = redacted {
                    data.insert("redactedData".into(), Value::String(redacted));
                }
                let mut provider_metadata = ProviderMetadata::default();
                if !data.is_empty() {
                    provider_metadata.insert(PROVIDER, Value::Object(data));
                }
                out.push(ModelPart::ReasoningEnd {
                    id,
                    provider_metadata,
                });
            }
            Block::Tool {
                id,
                name,
                mut input,
                start_input,
                provider_executed,
                metadata,
            } => {
                if input.is_empty() {
                    input = if start_input.is_empty() {
                        "{}".to_string()
                    } else {
                        start_input
                    };
                    out.push(ModelPart::ToolInputDelta {
                        id: id.clone(),
                        delta: input.clone(),
                    });
                }
                out.push(ModelPart::ToolInputEnd { id: id.clone() });
                let mut call = ModelToolCall::new(&*id, name, input);
                call.provider_executed = provider_executed;
                if !metadata.is_empty() {
                    call.provider_metadata
                        .insert(PROVIDER, Value::Object(metadata));
                }
                out.push(ModelPart::ToolCall(call));
            }
            Block::Other => {}
        }
    }

    /// Closes what is open after a failure: text and reasoning ends, tool input ends (but no
    /// tool calls: their input is incomplete), and ignores anything later.
    fn abort(&mut self, out: &mut Vec<ModelPart>) {
        for (_, block) in self.blocks.drain(..) {
            match block {
                Block::Text { id, .. } => out.push(ModelPart::TextEnd {
                    id,
                    provider_metadata: ProviderMetadata::default(),
                }),
                Block::Reasoning { id, .. } => out.push(ModelPart::ReasoningEnd {
                    id,
                    provider_metadata: ProviderMetadata::default(),
                }),
                Block::Tool { id, .. } => out.push(ModelPart::ToolInputEnd { id }),
                Block::Other => {}
            }
        }
        self.done = true;
    }
}

fn string<'a>(block: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    block.get(key).and_then(Value::as_str)
}

/// As in the Deuz SDK: every element of a web search result that has a `url` is a source
/// `<tool_use_id>:<i>`, `i` counting the emitted elements; an error result has none.
fn web_search_sources(tool_use_id: &str, content: &Value) -> Vec<Source> {
    let Value::Array(results) = content else {
        return Vec::new();
    };
    let prefix = if tool_use_id.is_empty() {
        "srv"
    } else {
        tool_use_id
    };
    results
        .iter()
        .filter_map(|result| {
            let url = result.get("url").and_then(Value::as_str)?;
            Some((url, result.get("title").and_then(Value::as_str)))
        })
        .enumerate()
        .map(|(i, (url, title))| Source {
            source_type: "url".into(),
            id: format!("{prefix}:{i}"),
            url: Some(url.to_string()),
            title: title.map(str::to_string),
        })
        .collect()
}

pub(crate) fn map_usage(usage: &WireUsage) -> Usage {
    let input = usage.input_tokens;
    let write = usage.cache_creation_input_tokens;
    let read = usage.cache_read_input_tokens;
    let total = match (input, write, read) {
        (None, None, None) => None,
        _ => Some(input.unwrap_or(0) + write.unwrap_or(0) + read.unwrap_or(0)),
    };
    let server_tool_uses = usage
        .server_tool_use
        .as_ref()
        .map(|counts| counts.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0);
    Usage {
        input: InputTokens {
            total,
            no_cache: input,
            cache_read: read,
            cache_write: write,
        },
        output: OutputTokens {
            total: usage.output_tokens,
            text: None,
            reasoning: None,
        },
        server_tool_uses,
    }
}

/// The error an `error` event (or an error body) reports.
pub(crate) fn stream_error(error: Option<&Value>) -> ModelError {
    let kind_name = error
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("no message");
    let kind = match kind_name {
        "overloaded_error" | "api_error" => ModelErrorKind::Server,
        "rate_limit_error" => ModelErrorKind::RateLimited,
        "authentication_error" | "permission_error" => ModelErrorKind::Auth,
        "invalid_request_error" | "not_found_error" | "request_too_large" => {
            ModelErrorKind::InvalidRequest
        }
        "timeout_error" => ModelErrorKind::Timeout,
        _ => ModelErrorKind::Other,
    };
    ModelError::new(
        kind,
        format!("Anthropic reported an error ({kind_name}): {message}"),
    )
}

impl StreamDecoder for MessagesStreamDecoder {
    /// Decodes one event payload, appending the parts it yields to `out`.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` for a payload that is not JSON or for a spliced stream (a new message
    /// while a block is open); the provider's error for an `error` event (`overloaded_error` →
    /// `Server`, `rate_limit_error` → `RateLimited`…). Open blocks are closed first (no tool
    /// call for incomplete input) and nothing later is decoded.
    fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        self.push_with(data, out, true)
    }

    /// Ends the response after the last payload: the `Finish` part.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` ([`TRUNCATED`]) when the last message never reached `message_stop`:
    /// open text and reasoning blocks are closed, open tool inputs ended without a tool call,
    /// and no `Finish` part is added.
    fn finish(&mut self, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        if self.state != MessageState::Stopped {
            self.abort(out);
            return Err(ModelError::new(ModelErrorKind::InvalidResponse, TRUNCATED));
        }
        let raw = self.last_stop_reason.clone();
        let unified = match raw.as_deref() {
            Some("end_turn" | "stop_sequence") => UnifiedFinishReason::Stop,
            Some("max_tokens" | "model_context_window_exceeded") => UnifiedFinishReason::Length,
            Some("tool_use") => UnifiedFinishReason::ToolCalls,
            Some("refusal") => UnifiedFinishReason::ContentFilter,
            _ => UnifiedFinishReason::Other,
        };
        let mut finish_reason = FinishReason::new(unified);
        finish_reason.raw = raw;
        let mut provider_metadata = ProviderMetadata::default();
        if !self.finish_metadata.is_empty() {
            provider_metadata.insert(
                PROVIDER,
                Value::Object(std::mem::take(&mut self.finish_metadata)),
            );
        }
        out.push(ModelPart::Finish {
            usage: self.total.unwrap_or_default(),
            finish_reason,
            provider_metadata,
        });
        self.done = true;
        Ok(())
    }

    /// Whether the response is complete (or failed): later payloads are ignored.
    fn is_done(&self) -> bool {
        self.done
    }
}

/// Decodes an event stream into the model's parts, prefixed by a `StreamStart` with `warnings`.
pub fn decode_events(events: SseStream, warnings: Vec<String>) -> ModelStream {
    crate::decode::decode_events(events, MessagesStreamDecoder::new(), warnings)
}
