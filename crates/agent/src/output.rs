//! [`RunOutput`], [`StepResult`] and [`RunError`]: what a run leaves behind.

use std::fmt;

use serde_json::Value;
use toolsmith_core::{
    FinishReason, Message, ModelError, Pause, Source, ToolCallPart, ToolError, ToolOutput, Usage,
    Variables,
};

/// The end of a run: the final text, every step, the whole thread, usage, and any pauses.
#[derive(Debug, Clone, Default)]
pub struct RunOutput {
    /// The run's id.
    pub run_id: String,
    /// The last step's text.
    pub text: String,
    /// Every step, in order.
    pub steps: Vec<StepResult>,
    /// The thread: the input messages (repaired) and every message the run added. Instructions
    /// are not part of it.
    pub messages: Vec<Message>,
    /// How many of `messages` came from the input.
    pub input_len: usize,
    /// Tokens used by all steps.
    pub usage: Usage,
    /// Why the last model call stopped.
    pub finish_reason: FinishReason,
    /// Calls waiting for an answer (client tools, approvals…). Resume by running again with
    /// `messages` plus the answers.
    pub pending: Vec<Pause>,
    /// The variables tools set during the run (`ToolContext::set_variable`, the Standard Agents
    /// spec's `setEnv`), secret kinds included: keep them with the thread for its next run.
    pub variables_set: Variables,
}

impl RunOutput {
    /// The messages this run added.
    pub fn response_messages(&self) -> &[Message] {
        &self.messages[self.input_len.min(self.messages.len())..]
    }

    /// Whether the run stopped to wait for answers.
    pub fn is_paused(&self) -> bool {
        !self.pending.is_empty()
    }
}

/// One step: a model call and the tool calls it made.
#[derive(Debug, Clone, Default)]
pub struct StepResult {
    /// The step number, from 0.
    pub step: u32,
    /// The text the model wrote.
    pub text: String,
    /// The reasoning it showed.
    pub reasoning: String,
    /// Its tool calls, in order (provider-executed ones included).
    pub tool_calls: Vec<ToolCallPart>,
    /// What became of each local call, in call order.
    pub tool_results: Vec<ToolCallResult>,
    /// Sources it cited.
    pub sources: Vec<Source>,
    /// Tokens used.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// What the provider ignored or dropped for this step's request (unsupported settings,
    /// provider tools a wire cannot carry), also streamed as `warning` parts.
    pub warnings: Vec<String>,
}

/// What became of one tool call.
#[derive(Debug, Clone)]
pub struct ToolCallResult {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The input the tool received (`{}` when it did not parse).
    pub input: Value,
    /// The outcome.
    pub outcome: CallOutcome,
}

impl ToolCallResult {
    /// The app value, when the call succeeded.
    pub fn output_value(&self) -> Option<&Value> {
        match &self.outcome {
            CallOutcome::Output(out) => Some(&out.value),
            _ => None,
        }
    }

    /// The error, when the call failed.
    pub fn error(&self) -> Option<&ToolError> {
        match &self.outcome {
            CallOutcome::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// The outcome of one tool call.
#[derive(Debug, Clone)]
pub enum CallOutcome {
    /// It produced a result. The untruncated app value stays here, whatever the model saw.
    Output(ToolOutput),
    /// It failed; the model saw the error.
    Error(ToolError),
    /// It waits for an answer.
    Paused(Pause),
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunErrorKind {
    /// The model call failed.
    Model(ModelError),
    /// A tool failed with a fatal error (loop detection's abort included).
    Tool(ToolError),
    /// The run was cancelled.
    Cancelled,
    /// The run was handed back ([`RunInput::handback`](crate::RunInput::handback)): it stopped
    /// at a safe point, its thread left running and released for another process to resume.
    HandedBack,
    /// The agent or the input is misconfigured.
    Config(String),
    /// A bug: the run's task panicked.
    Internal(String),
    /// The run's log ([`RunLog`](crate::RunLog)) could not record: the run stopped rather
    /// than go on unrecorded (`STORE_FAILED`).
    Store(String),
}

/// A failed run. Nothing is lost: `output` holds the thread up to the failure, every tool call
/// in it answered, ready to store or resume.
#[derive(Debug, Clone)]
pub struct RunError {
    /// Why it failed.
    pub kind: RunErrorKind,
    /// Everything up to the failure.
    pub output: Box<RunOutput>,
}

impl RunError {
    /// The stable code: the model error kind, the tool error code, `ABORTED`,
    /// `HANDED_BACK`, `CONFIG`, `INTERNAL` or `STORE_FAILED`.
    pub fn code(&self) -> String {
        match &self.kind {
            RunErrorKind::Model(e) => model_error_code(e),
            RunErrorKind::Tool(e) => e.code().to_string(),
            RunErrorKind::Cancelled => "ABORTED".to_string(),
            RunErrorKind::HandedBack => "HANDED_BACK".to_string(),
            RunErrorKind::Config(_) => "CONFIG".to_string(),
            RunErrorKind::Internal(_) => "INTERNAL".to_string(),
            RunErrorKind::Store(_) => crate::STORE_FAILED.to_string(),
        }
    }
}

/// `MODEL_<KIND>`, for example `MODEL_RATE_LIMITED`.
pub(crate) fn model_error_code(e: &ModelError) -> String {
    let kind = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('-', "_").to_uppercase()))
        .unwrap_or_else(|| "ERROR".into());
    format!("MODEL_{kind}")
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            RunErrorKind::Model(e) => write!(f, "model call failed: {e}"),
            RunErrorKind::Tool(e) => write!(f, "tool \"{}\" failed fatally: {e}", tool_name(self)),
            RunErrorKind::Cancelled => f.write_str("the run was cancelled"),
            RunErrorKind::HandedBack => {
                f.write_str("the run was handed back, to be resumed where it stopped")
            }
            RunErrorKind::Config(message) | RunErrorKind::Internal(message) => f.write_str(message),
            RunErrorKind::Store(message) => write!(f, "the run's store failed: {message}"),
        }
    }
}

fn tool_name(error: &RunError) -> &str {
    error
        .output
        .steps
        .last()
        .and_then(|s| {
            s.tool_results
                .iter()
                .find(|r| matches!(&r.outcome, CallOutcome::Error(e) if e.is_fatal()))
        })
        .map_or("?", |r| r.tool_name.as_str())
}

impl std::error::Error for RunError {}
