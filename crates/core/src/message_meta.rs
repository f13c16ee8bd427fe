//! [`MessageMeta`]: what a stored message records of how it came to be — the model step that
//! wrote an assistant message, the time a tool message's calls took. Never sent to a model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{UnifiedFinishReason, Usage};

/// How a message came to be, kept beside it in the thread for the people and programs that read
/// the thread. No wire sends it to a model; a message without it serialises as it always did.
///
/// - On an assistant message (one model step): the model that answered, its provider, the
///   response's id, the finish reason, the call's token usage, when the call started and how
///   long it took.
/// - On a tool message (the step's results): when the calls started, how long they took
///   together, and each call's own time by its call id. A call whose result came from the run's
///   journal (a resumed run) has no time.
///
/// Serialises in camelCase, with every unknown field left out:
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{Message, MessageMeta, UnifiedFinishReason, Usage};
///
/// let meta = MessageMeta::new()
///     .model("gpt-4o")
///     .provider("openai")
///     .finish_reason(UnifiedFinishReason::ToolCalls)
///     .usage(Usage::new(120, 14))
///     .timed(1_700_000_000_000, 812);
/// let step = Message::assistant("Looking.").with_meta(meta);
/// assert_eq!(
///     serde_json::to_value(&step).unwrap()["meta"],
///     json!({"model": "gpt-4o", "provider": "openai", "finishReason": "tool-calls",
///            "usage": {"input": {"total": 120}, "output": {"total": 14}},
///            "startedAt": 1_700_000_000_000u64, "durationMs": 812})
/// );
///
/// let results = MessageMeta::new().timed(1_700_000_000_900, 40).call("call_1", 38);
/// assert_eq!(
///     serde_json::to_value(&results).unwrap(),
///     json!({"startedAt": 1_700_000_000_900u64, "durationMs": 40, "calls": {"call_1": 38}})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MessageMeta {
    /// The model that answered: the response's model id, or the requested one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's id (`openai`, `anthropic`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's id for the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Why the model call ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<UnifiedFinishReason>,
    /// The model call's own tokens (not its tools' sub-agents').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// When the model call, or the step's calls, started: ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// How long the model call, or the step's calls together, took: wall time in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Each executed call's own time in ms, by its call id (tool messages).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calls: BTreeMap<String, u64>,
}

impl MessageMeta {
    /// Nothing known yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether nothing at all is known.
    pub fn is_empty(&self) -> bool {
        *self == MessageMeta::default()
    }

    /// Sets the model that answered.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the provider's id.
    pub fn provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Sets the response's id.
    pub fn response_id(mut self, id: impl Into<String>) -> Self {
        self.response_id = Some(id.into());
        self
    }

    /// Sets the finish reason.
    pub fn finish_reason(mut self, reason: UnifiedFinishReason) -> Self {
        self.finish_reason = Some(reason);
        self
    }

    /// Sets the token usage; a usage that knows nothing stays unknown.
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = (!usage.is_empty()).then_some(usage);
        self
    }

    /// Sets when it started (ms since the epoch) and how long it took (ms).
    pub fn timed(mut self, started_at: u64, duration_ms: u64) -> Self {
        self.started_at = Some(started_at);
        self.duration_ms = Some(duration_ms);
        self
    }

    /// Records one call's time (ms).
    pub fn call(mut self, tool_call_id: impl Into<String>, ms: u64) -> Self {
        self.calls.insert(tool_call_id.into(), ms);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_meta_serialises_as_an_empty_object_and_reads_back() {
        assert_eq!(serde_json::to_string(&MessageMeta::new()).unwrap(), "{}");
        let meta: MessageMeta = serde_json::from_str("{}").unwrap();
        assert!(meta.is_empty());
    }

    #[test]
    fn an_unknown_usage_is_left_out() {
        assert_eq!(MessageMeta::new().usage(Usage::default()).usage, None);
    }

    #[test]
    fn every_field_round_trips() {
        let meta = MessageMeta::new()
            .model("m")
            .provider("p")
            .response_id("r")
            .finish_reason(UnifiedFinishReason::Length)
            .usage(Usage::new(1, 2))
            .timed(3, 4)
            .call("c", 5);
        let json = serde_json::to_string(&meta).unwrap();
        assert_eq!(serde_json::from_str::<MessageMeta>(&json).unwrap(), meta);
        assert!(json.contains(r#""responseId":"r""#), "{json}");
        assert!(json.contains(r#""finishReason":"length""#), "{json}");
    }
}
