//! Gemini `GenerateContentResponse` chunks, as the API sends them: every field optional, unknown
//! fields ignored (forward-compatible).
//!
//! Strings borrow from the payload ([`Str`]): a chunk is parsed once per event and dropped, so
//! only what the decoder keeps is copied (`modelVersion` and `responseId`, repeated on every
//! chunk, cost nothing after the first). The rare JSON-valued fields stay [`Value`]s.
//!
//! The decoder's fast path (`fast.rs`) builds these same types by hand for the hot chunks: a
//! field added to a type it reads must be read there too (it names every field of those types,
//! so it will not compile until it does).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::borrowed::Str;

/// One `GenerateContentResponse`: a streamed chunk, or a whole non-streamed body.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Chunk<'a> {
    #[serde(borrow)]
    pub candidates: Vec<Candidate<'a>>,
    #[serde(borrow)]
    pub prompt_feedback: Option<PromptFeedback<'a>>,
    pub usage_metadata: Option<UsageMetadata>,
    #[serde(borrow)]
    pub model_version: Option<Str<'a>>,
    #[serde(borrow)]
    pub response_id: Option<Str<'a>>,
    /// An in-stream failure: `{"error":{"code":…,"message":…,"status":…,"details":[…]}}`.
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Candidate<'a> {
    pub index: Option<u64>,
    #[serde(borrow)]
    pub content: Option<Content<'a>>,
    #[serde(borrow)]
    pub finish_reason: Option<Str<'a>>,
    /// Boxed: rare, and inline they would be copied with every candidate.
    #[serde(borrow)]
    pub grounding_metadata: Option<Box<GroundingMetadata<'a>>>,
    #[serde(borrow)]
    pub citation_metadata: Option<Box<CitationMetadata<'a>>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct Content<'a> {
    #[serde(borrow)]
    pub parts: Vec<WirePart<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct WirePart<'a> {
    #[serde(borrow)]
    pub text: Option<Str<'a>>,
    pub thought: Option<bool>,
    #[serde(borrow)]
    pub thought_signature: Option<Str<'a>>,
    /// Boxed, like the other fields a text part lacks: serde builds each part on the stack
    /// and moves it into the `Vec`, so every inline byte is copied for every text delta.
    #[serde(borrow)]
    pub function_call: Option<Box<FunctionCall<'a>>>,
    #[serde(borrow)]
    pub inline_data: Option<Box<InlineData<'a>>>,
    /// Code the model ran with the code execution tool: `{language, code}`.
    pub executable_code: Option<Box<Value>>,
    /// Its result: `{outcome, output}`.
    pub code_execution_result: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct FunctionCall<'a> {
    #[serde(borrow)]
    pub id: Option<Str<'a>>,
    #[serde(borrow)]
    pub name: Option<Str<'a>>,
    /// Boxed, like the rare values of [`PartialArg`]: most calls stream their arguments.
    pub args: Option<Box<Value>>,
    #[serde(borrow)]
    pub partial_args: Option<Vec<PartialArg<'a>>>,
    pub will_continue: Option<bool>,
}

/// One streamed argument: a value at a JSON path (`$.location`, `$.items[1].price`).
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PartialArg<'a> {
    #[serde(borrow)]
    pub json_path: Option<Str<'a>>,
    #[serde(borrow)]
    pub string_value: Option<Str<'a>>,
    /// A number, or a string for `NaN` / `Infinity` (proto JSON). Boxed, as are the other
    /// JSON values: most arguments are strings, and inline these made every argument 272 bytes
    /// to build and move instead of 80.
    pub number_value: Option<Box<Value>>,
    pub bool_value: Option<bool>,
    /// Present (whatever its value, `null` or `"NULL_VALUE"`) means a JSON `null`.
    #[serde(deserialize_with = "present")]
    pub null_value: bool,
    pub struct_value: Option<Box<Value>>,
    pub list_value: Option<Box<Value>>,
    pub will_continue: Option<bool>,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(deserializer).map(|_| true)
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct InlineData<'a> {
    #[serde(borrow)]
    pub mime_type: Option<Str<'a>>,
    #[serde(borrow)]
    pub data: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PromptFeedback<'a> {
    #[serde(borrow)]
    pub block_reason: Option<Str<'a>>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    pub prompt_token_count: Option<u64>,
    pub cached_content_token_count: Option<u64>,
    pub candidates_token_count: Option<u64>,
    pub thoughts_token_count: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct GroundingMetadata<'a> {
    #[serde(borrow)]
    pub grounding_chunks: Vec<GroundingChunk<'a>>,
    pub web_search_queries: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct GroundingChunk<'a> {
    #[serde(borrow)]
    pub web: Option<WebChunk<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct WebChunk<'a> {
    #[serde(borrow)]
    pub uri: Option<Str<'a>>,
    #[serde(borrow)]
    pub title: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CitationMetadata<'a> {
    #[serde(borrow)]
    pub citation_sources: Vec<CitationSource<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(PartialEq))]
#[serde(default)]
pub(crate) struct CitationSource<'a> {
    #[serde(borrow)]
    pub uri: Option<Str<'a>>,
    #[serde(borrow)]
    pub title: Option<Str<'a>>,
}
