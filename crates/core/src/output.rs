//! [`ToolOutput`]: what a tool returns, kept apart from what the model sees.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a successful tool call produced.
///
/// `value` is the application's result, `model` what the model sees of it (by default derived from
/// the value), and `artifacts` structured data that stays out of the model's context entirely.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{ModelOutput, ToolOutput};
///
/// let out = ToolOutput::json(json!({"rows": 3}))
///     .with_model_output(ModelOutput::text("3 rows"));
/// assert_eq!(out.value, json!({"rows": 3}));
/// assert_eq!(out.model, ModelOutput::text("3 rows"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The application's value.
    pub value: Value,
    /// What the model sees.
    pub model: ModelOutput,
    /// Structured data kept out of the model's context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
}

impl ToolOutput {
    /// A text result: the value is the string, and the model sees the text.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolOutput {
            model: ModelOutput::text(text.clone()),
            value: Value::String(text),
            artifacts: Vec::new(),
        }
    }

    /// A JSON result. A JSON string is shown to the model as text; anything else as JSON.
    pub fn json(value: Value) -> Self {
        let model = match &value {
            Value::String(s) => ModelOutput::text(s.clone()),
            other => ModelOutput::json(other.clone()),
        };
        ToolOutput {
            value,
            model,
            artifacts: Vec::new(),
        }
    }

    /// Replaces what the model sees, keeping the app value (RadarOS's `toModelOutput`).
    pub fn with_model_output(mut self, model: ModelOutput) -> Self {
        self.model = model;
        self
    }

    /// Adds an artifact.
    pub fn with_artifact(mut self, artifact: Artifact) -> Self {
        self.artifacts.push(artifact);
        self
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        ToolOutput::text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        ToolOutput::text(text)
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::json(value)
    }
}

/// The marker a denial's text starts with in what the model sees (RadarOS's): `[DENIED] <reason>`.
pub const DENIED_MARKER: &str = "[DENIED]";

/// The reason of a denial that gave none (RadarOS's text).
pub const DENIED_BY_REVIEWER: &str = "Tool call denied by human reviewer";

/// What the model sees of a tool result. Serialises as the AI SDK's tool result output:
/// `{"type":"text","value":…}`, `{"type":"json","value":…}`, `{"type":"content","value":[…]}`,
/// `{"type":"error-text","value":…}`, `{"type":"error-json","value":…}`,
/// `{"type":"execution-denied","reason":…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ModelOutput {
    /// Plain text.
    Text {
        /// The text.
        value: String,
    },
    /// A JSON value.
    Json {
        /// The value.
        value: Value,
    },
    /// Multi-part content: text, images, files.
    Content {
        /// The parts.
        value: Vec<ContentPart>,
    },
    /// An error, as text.
    ErrorText {
        /// The message.
        value: String,
    },
    /// An error, as JSON.
    ErrorJson {
        /// The error value.
        value: Value,
    },
    /// The call was denied by a reviewer. Stored and streamed with its reason as given; the
    /// model sees `[DENIED] <reason>` ([`to_text`](Self::to_text)).
    ExecutionDenied {
        /// Why, if a reason was given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl ModelOutput {
    /// Plain text.
    pub fn text(value: impl Into<String>) -> Self {
        ModelOutput::Text {
            value: value.into(),
        }
    }

    /// A JSON value.
    pub fn json(value: Value) -> Self {
        ModelOutput::Json { value }
    }

    /// An error message.
    pub fn error_text(value: impl Into<String>) -> Self {
        ModelOutput::ErrorText {
            value: value.into(),
        }
    }

    /// Whether this output reports an error (error text, error JSON or a denial).
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            ModelOutput::ErrorText { .. }
                | ModelOutput::ErrorJson { .. }
                | ModelOutput::ExecutionDenied { .. }
        )
    }

    /// The output as a single string, for wires and models that only take text: text as is,
    /// JSON serialised compactly, content parts' text joined by newlines, a denial as
    /// [`DENIED_MARKER`] and its reason (RadarOS's `[DENIED] <reason>`; without a reason,
    /// [`DENIED_BY_REVIEWER`]). Every wire sends a denial as this text.
    ///
    /// ```
    /// use toolsmith_core::ModelOutput;
    ///
    /// let denied = ModelOutput::ExecutionDenied { reason: Some("Not this month".into()) };
    /// assert_eq!(denied.to_text(), "[DENIED] Not this month");
    /// let denied = ModelOutput::ExecutionDenied { reason: None };
    /// assert_eq!(denied.to_text(), "[DENIED] Tool call denied by human reviewer");
    /// ```
    pub fn to_text(&self) -> String {
        match self {
            ModelOutput::Text { value } | ModelOutput::ErrorText { value } => value.clone(),
            ModelOutput::Json { value } | ModelOutput::ErrorJson { value } => value.to_string(),
            ModelOutput::Content { value } => value
                .iter()
                .filter_map(|part| match part {
                    ContentPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
            ModelOutput::ExecutionDenied { reason } => {
                let reason = reason
                    .as_deref()
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or(DENIED_BY_REVIEWER);
                format!("{DENIED_MARKER} {reason}")
            }
        }
    }
}

/// One part of a multi-part tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// IANA media type, for example `image/png`.
        #[serde(rename = "mediaType")]
        media_type: String,
    },
    /// A file, base64-encoded.
    File {
        /// Base64 data.
        data: String,
        /// IANA media type.
        #[serde(rename = "mediaType")]
        media_type: String,
        /// The file's name, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
}

/// Structured data attached to a result that the model never sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// What kind of data this is (`table`, `chart`, `file`…).
    #[serde(rename = "type")]
    pub kind: String,
    /// The data.
    pub data: Value,
    /// IANA media type, if it has one.
    #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}
