//! Closing output items and the response: calls, results, blocks, the finish part.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolsmith_core::{
    FinishReason, ModelPart, ModelToolCall, ProviderMetadata, UnifiedFinishReason,
};

use super::super::items::{self, Kind};
use super::super::wire::ResponseInfo;
use super::{Block, ResponsesStreamDecoder, openai_metadata, str_of};

impl ResponsesStreamDecoder {
    /// Closes an item: its blocks end, its call is emitted. `item` is the done item (`None` when
    /// the response completed without it), taken rather than borrowed so that a hosted call's
    /// result is the item itself rather than a copy of it.
    pub(super) fn close_item(
        &mut self,
        slot: usize,
        mut item: Option<Value>,
        out: &mut Vec<ModelPart>,
    ) {
        let state = &mut self.items[slot];
        if state.finished {
            return;
        }
        state.finished = true;
        let item_id = state.item_id.clone();
        // A generated id means nothing to the server: it is not kept for the round trip.
        let wire_id = state.has_id.then(|| json!(item_id));
        match state.kind {
            Kind::Message => {
                if state.text_open {
                    state.text_open = false;
                    let mut fields = Map::new();
                    fields.extend(wire_id.clone().map(|id| ("itemId".to_string(), id)));
                    if let Some(phase) = item.as_ref().and_then(|i| str_of(i, "phase")) {
                        fields.insert("phase".into(), json!(phase));
                    }
                    out.push(ModelPart::TextEnd {
                        id: item_id,
                        provider_metadata: openai_metadata(fields),
                    });
                }
            }
            Kind::Reasoning => {
                let encrypted = item
                    .as_mut()
                    .and_then(|i| i.get_mut("encrypted_content"))
                    .filter(|e| e.is_string())
                    .map_or(Value::Null, Value::take);
                for Block { id, raw, .. } in std::mem::take(&mut state.blocks) {
                    let mut fields = Map::new();
                    fields.extend(wire_id.clone().map(|id| ("itemId".to_string(), id)));
                    fields.insert("reasoningEncryptedContent".into(), encrypted.clone());
                    if raw {
                        fields.insert("reasoningText".into(), json!(true));
                    }
                    out.push(ModelPart::ReasoningEnd {
                        id,
                        provider_metadata: openai_metadata(fields),
                    });
                }
            }
            Kind::Function if !state.started => {
                // A buffered `parallel` wrapper.
                let (call_id, name, input) = (
                    state.call_id.clone(),
                    state.name.clone(),
                    std::mem::take(&mut state.input),
                );
                state.ended = true;
                match items::expand_parallel(&input) {
                    Some(calls) => {
                        for (i, (name, arguments)) in calls.into_iter().enumerate() {
                            let id = format!("{call_id}_{i}");
                            self.local_calls += 1;
                            emit_call(out, &id, &name, arguments, false, Map::new());
                        }
                    }
                    None => {
                        self.local_calls += 1;
                        let mut fields = Map::new();
                        fields.extend(wire_id.clone().map(|id| ("itemId".to_string(), id)));
                        emit_call(out, &call_id, &name, input, false, fields);
                    }
                }
            }
            Kind::Client(item_type) => {
                state.ended = true;
                let (call_id, name, input) = (
                    state.call_id.clone(),
                    state.name.clone(),
                    std::mem::take(&mut state.input),
                );
                let mut fields = Map::new();
                fields.extend(wire_id.clone().map(|id| ("itemId".to_string(), id)));
                fields.insert("type".into(), json!(item_type));
                self.local_calls += 1;
                emit_call(out, &call_id, &name, input, false, fields);
            }
            Kind::Function | Kind::Custom => {
                state.ended = true;
                if state.kind == Kind::Custom {
                    state.input.push_str("\"}");
                    out.push(ModelPart::ToolInputDelta {
                        id: state.call_id.clone(),
                        delta: "\"}".into(),
                    });
                }
                out.push(ModelPart::ToolInputEnd {
                    id: state.call_id.clone(),
                });
                let mut fields = Map::new();
                fields.extend(wire_id.clone().map(|id| ("itemId".to_string(), id)));
                if state.kind != Kind::Function {
                    fields.insert("type".into(), json!(state.kind.item_type()));
                }
                let mut call = ModelToolCall::new(
                    &*state.call_id,
                    state.name.clone(),
                    std::mem::take(&mut state.input),
                );
                call.provider_metadata = openai_metadata(fields);
                out.push(ModelPart::ToolCall(call));
                self.local_calls += 1;
            }
            Kind::Hosted(item_type) => {
                state.ended = true;
                out.push(ModelPart::ToolInputEnd {
                    id: state.call_id.clone(),
                });
                let mut fields = Map::new();
                fields.extend(wire_id.clone().map(|id| ("itemId".to_string(), id)));
                fields.insert("type".into(), json!(item_type));
                let mut call = ModelToolCall::new(
                    &*state.call_id,
                    state.name.clone(),
                    std::mem::take(&mut state.input),
                );
                call.provider_executed = true;
                call.provider_metadata = openai_metadata(fields.clone());
                out.push(ModelPart::ToolCall(call));
                // The file part comes after the result, from the item the result takes.
                let file = item.as_ref().and_then(items::generated_image);
                let result = item.unwrap_or_else(|| json!({"type": item_type, "id": item_id}));
                let is_error = items::is_error_item(&result);
                out.push(ModelPart::ToolResult {
                    tool_call_id: state.call_id.to_string(),
                    tool_name: state.name.clone(),
                    result,
                    is_error,
                    provider_metadata: openai_metadata(fields),
                });
                if item_type == "web_search_call" {
                    self.server_tool_uses += 1;
                }
                if let Some(file) = file {
                    out.push(file);
                }
            }
        }
    }

    pub(super) fn complete(
        &mut self,
        incomplete: bool,
        response: Option<&ResponseInfo>,
        out: &mut Vec<ModelPart>,
    ) {
        for slot in 0..self.items.len() {
            if !self.items[slot].finished {
                if self.items[slot].kind == Kind::Reasoning && self.items[slot].blocks.is_empty() {
                    self.reasoning_block(slot, false, 0, out);
                }
                self.close_item(slot, None, out);
            }
        }
        let mut usage = items::usage(response.and_then(|r| r.usage.as_ref()));
        usage.server_tool_uses = self.server_tool_uses;
        let fallback = if incomplete {
            "incomplete"
        } else {
            "completed"
        };
        let status = response
            .and_then(|r| r.status.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or(fallback);
        let reason = response
            .and_then(|r| r.incomplete_details.as_ref())
            .and_then(|d| str_of(d, "reason"));
        let (unified, raw) = match (status, reason) {
            (_, Some("max_output_tokens")) => (UnifiedFinishReason::Length, "max_output_tokens"),
            (_, Some("content_filter")) => (UnifiedFinishReason::ContentFilter, "content_filter"),
            (_, Some(other)) => (UnifiedFinishReason::Other, other),
            ("completed", None) if self.local_calls > 0 => {
                (UnifiedFinishReason::ToolCalls, "completed")
            }
            ("completed", None) => (UnifiedFinishReason::Stop, "completed"),
            (other, None) => (UnifiedFinishReason::Other, other),
        };
        out.push(ModelPart::Finish {
            usage,
            finish_reason: FinishReason::new(unified).with_raw(raw),
            provider_metadata: ProviderMetadata::default(),
        });
        self.done = true;
    }

    /// Closes what is open after a failure (blocks and tool inputs, but no tool calls) and
    /// ignores anything later.
    pub(super) fn abort(&mut self, out: &mut Vec<ModelPart>) {
        for item in &mut self.items {
            if item.finished {
                continue;
            }
            item.finished = true;
            if item.text_open {
                item.text_open = false;
                out.push(ModelPart::TextEnd {
                    id: item.item_id.clone(),
                    provider_metadata: ProviderMetadata::default(),
                });
            }
            for Block { id, .. } in std::mem::take(&mut item.blocks) {
                out.push(ModelPart::ReasoningEnd {
                    id,
                    provider_metadata: ProviderMetadata::default(),
                });
            }
            if item.started && !item.ended {
                item.ended = true;
                out.push(ModelPart::ToolInputEnd {
                    id: item.call_id.clone(),
                });
            }
        }
        self.done = true;
    }
}

/// A whole local call: start, one delta, end, call.
pub(super) fn emit_call(
    out: &mut Vec<ModelPart>,
    id: &str,
    name: &str,
    input: String,
    provider_executed: bool,
    fields: Map<String, Value>,
) {
    let id: Arc<str> = id.into();
    out.push(ModelPart::ToolInputStart {
        id: id.clone(),
        tool_name: name.to_string(),
        provider_executed,
    });
    if !input.is_empty() {
        out.push(ModelPart::ToolInputDelta {
            id: id.clone(),
            delta: input.clone(),
        });
    }
    out.push(ModelPart::ToolInputEnd { id: id.clone() });
    let mut call = ModelToolCall::new(&*id, name, input);
    call.provider_executed = provider_executed;
    if !fields.is_empty() {
        call.provider_metadata = openai_metadata(fields);
    }
    out.push(ModelPart::ToolCall(call));
}
