//! Responses stream decoding: `response.*` events in, [`ModelPart`]s out.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolsmith_core::{
    ModelError, ModelErrorKind, ModelPart, ModelStream, ProviderMetadata, Source,
};

use super::error::provider_error;
use super::fast::read_event;
use super::items::{self, Kind};
use super::wire::{Event, HANDLED, ResponseInfo};

mod close;
use crate::borrowed::Str;
use crate::decode::StreamDecoder;
use crate::errors::excerpt;
use crate::sse::SseStream;

/// The message of the error reported when the body ends before `response.completed`.
pub const TRUNCATED: &str =
    "The Responses stream ended before response.completed (truncated response).";

/// Turns Responses API stream payloads (the `data:` of each server-sent event) into
/// [`ModelPart`]s.
///
/// One output item at a time, keyed by `output_index` (or `item_id`). Item ids go into the
/// metadata only when the server sent them (an id generated for an item without one is never
/// echoed back):
///
/// - `message`: a text block whose id is the item id; `output_text.delta`s stream, the
///   `TextEnd` carries `{"openai":{"itemId":…}}`. `url_citation` annotations become
///   [`Source`]s of type `url`, `file_citation`s sources of type `document` (title = file name).
/// - `reasoning`: one block per summary part (`{itemId}:{summaryIndex}`) and per raw
///   `reasoning_text` part (`{itemId}:text:{contentIndex}`, LM Studio). All stay open until the
///   item is done, so every `ReasoningEnd` carries `{"openai":{"itemId", "reasoningEncryptedContent"}}`
///   for the round trip (`"reasoningText": true` marks raw text blocks). A reasoning item with
///   no text still yields one empty block, so its id and encrypted content reach the thread.
/// - `function_call`: `ToolInputStart` (id = `call_id`), the argument deltas, `ToolInputEnd` and
///   a [`ModelPart::ToolCall`] with `{"openai":{"itemId":…}}`. A `function_call_arguments.done`
///   (or `output_item.done`) without deltas yields one delta with the whole arguments; when the
///   final arguments extend what was streamed, the rest is sent as one more delta.
/// - `custom_tool_call` (free-form input): a local call whose input is the JSON object
///   `{"input":"<text>"}`, streamed as escaped pieces so the deltas still concatenate to it.
/// - `shell_call`, `local_shell_call`, `apply_patch_call`, client `tool_search_call`,
///   `computer_call`: tools OpenAI expects the *client* to run. They become local calls named
///   `shell`, `local_shell`, `apply_patch`, `tool_search`, `computer`, whose input is the item's
///   `action` / `operation` / `arguments` object, with `{"openai":{"itemId","type"}}` so the
///   request builder can echo the native item and answer with the matching `*_output` item.
/// - Hosted tools (`web_search_call`, `file_search_call`, `code_interpreter_call`,
///   `image_generation_call`, `mcp_call`, `mcp_list_tools`, `mcp_approval_request`, server
///   `tool_search_call`): a provider-executed call (id = item id, input = what the item says it
///   did) and, when the item is done, its [`ModelPart::ToolResult`] holding the item verbatim
///   (`isError` when its status is `failed` or it has an `error`). Each `web_search_call` adds one
///   to `usage.server_tool_uses` (as in the Deuz SDK). A generated image (`image_generation_call`
///   with a `result`) also comes as a [`ModelPart::File`].
/// - A leaked `parallel` / `multi_tool_use.parallel` wrapper call whose arguments are
///   `{"tool_uses":[{"recipient_name":"functions.NAME","parameters":{…}}]}` is expanded into one
///   call per entry (ids `{call_id}_{i}`, no item id); any other call of that name passes as is.
///
/// `response.completed` / `response.incomplete` end the response with a `Finish` (usage with
/// cached and reasoning tokens; `tool-calls` when a local call was made, else `stop`;
/// `length` for `max_output_tokens`, `content-filter` for `content_filter`). An `error` event or
/// `response.failed` ends it with the provider's error. The decoder stops at the first finished
/// response ([`is_done`](StreamDecoder::is_done)); events of a second response in the same body are
/// ignored. Unknown events and item types are ignored.
///
/// ```
/// use toolsmith_core::ModelPart;
/// use toolsmith_providers::openai_responses::ResponsesStreamDecoder;
/// use toolsmith_providers::decode::StreamDecoder;
///
/// let mut decoder = ResponsesStreamDecoder::new();
/// let mut parts = Vec::new();
/// for data in [
///     r#"{"type":"response.created","response":{"id":"resp_1","model":"gpt-5"}}"#,
///     r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1"}}"#,
///     r#"{"type":"response.output_text.delta","output_index":0,"item_id":"msg_1","delta":"Hi"}"#,
///     r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_1"}}"#,
///     r#"{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":1}}}"#,
/// ] {
///     decoder.push(data, &mut parts).unwrap();
/// }
/// assert!(decoder.is_done());
/// assert!(matches!(parts.last(), Some(ModelPart::Finish { .. })));
/// ```
#[derive(Debug)]
pub struct ResponsesStreamDecoder {
    id_prefix: String,
    generated: usize,
    metadata_sent: bool,
    items: Vec<ItemState>,
    local_calls: usize,
    server_tool_uses: u64,
    sources: usize,
    done: bool,
}

#[derive(Debug)]
struct ItemState {
    output_index: Option<u64>,
    /// Whether the server gave the item an id (else `item_id` is generated and never sent back).
    has_id: bool,
    item_id: Arc<str>,
    kind: Kind,
    finished: bool,
    /// Message: the open text block.
    text_open: bool,
    text_len: usize,
    /// Reasoning: the open blocks.
    blocks: Vec<Block>,
    /// Calls.
    call_id: Arc<str>,
    name: String,
    input: String,
    started: bool,
    ended: bool,
}

/// An open reasoning block: one summary part, or one raw `reasoning_text` part, of an item.
#[derive(Debug)]
struct Block {
    /// `{itemId}:{index}`, or `{itemId}:text:{index}` for raw text.
    id: Arc<str>,
    /// Raw text (`reasoning_text`) rather than a summary.
    raw: bool,
    /// The part's index. With `raw`, what a delta's block is found by: comparing ids meant
    /// formatting one for every delta.
    index: u64,
    /// Whether text arrived (a done item's texts are used only for an item that had none).
    has_text: bool,
}

impl Default for ResponsesStreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn openai_metadata(fields: Map<String, Value>) -> ProviderMetadata {
    let mut metadata = ProviderMetadata::default();
    if fields.is_empty() {
        return metadata;
    }
    metadata.insert("openai", Value::Object(fields));
    metadata
}

/// A JSON string's content, without the quotes: escaping is per character, so escaped pieces
/// concatenate to the escaped whole.
fn escape(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted[1..quoted.len() - 1].to_string()
}

impl ResponsesStreamDecoder {
    /// A decoder for one response.
    pub fn new() -> Self {
        ResponsesStreamDecoder {
            id_prefix: format!("{:012x}", fastrand::u64(..) >> 16),
            generated: 0,
            metadata_sent: false,
            items: Vec::new(),
            local_calls: 0,
            server_tool_uses: 0,
            sources: 0,
            done: false,
        }
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
        if self.done || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        // Deltas, the lifecycle events and the others without an item, an annotation or an
        // error, nearly every event, are read by hand; the rest, and anything malformed,
        // through serde (see `fast`).
        if fast {
            let mut event = Event::default();
            if read_event(data, &mut event).is_some() {
                return self.apply(&mut event, out);
            }
        }
        let mut event: Event<'_> = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(error) => return self.unreadable(data, &error, out),
        };
        self.apply(&mut event, out)
    }

    /// One event already parsed (a non-streamed body replayed as its stream's events): read
    /// straight from the value, its strings borrowed. Printing each event back to text for
    /// [`push`](StreamDecoder::push) parsed every body twice, its whole `response` object
    /// included. An event the value does not deserialise into goes through `push` as text, so
    /// its error (or its being ignored) is the stream's, word for word.
    pub(super) fn push_value(
        &mut self,
        event: &Value,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        match Event::deserialize(event) {
            Ok(mut parsed) => self.apply(&mut parsed, out),
            Err(_) => self.push(&event.to_string(), out),
        }
    }

    /// The parts of one event, however it was read. Takes the event by reference (its fields
    /// are taken out as needed): it is large, and moving it cost a measurable copy per event.
    fn apply(&mut self, event: &mut Event<'_>, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        let index = event.output_index;
        let item_id = event.item_id.as_deref();
        match &*event.kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                self.metadata(event.response.as_ref(), out);
            }
            "response.output_item.added" => {
                if let Some(item) = &event.item {
                    self.item_added(index, item, out);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item.take() {
                    self.item_done(index, item, out);
                }
            }
            // A refusal is the answer the user gets: it streams as text.
            "response.output_text.delta" | "response.refusal.delta" => {
                let slot = self.slot_or_create(index, item_id, Kind::Message, out);
                let delta = event.delta.take().map(Str::into_owned).unwrap_or_default();
                self.text_delta(slot, delta, out);
            }
            "response.output_text.annotation.added" => {
                if let Some(annotation) = &event.annotation {
                    self.annotation(annotation, out);
                }
            }
            "response.reasoning_summary_part.added" => {
                let slot = self.slot_or_create(index, item_id, Kind::Reasoning, out);
                if self.is_open_reasoning(slot) {
                    let part = event.summary_index.unwrap_or(0);
                    self.reasoning_block(slot, false, part, out);
                }
            }
            kind @ ("response.reasoning_summary_text.delta" | "response.reasoning_text.delta") => {
                let raw = kind == "response.reasoning_text.delta";
                let part = if raw {
                    event.content_index
                } else {
                    event.summary_index
                };
                let slot = self.slot_or_create(index, item_id, Kind::Reasoning, out);
                if !self.is_open_reasoning(slot) {
                    return Ok(());
                }
                let block = self.reasoning_block(slot, raw, part.unwrap_or(0), out);
                if let Some(delta) = event.delta.take().filter(|d| !d.is_empty()) {
                    let block = &mut self.items[slot].blocks[block];
                    block.has_text = true;
                    out.push(ModelPart::ReasoningDelta {
                        id: block.id.clone(),
                        delta: delta.into_owned(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(slot), Some(delta)) = (self.find(index, item_id), &event.delta) {
                    self.input_delta(slot, delta, out);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(slot), Some(arguments)) = (self.find(index, item_id), &event.arguments)
                {
                    self.input_complete(slot, arguments, out);
                }
            }
            "response.custom_tool_call_input.delta" => {
                if let (Some(slot), Some(delta)) = (self.find(index, item_id), &event.delta) {
                    self.input_delta(slot, &escape(delta), out);
                }
            }
            "response.custom_tool_call_input.done" => {
                if let (Some(slot), Some(input)) = (self.find(index, item_id), &event.input) {
                    let full = format!("{{\"input\":\"{}", escape(input));
                    self.input_complete(slot, &full, out);
                }
            }
            kind @ ("response.completed" | "response.incomplete") => {
                let incomplete = kind == "response.incomplete";
                self.metadata(event.response.as_ref(), out);
                self.complete(incomplete, event.response.as_ref(), out);
            }
            "response.failed" => {
                self.abort(out);
                let error = event
                    .response
                    .as_ref()
                    .and_then(|r| r.error.as_ref())
                    .filter(|e| !e.is_null());
                return Err(match error {
                    Some(error) => provider_error(error),
                    None => ModelError::new(
                        ModelErrorKind::Other,
                        "The provider reported that the response failed.",
                    ),
                });
            }
            "error" => {
                self.abort(out);
                let error = match event.error.take().filter(|e| e.is_object()) {
                    Some(error) => error,
                    None => json!({"code": event.code, "message": event.message}),
                };
                return Err(provider_error(&error));
            }
            _ => {}
        }
        Ok(())
    }

    /// A payload that does not decode as an event: an error, unless it is valid JSON of an event
    /// type this decoder does not handle (a future event with other field types is ignored).
    fn unreadable(
        &mut self,
        data: &str,
        error: &serde_json::Error,
        out: &mut Vec<ModelPart>,
    ) -> Result<(), ModelError> {
        let message = match serde_json::from_str::<Value>(data) {
            Ok(Value::Object(event)) => {
                let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
                if !HANDLED.contains(&kind) {
                    return Ok(());
                }
                format!(
                    "Unexpected Responses event shape ({error}): {}",
                    excerpt(data, 200)
                )
            }
            Ok(_) => format!(
                "Malformed Responses event (not a JSON object): {}",
                excerpt(data, 200)
            ),
            Err(error) => format!(
                "Malformed Responses event ({error}): {}",
                excerpt(data, 200)
            ),
        };
        self.abort(out);
        Err(ModelError::new(ModelErrorKind::InvalidResponse, message))
    }

    fn metadata(&mut self, response: Option<&ResponseInfo>, out: &mut Vec<ModelPart>) {
        let Some(response) = response.filter(|_| !self.metadata_sent) else {
            return;
        };
        let id = response.id.clone().filter(|s| !s.is_empty());
        let model_id = response.model.clone().filter(|s| !s.is_empty());
        if id.is_some() || model_id.is_some() {
            self.metadata_sent = true;
            out.push(ModelPart::ResponseMetadata { id, model_id });
        }
    }

    fn generate(&mut self, kind: &str) -> String {
        self.generated += 1;
        format!("{kind}_{}_{}", self.id_prefix, self.generated)
    }

    /// The item an event refers to, by `output_index`, else by `item_id`.
    fn find(&self, index: Option<u64>, item_id: Option<&str>) -> Option<usize> {
        if let Some(index) = index
            && let Some(slot) = self
                .items
                .iter()
                .rposition(|i| i.output_index == Some(index))
        {
            return Some(slot);
        }
        let id = item_id.filter(|id| !id.is_empty())?;
        self.items.iter().rposition(|i| *i.item_id == *id)
    }

    /// The item an event refers to, created (as if `output_item.added` had been sent) when a
    /// server skipped the `added` event.
    fn slot_or_create(
        &mut self,
        index: Option<u64>,
        item_id: Option<&str>,
        kind: Kind,
        out: &mut Vec<ModelPart>,
    ) -> usize {
        if let Some(slot) = self.find(index, item_id) {
            return slot;
        }
        let mut item = Map::new();
        item.insert("type".into(), json!(kind.item_type()));
        if let Some(id) = item_id.filter(|id| !id.is_empty()) {
            item.insert("id".into(), json!(id));
        }
        self.item_added(index, &Value::Object(item), out);
        self.items.len() - 1
    }

    fn item_added(&mut self, index: Option<u64>, item: &Value, out: &mut Vec<ModelPart>) {
        let item_type = item.get("type").and_then(Value::as_str).unwrap_or("");
        let Some(kind) = Kind::of(item_type, item) else {
            return;
        };
        // A repeated `added` for a known item (or call) is ignored.
        if let Some(id) = str_of(item, "id")
            && self.items.iter().any(|i| *i.item_id == *id)
        {
            return;
        }
        if kind.is_call()
            && let Some(call_id) = str_of(item, "call_id")
            && self.items.iter().any(|i| *i.call_id == *call_id)
        {
            return;
        }
        let item_id: Arc<str> = match str_of(item, "id") {
            Some(id) => id.into(),
            None => self.generate("item").into(),
        };
        let mut state = ItemState {
            output_index: index,
            has_id: str_of(item, "id").is_some(),
            item_id: item_id.clone(),
            kind,
            finished: false,
            text_open: false,
            text_len: 0,
            blocks: Vec::new(),
            call_id: Arc::default(),
            name: String::new(),
            input: String::new(),
            started: false,
            ended: false,
        };
        match kind {
            Kind::Message => {
                state.text_open = true;
                out.push(ModelPart::TextStart { id: item_id });
            }
            Kind::Reasoning => {}
            Kind::Function | Kind::Custom | Kind::Client(_) => {
                state.call_id = match str_of(item, "call_id") {
                    Some(id) => id.into(),
                    None => item_id.clone(),
                };
                state.name = items::call_name(kind, item);
                if let Kind::Client(_) = kind {
                    // Started when done: OpenAI may change the `call_id` in between.
                } else if kind == Kind::Function && items::is_parallel_wrapper(&state.name) {
                    // Buffered until done: it may be expanded into several calls.
                } else {
                    state.started = true;
                    out.push(ModelPart::ToolInputStart {
                        id: state.call_id.clone(),
                        tool_name: state.name.clone(),
                        provider_executed: false,
                    });
                }
                if kind == Kind::Custom {
                    state.input.push_str("{\"input\":\"");
                    out.push(ModelPart::ToolInputDelta {
                        id: state.call_id.clone(),
                        delta: state.input.clone(),
                    });
                    if let Some(text) = str_of(item, "input") {
                        let delta = escape(text);
                        state.input.push_str(&delta);
                        out.push(ModelPart::ToolInputDelta {
                            id: state.call_id.clone(),
                            delta,
                        });
                    }
                }
                if kind == Kind::Function
                    && let Some(arguments) = str_of(item, "arguments")
                {
                    state.input.push_str(arguments);
                    if state.started {
                        out.push(ModelPart::ToolInputDelta {
                            id: state.call_id.clone(),
                            delta: arguments.to_string(),
                        });
                    }
                }
            }
            Kind::Hosted(_) => {
                state.call_id = item_id.clone();
                state.name = items::call_name(kind, item);
                state.started = true;
                out.push(ModelPart::ToolInputStart {
                    id: state.call_id.clone(),
                    tool_name: state.name.clone(),
                    provider_executed: true,
                });
            }
        }
        self.items.push(state);
    }

    fn text_delta(&mut self, slot: usize, delta: String, out: &mut Vec<ModelPart>) {
        let item = &mut self.items[slot];
        if item.kind != Kind::Message || item.finished || delta.is_empty() {
            return;
        }
        if !item.text_open {
            item.text_open = true;
            out.push(ModelPart::TextStart {
                id: item.item_id.clone(),
            });
        }
        item.text_len += delta.len();
        out.push(ModelPart::TextDelta {
            id: item.item_id.clone(),
            delta,
        });
    }

    /// Whether the item is a reasoning item still open (events for a finished item, or for an
    /// item of another kind at that index, are ignored).
    fn is_open_reasoning(&self, slot: usize) -> bool {
        let item = &self.items[slot];
        item.kind == Kind::Reasoning && !item.finished
    }

    /// The index (in the item's blocks) of the reasoning block for this part, opened if new.
    fn reasoning_block(
        &mut self,
        slot: usize,
        raw: bool,
        index: u64,
        out: &mut Vec<ModelPart>,
    ) -> usize {
        let item = &mut self.items[slot];
        // The item id is the same for all its blocks: the id is a function of `raw` and `index`.
        if let Some(pos) = item
            .blocks
            .iter()
            .position(|b| b.raw == raw && b.index == index)
        {
            return pos;
        }
        let id: Arc<str> = if raw {
            format!("{}:text:{index}", item.item_id).into()
        } else {
            format!("{}:{index}", item.item_id).into()
        };
        out.push(ModelPart::ReasoningStart { id: id.clone() });
        item.blocks.push(Block {
            id,
            raw,
            index,
            has_text: false,
        });
        item.blocks.len() - 1
    }

    fn input_delta(&mut self, slot: usize, delta: &str, out: &mut Vec<ModelPart>) {
        let item = &mut self.items[slot];
        if !item.kind.is_call() || item.ended || delta.is_empty() {
            return;
        }
        item.input.push_str(delta);
        if item.started {
            out.push(ModelPart::ToolInputDelta {
                id: item.call_id.clone(),
                delta: delta.to_string(),
            });
        }
    }

    /// The complete input arrived: what was not streamed yet is sent as one delta. A final
    /// input that does not extend the streamed one is ignored (the deltas already sent stand).
    fn input_complete(&mut self, slot: usize, full: &str, out: &mut Vec<ModelPart>) {
        let item = &self.items[slot];
        if item.ended {
            return;
        }
        if let Some(rest) = full.strip_prefix(item.input.as_str())
            && !rest.is_empty()
        {
            let rest = rest.to_string();
            self.input_delta(slot, &rest, out);
        }
    }

    fn annotation(&mut self, annotation: &Value, out: &mut Vec<ModelPart>) {
        let kind = annotation.get("type").and_then(Value::as_str).unwrap_or("");
        let (source_type, url, title) = match kind {
            "url_citation" => {
                let Some(url) = str_of(annotation, "url") else {
                    return;
                };
                ("url", Some(url.to_string()), str_of(annotation, "title"))
            }
            "file_citation" | "container_file_citation" | "file_path" => (
                "document",
                None,
                str_of(annotation, "filename").or_else(|| str_of(annotation, "file_id")),
            ),
            _ => return,
        };
        self.sources += 1;
        out.push(ModelPart::Source(Source {
            source_type: source_type.into(),
            id: format!("src_{}_{}", self.id_prefix, self.sources),
            url,
            title: title.map(str::to_string),
        }));
    }

    /// An item is done: what did not stream is sent, and the item is closed. Takes the item: a
    /// hosted call's result is the item itself.
    fn item_done(&mut self, index: Option<u64>, done: Value, out: &mut Vec<ModelPart>) {
        let item = &done;
        let id = str_of(item, "id");
        let slot = match self.find(index, id) {
            Some(slot) => slot,
            None => {
                self.item_added(index, item, out);
                match self.find(index, id) {
                    Some(slot) => slot,
                    None => return,
                }
            }
        };
        if self.items[slot].finished {
            return;
        }
        match self.items[slot].kind {
            Kind::Message => {
                if self.items[slot].text_len == 0 {
                    let text = items::message_text(item);
                    self.text_delta(slot, text, out);
                }
                self.close_item(slot, Some(done), out);
            }
            Kind::Reasoning => {
                if self.items[slot].blocks.iter().all(|b| !b.has_text) {
                    for (raw, index, text) in items::reasoning_texts(item) {
                        let block = self.reasoning_block(slot, raw, index, out);
                        let block = &mut self.items[slot].blocks[block];
                        block.has_text = true;
                        out.push(ModelPart::ReasoningDelta {
                            id: block.id.clone(),
                            delta: text,
                        });
                    }
                }
                if self.items[slot].blocks.is_empty() {
                    self.reasoning_block(slot, false, 0, out);
                }
                self.close_item(slot, Some(done), out);
            }
            Kind::Function => {
                if let Some(arguments) = item.get("arguments").and_then(Value::as_str) {
                    self.input_complete(slot, arguments, out);
                }
                if let Some(name) = str_of(item, "name")
                    && self.items[slot].name.is_empty()
                {
                    self.items[slot].name = name.to_string();
                }
                self.close_item(slot, Some(done), out);
            }
            Kind::Custom => {
                if let Some(input) = item.get("input").and_then(Value::as_str) {
                    let full = format!("{{\"input\":\"{}", escape(input));
                    self.input_complete(slot, &full, out);
                }
                self.close_item(slot, Some(done), out);
            }
            Kind::Client(_) | Kind::Hosted(_) => {
                if let (Kind::Client(_), Some(call_id)) =
                    (self.items[slot].kind, str_of(item, "call_id"))
                {
                    self.items[slot].call_id = call_id.into();
                }
                let input = items::call_input(self.items[slot].kind, item).to_string();
                self.input_delta(slot, &input, out);
                self.close_item(slot, Some(done), out);
            }
        }
    }
}

#[cfg(test)]
impl ResponsesStreamDecoder {
    /// A decoder whose generated ids are fixed, so two decoders' parts can be compared.
    pub(super) fn with_id_prefix(prefix: &str) -> Self {
        ResponsesStreamDecoder {
            id_prefix: prefix.to_owned(),
            ..Self::new()
        }
    }
}

impl StreamDecoder for ResponsesStreamDecoder {
    /// Decodes one event payload, appending the parts it yields to `out`.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` for a payload that is not a JSON object; the provider's error (its
    /// message and code, the kind mapped from the code) for an `error` event or
    /// `response.failed`. Open blocks are closed first and the decoder is done.
    fn push(&mut self, data: &str, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        self.push_with(data, out, true)
    }

    /// Ends the response after the last payload.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` ([`TRUNCATED`]) when no `response.completed` (or `incomplete`) arrived:
    /// open text and reasoning blocks and tool inputs are closed, no tool call is emitted for an
    /// unfinished call, and there is no `Finish`.
    fn finish(&mut self, out: &mut Vec<ModelPart>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        self.abort(out);
        Err(ModelError::new(ModelErrorKind::InvalidResponse, TRUNCATED))
    }

    /// Whether the response finished (completed, incomplete, failed or errored): later payloads
    /// are ignored.
    fn is_done(&self) -> bool {
        self.done
    }
}

/// Decodes an event stream into the model's parts, prefixed by a `StreamStart` with `warnings`.
pub fn decode_events(events: SseStream, warnings: Vec<String>) -> ModelStream {
    crate::decode::decode_events(events, ResponsesStreamDecoder::new(), warnings)
}
