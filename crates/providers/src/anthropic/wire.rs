//! Messages API stream events, as the server sends them: every field optional.

use serde::Deserialize;
use serde_json::{Map, Value};

/// One stream event (the `data:` of an SSE event); `type` says which.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    pub index: Option<u64>,
    pub message: Option<WireMessage>,
    pub content_block: Option<Map<String, Value>>,
    pub delta: Option<Delta>,
    pub usage: Option<WireUsage>,
    pub error: Option<Value>,
}

/// A message: the payload of `message_start`, or a whole non-streamed response body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WireMessage {
    pub id: Option<String>,
    pub model: Option<String>,
    /// Blocks already complete when the message starts (programmatic tool calling), or every
    /// block of a non-streamed response.
    pub content: Vec<Map<String, Value>>,
    pub stop_reason: Option<String>,
    pub stop_sequence: Option<String>,
    pub stop_details: Option<Value>,
    pub container: Option<Value>,
    pub usage: Option<WireUsage>,
}

/// The `delta` of `content_block_delta` (text, JSON, thinking, signature, citation) and of
/// `message_delta` (stop reason and friends).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub text: Option<String>,
    pub partial_json: Option<String>,
    pub thinking: Option<String>,
    pub signature: Option<String>,
    pub citation: Option<Value>,
    pub stop_reason: Option<String>,
    pub stop_sequence: Option<String>,
    pub stop_details: Option<Value>,
    pub container: Option<Value>,
}

/// Token counts; `message_delta` repeats or completes those of `message_start`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct WireUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub server_tool_use: Option<Map<String, Value>>,
}

impl WireUsage {
    /// Overwrites every count `later` reports.
    pub fn merge(&mut self, later: WireUsage) {
        if later.input_tokens.is_some() {
            self.input_tokens = later.input_tokens;
        }
        if later.output_tokens.is_some() {
            self.output_tokens = later.output_tokens;
        }
        if later.cache_creation_input_tokens.is_some() {
            self.cache_creation_input_tokens = later.cache_creation_input_tokens;
        }
        if later.cache_read_input_tokens.is_some() {
            self.cache_read_input_tokens = later.cache_read_input_tokens;
        }
        if later.server_tool_use.is_some() {
            self.server_tool_use = later.server_tool_use;
        }
    }
}
