//! [`FinishReason`]: why a model call ended, unified across providers and raw.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a model call ended, in the unified vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnifiedFinishReason {
    /// The model finished its answer (or a stop sequence was hit).
    #[default]
    Stop,
    /// The output token limit was reached.
    Length,
    /// A content filter stopped the output.
    ContentFilter,
    /// The model called tools.
    ToolCalls,
    /// The provider reported an error.
    Error,
    /// Anything else.
    Other,
}

impl UnifiedFinishReason {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ContentFilter => "content-filter",
            Self::ToolCalls => "tool-calls",
            Self::Error => "error",
            Self::Other => "other",
        }
    }
}

impl fmt::Display for UnifiedFinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a model call ended: the unified reason and the provider's own string.
///
/// ```
/// use toolsmith_core::{FinishReason, UnifiedFinishReason};
///
/// let r = FinishReason::new(UnifiedFinishReason::ToolCalls).with_raw("tool_use");
/// assert_eq!(r.unified, UnifiedFinishReason::ToolCalls);
/// assert_eq!(r.raw.as_deref(), Some("tool_use"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FinishReason {
    /// The unified reason.
    pub unified: UnifiedFinishReason,
    /// The provider's raw reason (`end_turn`, `tool_use`, `STOP`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

impl FinishReason {
    /// A reason with no raw string.
    pub fn new(unified: UnifiedFinishReason) -> Self {
        FinishReason { unified, raw: None }
    }

    /// Adds the provider's raw string.
    pub fn with_raw(mut self, raw: impl Into<String>) -> Self {
        self.raw = Some(raw.into());
        self
    }
}

impl From<UnifiedFinishReason> for FinishReason {
    fn from(unified: UnifiedFinishReason) -> Self {
        FinishReason::new(unified)
    }
}
