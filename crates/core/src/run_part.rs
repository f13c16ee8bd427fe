//! [`RunPart`]: the run-level stream, what `Agent::stream` yields and `toolsmith run --json`
//! prints one per line.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{NestedHop, Source, ToolError, UnifiedFinishReason, Usage};

/// One event of a run. The `type` names and camelCase fields follow the AI SDK's stream parts.
///
/// ```
/// use toolsmith_core::RunPart;
///
/// let part = RunPart::TextDelta { id: "t0".into(), text: "Hi".into() };
/// assert_eq!(
///     serde_json::to_string(&part).unwrap(),
///     r#"{"type":"text-delta","id":"t0","text":"Hi"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum RunPart {
    /// The run started.
    Start {
        /// The run's id.
        run_id: String,
    },
    /// The provider ignored or dropped something in this step's request: an unsupported setting,
    /// provider tools a wire cannot carry (never silently, as in the Deuz SDK).
    Warning {
        /// What was ignored, by which provider and model.
        message: String,
    },
    /// A step (one model call and its tool calls) started.
    StartStep {
        /// The step number, from 0.
        step: u32,
    },
    /// A text block starts.
    TextStart {
        /// The block id.
        id: String,
    },
    /// More text.
    TextDelta {
        /// The block id.
        id: String,
        /// The new text.
        text: String,
    },
    /// A text block ends.
    TextEnd {
        /// The block id.
        id: String,
    },
    /// A reasoning block starts.
    ReasoningStart {
        /// The block id.
        id: String,
    },
    /// More reasoning.
    ReasoningDelta {
        /// The block id.
        id: String,
        /// The new text.
        text: String,
    },
    /// A reasoning block ends.
    ReasoningEnd {
        /// The block id.
        id: String,
    },
    /// A tool call's input starts streaming.
    ToolInputStart {
        /// The tool call id.
        id: String,
        /// The tool's name.
        tool_name: String,
        /// Whether the provider executes it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        provider_executed: bool,
    },
    /// More tool input JSON text.
    ToolInputDelta {
        /// The tool call id.
        id: String,
        /// The new JSON text.
        delta: String,
    },
    /// A tool call's input is complete.
    ToolInputEnd {
        /// The tool call id.
        id: String,
    },
    /// A complete tool call.
    ToolCall {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The parsed input (`{}` when it did not parse).
        input: Value,
        /// Whether the provider executes it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        provider_executed: bool,
        /// Whether the input failed to parse or validate (a `tool-error` follows).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        invalid: bool,
    },
    /// A tool produced a result.
    ToolResult {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The call's input.
        input: Value,
        /// The app value (or, for provider-executed tools, the provider's result).
        output: Value,
        /// Whether a provider-executed tool reported an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Whether the provider executed it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        provider_executed: bool,
    },
    /// A tool call failed; the model sees the message as an error result.
    ToolError {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The call's input.
        input: Value,
        /// What went wrong.
        error: ErrorInfo,
    },
    /// A reviewer denied the call.
    ToolOutputDenied {
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A call waits for a human's approval.
    ToolApprovalRequest {
        /// The approval's id, to answer with.
        approval_id: String,
        /// The call's id.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The call's input.
        input: Value,
    },
    /// A cited source.
    Source(Source),
    /// A generated file.
    File {
        /// IANA media type.
        media_type: String,
        /// Base64 data.
        data: String,
    },
    /// A step finished.
    FinishStep {
        /// The step number.
        step: u32,
        /// Tokens used by this step.
        usage: Usage,
        /// Why the model stopped.
        finish_reason: UnifiedFinishReason,
        /// The provider's own reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_finish_reason: Option<String>,
    },
    /// The run finished.
    Finish {
        /// Tokens used by the whole run, sub-agents included.
        usage: Usage,
        /// Why the last step's model call stopped.
        finish_reason: UnifiedFinishReason,
    },
    /// The run was cancelled.
    Abort {
        /// Why, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The run failed.
    Error {
        /// What went wrong.
        error: ErrorInfo,
    },
    /// A custom event sent by a tool through [`ToolContext::emit`](crate::ToolContext::emit).
    Data {
        /// The call that sent it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        /// The event's name.
        name: String,
        /// Its data.
        data: Value,
    },
    /// A part of a sub-agent's run, forwarded into its parent's stream.
    Nested {
        /// The sub-agent calls it came through, outermost first.
        path: Vec<NestedHop>,
        /// The sub-agent's own part (never itself `nested`: deeper parts lengthen the path).
        part: Box<RunPart>,
    },
}

impl RunPart {
    /// This part as its parent's stream shows it: nested under `hop` (prefixed to the path of
    /// a part that already is nested).
    ///
    /// ```
    /// use toolsmith_core::{NestedHop, RunPart};
    ///
    /// let hop = |id: &str| NestedHop { tool_call_id: id.into(), tool_name: "helper".into() };
    /// let part = RunPart::StartStep { step: 0 }.nested(hop("inner")).nested(hop("outer"));
    /// let RunPart::Nested { path, part } = part else { unreachable!() };
    /// assert_eq!(path, [hop("outer"), hop("inner")]);
    /// assert_eq!(*part, RunPart::StartStep { step: 0 });
    /// ```
    pub fn nested(self, hop: NestedHop) -> RunPart {
        match self {
            RunPart::Nested { mut path, part } => {
                path.insert(0, hop);
                RunPart::Nested { path, part }
            }
            part => RunPart::Nested {
                path: vec![hop],
                part: Box::new(part),
            },
        }
    }
}

/// An error as the run stream shows it: code, message, details. Never operator detail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// The stable code.
    pub code: String,
    /// The message.
    pub message: String,
    /// Structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorInfo {
    /// An error with a code and message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorInfo {
            code: code.into(),
            message: message.into(),
            details: None,
        }
    }
}

impl From<&ToolError> for ErrorInfo {
    fn from(error: &ToolError) -> Self {
        ErrorInfo {
            code: error.code().to_string(),
            message: error.message().to_string(),
            details: error.details().cloned(),
        }
    }
}
