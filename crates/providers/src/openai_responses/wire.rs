//! Responses stream events, typed for the fields the decoder reads.
//!
//! Strings borrow from the payload when they have no escapes ([`Str`]: an `Option<Cow<str>>`
//! field would always copy); everything else in an event (the
//! whole `response` object repeated in `response.created` and `response.completed`, logprobs,
//! obfuscation padding…) is skipped without being built. Output items and annotations stay
//! [`Value`]s: hosted results carry them verbatim.
//!
//! The decoder's fast path (`fast.rs`) builds [`Event`]s and [`ResponseInfo`]s by hand for the
//! commonest events: a field added to either must be read there too (it names every field, so
//! it will not compile until it does).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::borrowed::Str;

/// One event (`data:` payload). Every field is optional.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Event<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    pub output_index: Option<u64>,
    #[serde(borrow)]
    pub item_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub delta: Option<Str<'a>>,
    pub summary_index: Option<u64>,
    pub content_index: Option<u64>,
    #[serde(borrow)]
    pub arguments: Option<Str<'a>>,
    #[serde(borrow)]
    pub input: Option<Str<'a>>,
    pub item: Option<Value>,
    pub annotation: Option<Value>,
    pub response: Option<ResponseInfo>,
    /// `error` events: nested (`{"error":{…}}`) or flat (`code` / `message` on the event).
    pub error: Option<Value>,
    pub code: Option<Value>,
    pub message: Option<Value>,
}

/// The parts of a `response` object the decoder uses.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct ResponseInfo {
    pub id: Option<String>,
    pub model: Option<String>,
    pub status: Option<String>,
    pub usage: Option<Value>,
    pub error: Option<Value>,
    pub incomplete_details: Option<Value>,
}

/// Event types the decoder acts on; another type whose fields do not have the expected types
/// is ignored (forward compatibility), one of these is an invalid response.
pub(crate) const HANDLED: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.output_text.annotation.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];
