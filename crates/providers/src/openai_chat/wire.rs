//! Chat Completions stream chunks, as servers actually send them: every field optional.
//!
//! The types borrow from the payload ([`Str`]): a chunk is parsed once per event and dropped,
//! so only the strings the decoder keeps are copied. Fields the decoder never reads (`object`,
//! `created`, `system_fingerprint`, `logprobs`, `role`…) are not declared, so serde skips them
//! without building anything.
//!
//! The decoder's fast path (`fast.rs`) builds these same types by hand for text, reasoning and
//! tool-call deltas and usage: a field added here must be read there too (it names every field, so it will not
//! compile until it does).

use serde::Deserialize;
use serde_json::Value;

use crate::borrowed::{Str, StrOrValue};

/// One `chat.completion.chunk` (or an in-stream error).
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Chunk<'a> {
    #[serde(borrow)]
    pub id: Option<Str<'a>>,
    #[serde(borrow)]
    pub model: Option<Str<'a>>,
    #[serde(borrow)]
    pub choices: Vec<Choice<'a>>,
    pub usage: Option<WireUsage>,
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Choice<'a> {
    pub index: Option<u64>,
    #[serde(borrow)]
    pub delta: Option<Delta<'a>>,
    /// Some servers send whole messages in stream chunks. Boxed: it is rare, and serde moves
    /// each `Choice` a few times while building it.
    #[serde(borrow)]
    pub message: Option<Box<Delta<'a>>>,
    #[serde(borrow)]
    pub finish_reason: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Delta<'a> {
    #[serde(borrow)]
    pub content: Option<Str<'a>>,
    #[serde(borrow)]
    pub reasoning_content: Option<Str<'a>>,
    #[serde(borrow)]
    pub reasoning: Option<Str<'a>>,
    #[serde(borrow)]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    /// The legacy single call some servers still send (llama-cpp-python sends it beside
    /// `tool_calls`, others instead of it): read only when the same delta has no `tool_calls`.
    #[serde(borrow)]
    pub function_call: Option<FunctionDelta<'a>>,
    #[serde(borrow)]
    pub annotations: Option<Vec<Annotation<'a>>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct ToolCallDelta<'a> {
    pub index: Option<i64>,
    #[serde(borrow)]
    pub id: Option<Str<'a>>,
    #[serde(borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct FunctionDelta<'a> {
    #[serde(borrow)]
    pub name: Option<Str<'a>>,
    /// Usually a string; a few servers send an object.
    #[serde(borrow)]
    pub arguments: Option<StrOrValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Annotation<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Str<'a>>,
    #[serde(borrow)]
    pub url_citation: Option<UrlCitation<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct UrlCitation<'a> {
    #[serde(borrow)]
    pub url: Option<Str<'a>>,
    #[serde(borrow)]
    pub title: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct WireUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub prompt_tokens_details: Option<PromptDetails>,
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct PromptDetails {
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct CompletionDetails {
    pub reasoning_tokens: Option<u64>,
}
