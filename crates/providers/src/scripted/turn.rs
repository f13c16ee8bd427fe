//! The scripted turn format and its translation into model parts.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolsmith_core::{
    FinishReason, ModelError, ModelErrorKind, ModelPart, ModelToolCall, ProviderMetadata,
    UnifiedFinishReason, Usage,
};

/// One scripted model response.
///
/// In JSON every field is optional:
///
/// ```json
/// {
///   "text": "Let me look.",
///   "reasoning": "The user wants the weather.",
///   "tool_calls": [{"name": "weather", "input": {"city": "Oslo"}}],
///   "finish": "tool-calls",
///   "usage": {"input": {"total": 120}, "output": {"total": 14}},
///   "delay_ms": 50,
///   "chunk_chars": 4
/// }
/// ```
///
/// `error` makes the call fail before streaming; `stream_error` makes the stream fail after
/// the other parts (a truncated response); `truncate` ends the stream without its finish part.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Reasoning text, streamed before everything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Answer text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedCall>,
    /// The finish reason; defaults to `tool-calls` when there are calls, else `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<UnifiedFinishReason>,
    /// Reported usage; unknown when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Waits this long before the first part.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Splits text and reasoning into deltas of this many characters (one delta when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_chars: Option<usize>,
    /// Fails the call before any part is streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ScriptedError>,
    /// Fails the stream after the other parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_error: Option<ScriptedError>,
    /// Ends the stream without its finish part.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncate: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Turn {
    /// A turn answering with text.
    pub fn text(text: impl Into<String>) -> Self {
        Turn {
            text: Some(text.into()),
            ..Default::default()
        }
    }

    /// A turn making these tool calls.
    pub fn tool_calls(calls: impl IntoIterator<Item = ScriptedCall>) -> Self {
        Turn {
            tool_calls: calls.into_iter().collect(),
            ..Default::default()
        }
    }

    /// A turn making one tool call with JSON input.
    pub fn call(name: impl Into<String>, input: Value) -> Self {
        Self::tool_calls([ScriptedCall::new(name, input)])
    }

    /// A turn whose call fails.
    pub fn error(error: ScriptedError) -> Self {
        Turn {
            error: Some(error),
            ..Default::default()
        }
    }

    /// Sets the delay before the first part.
    pub fn with_delay_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    /// Sets the reported usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets the finish reason.
    pub fn with_finish(mut self, finish: UnifiedFinishReason) -> Self {
        self.finish = Some(finish);
        self
    }

    /// The parts this turn streams. `turn` numbers default tool call ids: `call_<turn>_<i>`.
    pub(crate) fn parts(&self, turn: usize) -> Vec<Result<ModelPart, ModelError>> {
        let mut parts = vec![Ok(ModelPart::StreamStart {
            warnings: Vec::new(),
        })];
        if let Some(reasoning) = &self.reasoning {
            let id: Arc<str> = format!("reasoning_{turn}").into();
            parts.push(Ok(ModelPart::ReasoningStart { id: id.clone() }));
            for delta in chunks(reasoning, self.chunk_chars) {
                parts.push(Ok(ModelPart::ReasoningDelta {
                    id: id.clone(),
                    delta,
                }));
            }
            parts.push(Ok(ModelPart::ReasoningEnd {
                id,
                provider_metadata: ProviderMetadata::default(),
            }));
        }
        if let Some(text) = &self.text {
            let id: Arc<str> = format!("text_{turn}").into();
            parts.push(Ok(ModelPart::TextStart { id: id.clone() }));
            for delta in chunks(text, self.chunk_chars) {
                parts.push(Ok(ModelPart::TextDelta {
                    id: id.clone(),
                    delta,
                }));
            }
            parts.push(Ok(ModelPart::TextEnd {
                id,
                provider_metadata: ProviderMetadata::default(),
            }));
        }
        for (i, call) in self.tool_calls.iter().enumerate() {
            let id: Arc<str> = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{turn}_{i}"))
                .into();
            let input = call.input_text();
            parts.push(Ok(ModelPart::ToolInputStart {
                id: id.clone(),
                tool_name: call.name.clone(),
                provider_executed: call.provider_executed,
            }));
            if !input.is_empty() {
                parts.push(Ok(ModelPart::ToolInputDelta {
                    id: id.clone(),
                    delta: input.clone(),
                }));
            }
            parts.push(Ok(ModelPart::ToolInputEnd { id: id.clone() }));
            parts.push(Ok(ModelPart::ToolCall(ModelToolCall {
                tool_call_id: id.to_string(),
                tool_name: call.name.clone(),
                input,
                provider_executed: call.provider_executed,
                provider_metadata: call.provider_metadata.clone(),
            })));
        }
        if let Some(error) = &self.stream_error {
            parts.push(Err(error.to_model_error()));
            return parts;
        }
        if self.truncate {
            return parts;
        }
        let unified = self.finish.unwrap_or(if self.tool_calls.is_empty() {
            UnifiedFinishReason::Stop
        } else {
            UnifiedFinishReason::ToolCalls
        });
        parts.push(Ok(ModelPart::Finish {
            usage: self.usage.unwrap_or_default(),
            finish_reason: FinishReason::new(unified),
            provider_metadata: ProviderMetadata::default(),
        }));
        parts
    }
}

/// Splits `text` into deltas of `size` characters (never inside a character).
fn chunks(text: &str, size: Option<usize>) -> Vec<String> {
    match size {
        Some(size) if size > 0 => {
            let chars: Vec<char> = text.chars().collect();
            chars.chunks(size).map(|c| c.iter().collect()).collect()
        }
        _ => vec![text.to_string()],
    }
}

/// A scripted tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The call id; `call_<turn>_<index>` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// The arguments as exact text, which may be malformed; wins over `input`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<String>,
    /// Marks the call as executed by the provider.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_executed: bool,
    /// Opaque provider metadata attached to the call.
    #[serde(default, skip_serializing_if = "ProviderMetadata::is_empty")]
    pub provider_metadata: ProviderMetadata,
}

impl ScriptedCall {
    /// A call with JSON input.
    pub fn new(name: impl Into<String>, input: Value) -> Self {
        ScriptedCall {
            name: name.into(),
            input: Some(input),
            ..Default::default()
        }
    }

    /// A call whose input is this exact text.
    pub fn raw(name: impl Into<String>, raw_input: impl Into<String>) -> Self {
        ScriptedCall {
            name: name.into(),
            raw_input: Some(raw_input.into()),
            ..Default::default()
        }
    }

    /// Sets the call id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    fn input_text(&self) -> String {
        match (&self.raw_input, &self.input) {
            (Some(raw), _) => raw.clone(),
            (None, Some(input)) => input.to_string(),
            (None, None) => String::new(),
        }
    }
}

/// A scripted model failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// The error kind; `server` when absent.
    #[serde(default = "server_kind")]
    pub kind: ModelErrorKind,
    /// The message.
    pub message: String,
    /// An HTTP status to report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

fn server_kind() -> ModelErrorKind {
    ModelErrorKind::Server
}

impl ScriptedError {
    /// A server error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ScriptedError {
            kind: ModelErrorKind::Server,
            message: message.into(),
            status: None,
        }
    }

    pub(crate) fn to_model_error(&self) -> ModelError {
        let error = ModelError::new(self.kind, self.message.clone());
        match self.status {
            Some(status) => error.with_status(status),
            None => error,
        }
    }
}
