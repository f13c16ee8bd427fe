//! Consuming one model response: forwarding its parts, assembling the assistant message and
//! preparing its tool calls.

use futures::StreamExt;
use serde_json::{Map, Value};
use toolsmith_core::{
    FinishReason, ModelError, ModelErrorKind, ModelOutput, ModelPart, ModelStream, Part,
    ProviderMetadata, RunPart, Source, ToolCallPart, ToolResultPart, Toolset, Usage,
};

use tracing::Span;

use crate::emit::Emitter;
use crate::prepare::{PreparedCall, prepare};
use crate::run::telemetry::record_response;

/// One model response, assembled.
pub(crate) struct ModelTurn {
    /// The assistant message's parts, in the order they started.
    pub(crate) content: Vec<Part>,
    /// The local tool calls, prepared, in order.
    pub(crate) calls: Vec<PreparedCall>,
    pub(crate) usage: Usage,
    pub(crate) finish_reason: FinishReason,
    /// The provider's id for the response, if it gave one.
    pub(crate) response_id: Option<String>,
    /// The model that answered, if the provider said.
    pub(crate) response_model: Option<String>,
    /// What the provider said it ignored or dropped (unsupported settings, provider tools).
    pub(crate) warnings: Vec<String>,
}

impl ModelTurn {
    pub(crate) fn text(&self) -> String {
        self.collect(|p| match p {
            Part::Text { text, .. } => Some(text),
            _ => None,
        })
    }

    pub(crate) fn reasoning(&self) -> String {
        self.collect(|p| match p {
            Part::Reasoning { text, .. } => Some(text),
            _ => None,
        })
    }

    fn collect<'a>(&'a self, f: impl Fn(&'a Part) -> Option<&'a String>) -> String {
        self.content
            .iter()
            .filter_map(f)
            .map(String::as_str)
            .collect()
    }

    pub(crate) fn tool_calls(&self) -> Vec<ToolCallPart> {
        self.content
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn sources(&self) -> Vec<Source> {
        self.content
            .iter()
            .filter_map(|p| match p {
                Part::Source(s) => Some(s.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Text and reasoning blocks being streamed, by id, pointing into the content.
#[derive(Default)]
struct OpenBlocks(Vec<(String, usize)>);

impl OpenBlocks {
    fn index(&self, id: &str) -> Option<usize> {
        self.0.iter().find(|(open, _)| open == id).map(|(_, i)| *i)
    }

    /// The block's text, opening a block (with `make`) if the provider skipped its start.
    fn text<'a>(
        &mut self,
        id: &str,
        content: &'a mut Vec<Part>,
        make: fn() -> Part,
    ) -> &'a mut String {
        let index = match self.index(id) {
            Some(i) => i,
            None => {
                content.push(make());
                self.0.push((id.to_string(), content.len() - 1));
                content.len() - 1
            }
        };
        match &mut content[index] {
            Part::Text { text, .. } | Part::Reasoning { text, .. } => text,
            _ => unreachable!("open blocks point at text or reasoning parts"),
        }
    }

    fn close(&mut self, id: &str, content: &mut [Part], metadata: ProviderMetadata) {
        if let Some(pos) = self.0.iter().position(|(open, _)| open == id) {
            let (_, index) = self.0.remove(pos);
            if let Part::Text {
                provider_metadata, ..
            }
            | Part::Reasoning {
                provider_metadata, ..
            } = &mut content[index]
                && !metadata.is_empty()
            {
                *provider_metadata = metadata;
            }
        }
    }
}

fn text_part() -> Part {
    Part::text("")
}

fn reasoning_part() -> Part {
    Part::Reasoning {
        text: String::new(),
        provider_metadata: ProviderMetadata::default(),
    }
}

/// Reads a model stream to its end, recording the response's id and model on the call's
/// `span` as they pass.
///
/// # Errors
///
/// The stream's own error, or `InvalidResponse` when it ends without a finish part.
pub(crate) async fn consume(
    mut stream: ModelStream,
    tools: &Toolset,
    emit: &Emitter,
    span: &Span,
) -> Result<ModelTurn, ModelError> {
    let mut content = Vec::new();
    let mut calls = Vec::new();
    let mut warnings = Vec::new();
    let (mut response_id, mut response_model) = (None, None);
    let mut open = OpenBlocks::default();
    while let Some(part) = stream.next().await {
        match part? {
            ModelPart::TextStart { id } => {
                open.text(&id, &mut content, text_part);
                emit.emit(|| RunPart::TextStart { id: id.to_string() });
            }
            ModelPart::TextDelta { id, delta } => {
                open.text(&id, &mut content, text_part).push_str(&delta);
                emit.emit(|| RunPart::TextDelta {
                    id: id.to_string(),
                    text: delta,
                });
            }
            ModelPart::TextEnd {
                id,
                provider_metadata,
            } => {
                open.close(&id, &mut content, provider_metadata);
                emit.emit(|| RunPart::TextEnd { id: id.to_string() });
            }
            ModelPart::ReasoningStart { id } => {
                open.text(&id, &mut content, reasoning_part);
                emit.emit(|| RunPart::ReasoningStart { id: id.to_string() });
            }
            ModelPart::ReasoningDelta { id, delta } => {
                open.text(&id, &mut content, reasoning_part)
                    .push_str(&delta);
                emit.emit(|| RunPart::ReasoningDelta {
                    id: id.to_string(),
                    text: delta,
                });
            }
            ModelPart::ReasoningEnd {
                id,
                provider_metadata,
            } => {
                open.close(&id, &mut content, provider_metadata);
                emit.emit(|| RunPart::ReasoningEnd { id: id.to_string() });
            }
            ModelPart::ToolInputStart {
                id,
                tool_name,
                provider_executed,
            } => {
                emit.emit(|| RunPart::ToolInputStart {
                    id: id.to_string(),
                    tool_name,
                    provider_executed,
                });
            }
            ModelPart::ToolInputDelta { id, delta } => {
                emit.emit(|| RunPart::ToolInputDelta {
                    id: id.to_string(),
                    delta,
                });
            }
            ModelPart::ToolInputEnd { id } => {
                emit.emit(|| RunPart::ToolInputEnd { id: id.to_string() })
            }
            ModelPart::ToolCall(call) if call.provider_executed => {
                let input = serde_json::from_str(&call.input)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| Value::Object(Map::new()));
                emit.emit(|| RunPart::ToolCall {
                    tool_call_id: call.tool_call_id.clone(),
                    tool_name: call.tool_name.clone(),
                    input: input.clone(),
                    provider_executed: true,
                    invalid: false,
                });
                content.push(Part::ToolCall(ToolCallPart {
                    tool_call_id: call.tool_call_id,
                    tool_name: call.tool_name,
                    input,
                    provider_executed: true,
                    provider_metadata: call.provider_metadata,
                }));
            }
            ModelPart::ToolCall(call) => {
                let prepared = prepare(&call, tools);
                emit.emit(|| RunPart::ToolCall {
                    tool_call_id: prepared.id.clone(),
                    tool_name: prepared.name.clone(),
                    input: prepared.input.clone(),
                    provider_executed: false,
                    invalid: prepared.invalid,
                });
                content.push(Part::ToolCall(ToolCallPart {
                    tool_call_id: call.tool_call_id,
                    tool_name: call.tool_name,
                    input: prepared.input.clone(),
                    provider_executed: false,
                    provider_metadata: call.provider_metadata,
                }));
                calls.push(prepared);
            }
            ModelPart::ToolResult {
                tool_call_id,
                tool_name,
                result,
                is_error,
                provider_metadata,
            } => {
                emit.emit(|| RunPart::ToolResult {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    input: Value::Null,
                    output: result.clone(),
                    is_error,
                    provider_executed: true,
                });
                let output = if is_error {
                    ModelOutput::ErrorJson { value: result }
                } else {
                    ModelOutput::json(result)
                };
                content.push(Part::ToolResult(ToolResultPart {
                    tool_call_id,
                    tool_name,
                    output,
                    provider_executed: true,
                    provider_metadata,
                }));
            }
            ModelPart::Source(source) => {
                emit.emit(|| RunPart::Source(source.clone()));
                content.push(Part::Source(source));
            }
            ModelPart::File { media_type, data } => {
                emit.emit(|| RunPart::File {
                    media_type: media_type.clone(),
                    data: data.clone(),
                });
                content.push(Part::File {
                    media_type,
                    data,
                    filename: None,
                });
            }
            ModelPart::Finish {
                usage,
                finish_reason,
                ..
            } => {
                return Ok(ModelTurn {
                    content,
                    calls,
                    usage,
                    finish_reason,
                    response_id,
                    response_model,
                    warnings,
                });
            }
            ModelPart::ResponseMetadata { id, model_id } => {
                record_response(span, id.as_deref(), model_id.as_deref());
                response_id = id.or(response_id);
                response_model = model_id.or(response_model);
            }
            ModelPart::StreamStart { warnings: new } => {
                for message in new {
                    tracing::warn!(warning = %message, "model warning");
                    emit.emit(|| RunPart::Warning {
                        message: message.clone(),
                    });
                    warnings.push(message);
                }
            }
            _ => {}
        }
    }
    Err(ModelError::new(
        ModelErrorKind::InvalidResponse,
        "The model's stream ended without a finish part (truncated response).",
    ))
}
