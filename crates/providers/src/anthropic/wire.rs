//! Messages API stream events, as the server sends them: every field optional.
//!
//! The event and its `delta`, parsed for every streamed token, borrow from the payload
//! ([`Str`]): only the strings the decoder keeps are copied. The rare payloads (a message's
//! start, a block's start) are owned.
//!
//! The decoder's fast path (`fast.rs`) builds [`Event`] and [`Delta`] by hand for token deltas:
//! a field added to either must be read there too (it names every field, so it will not compile
//! until it does).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::borrowed::Str;

/// One stream event (the `data:` of an SSE event); `type` says which.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Event<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Str<'a>>,
    pub index: Option<u64>,
    /// Boxed, like the other fields a token's event lacks: serde builds the event on the
    /// stack and moves it, so every inline byte is copied for every token.
    pub message: Option<Box<WireMessage>>,
    pub content_block: Option<Box<Map<String, Value>>>,
    #[serde(borrow)]
    pub delta: Option<Delta<'a>>,
    pub usage: Option<Box<WireUsage>>,
    pub error: Option<Box<Value>>,
}

/// A message: the payload of `message_start`, or a whole non-streamed response body.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
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
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(borrow)]
    pub text: Option<Str<'a>>,
    #[serde(borrow)]
    pub partial_json: Option<Str<'a>>,
    #[serde(borrow)]
    pub thinking: Option<Str<'a>>,
    #[serde(borrow)]
    pub signature: Option<Str<'a>>,
    pub citation: Option<Box<Value>>,
    #[serde(borrow)]
    pub stop_reason: Option<Str<'a>>,
    #[serde(borrow)]
    pub stop_sequence: Option<Str<'a>>,
    pub stop_details: Option<Box<Value>>,
    pub container: Option<Box<Value>>,
}

/// Token counts; `message_delta` repeats or completes those of `message_start`.
#[derive(Debug, Default, Clone, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
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
