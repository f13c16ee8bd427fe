//! [`ToolError`]: a failed tool call, and what the loop should do about it.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A failed tool call.
///
/// `code` is stable and machine-readable (`TOOL_PATH_ESCAPE`, `INVALID_INPUT`, `TOOL_TIMEOUT`…),
/// `message` is what the model and the client see, and `details` is structured data safe to show
/// them. The *operator detail* is kept apart: it goes to logs (at debug level) and never into the
/// model's context, the run stream or a stored thread, so a secret in an underlying error cannot
/// leak to the model.
///
/// The [`Disposition`] tells the loop what to do: respond to the model (the usual case: the error
/// becomes an error tool result and the loop goes on), stop the run, or pause it.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{Disposition, ToolError};
///
/// let err = ToolError::new("TOOL_PATH_ESCAPE", "Path escapes sandbox root")
///     .with_details(json!({"path": "../etc/passwd"}))
///     .with_operator_detail("resolved to /etc/passwd");
/// assert_eq!(err.code(), "TOOL_PATH_ESCAPE");
/// assert_eq!(err.to_string(), "Path escapes sandbox root");
/// assert_eq!(err.disposition(), &Disposition::RespondToModel);
/// ```
#[derive(Clone, PartialEq)]
pub struct ToolError(Box<Inner>);

/// Boxed so that `Result<_, ToolError>` stays one pointer wide.
#[derive(Clone, PartialEq)]
struct Inner {
    code: Cow<'static, str>,
    message: String,
    details: Option<Value>,
    disposition: Disposition,
    operator_detail: Option<String>,
}

impl ToolError {
    /// The generic code of errors that name none.
    pub const GENERIC: &'static str = "TOOL_ERROR";

    /// An error with a code and a model-visible message, disposed as respond-to-model.
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        ToolError(Box::new(Inner {
            code: code.into(),
            message: message.into(),
            details: None,
            disposition: Disposition::RespondToModel,
            operator_detail: None,
        }))
    }

    /// An error with the generic code `TOOL_ERROR`.
    pub fn msg(message: impl Into<String>) -> Self {
        Self::new(Self::GENERIC, message)
    }

    /// `INVALID_INPUT`: the arguments do not fit the tool.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new("INVALID_INPUT", message)
    }

    /// Wraps any error: its `Display` becomes the message. Use
    /// [`with_operator_detail`](Self::with_operator_detail) instead when the text may hold secrets.
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        Self::msg(error.to_string())
    }

    /// Makes the error stop the run.
    pub fn fatal(mut self) -> Self {
        self.0.disposition = Disposition::Fatal;
        self
    }

    /// Makes the error pause the run instead of failing the call.
    pub fn pause(pause: Pause) -> Self {
        let message = format!(
            "Tool call {} is waiting: {}",
            pause.tool_call_id,
            pause.kind.as_str()
        );
        ToolError(Box::new(Inner {
            code: Cow::Borrowed("PAUSED"),
            message,
            details: None,
            disposition: Disposition::Pause(Box::new(pause)),
            operator_detail: None,
        }))
    }

    /// Attaches structured, model-visible details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.0.details = Some(details);
        self
    }

    /// Attaches operator-only detail: logged, never shown to the model or stored in a thread.
    pub fn with_operator_detail(mut self, detail: impl Into<String>) -> Self {
        self.0.operator_detail = Some(detail.into());
        self
    }

    /// This error with its texts passed through `mask_text` (message, operator detail) and its
    /// details through `mask_value`: the secrets layer's masking, one walk for every JSON value.
    pub(crate) fn mask_with(
        mut self,
        mask_text: impl Fn(&str) -> String,
        mask_value: impl Fn(&mut Value),
    ) -> Self {
        self.0.message = mask_text(&self.0.message);
        if let Some(detail) = &self.0.operator_detail {
            self.0.operator_detail = Some(mask_text(detail));
        }
        if let Some(details) = &mut self.0.details {
            mask_value(details);
        }
        self
    }

    /// The stable code.
    pub fn code(&self) -> &str {
        &self.0.code
    }

    /// The model-visible message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The model-visible details.
    pub fn details(&self) -> Option<&Value> {
        self.0.details.as_ref()
    }

    /// What the loop should do.
    pub fn disposition(&self) -> &Disposition {
        &self.0.disposition
    }

    /// Whether the run must stop.
    pub fn is_fatal(&self) -> bool {
        matches!(self.0.disposition, Disposition::Fatal)
    }

    /// The operator-only detail.
    pub fn operator_detail(&self) -> Option<&str> {
        self.0.operator_detail.as_deref()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl fmt::Debug for ToolError {
    // The operator detail is deliberately left out: `Debug` output ends up in logs and panics.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("code", &self.0.code)
            .field("message", &self.0.message)
            .field("details", &self.0.details)
            .field("disposition", &self.0.disposition)
            .field(
                "operator_detail",
                &self.0.operator_detail.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl std::error::Error for ToolError {}

impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        ToolError::new("TOOL_OUTPUT_INVALID", error.to_string())
    }
}

/// What the loop does with a [`ToolError`].
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Disposition {
    /// The error becomes an error tool result; the model sees it and the loop goes on.
    #[default]
    RespondToModel,
    /// The run stops with an `error` part.
    Fatal,
    /// The call is not finished: the run pauses with this pending item and resumes when the
    /// caller answers it.
    Pause(Box<Pause>),
}

/// A call the run is waiting on. Pauses are data: they live in the thread, and resuming is
/// running again with the thread plus the answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pause {
    /// What is awaited.
    pub kind: PauseKind,
    /// The call it belongs to.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The call's input.
    pub input: Value,
    /// Kind-specific data (an approval id, an async result id…).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub data: Value,
    /// For a pause inside a sub-agent: the ids of the sub-agent calls that lead to it, outermost
    /// first. Empty for the run's own calls. Answers need no path: the approval id routes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
}

impl Pause {
    /// A pause of the run's own call, with no kind-specific data.
    pub fn new(
        kind: PauseKind,
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        input: Value,
    ) -> Self {
        Pause {
            kind,
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            input,
            data: Value::Null,
            path: Vec::new(),
        }
    }

    /// Sets the kind-specific data.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }

    /// The id to answer an approval pause with (`data.approvalId`); `None` for other pauses.
    pub fn approval_id(&self) -> Option<&str> {
        self.data.get("approvalId").and_then(Value::as_str)
    }
}

/// What a [`Pause`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PauseKind {
    /// A human's approval.
    Approval,
    /// A client tool's result, from the caller.
    ClientTool,
    /// An externally dispatched job's completion.
    External,
    /// A nested run (a sub-agent) that itself paused.
    Nested,
}

impl PauseKind {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseKind::Approval => "approval",
            PauseKind::ClientTool => "client-tool",
            PauseKind::External => "external",
            PauseKind::Nested => "nested",
        }
    }
}
