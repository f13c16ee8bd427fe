//! Gemini `GenerateContentResponse` chunks, as the API sends them: every field optional, unknown
//! fields ignored (forward-compatible).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One `GenerateContentResponse`: a streamed chunk, or a whole non-streamed body.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Chunk {
    pub candidates: Vec<Candidate>,
    pub prompt_feedback: Option<PromptFeedback>,
    pub usage_metadata: Option<UsageMetadata>,
    pub model_version: Option<String>,
    pub response_id: Option<String>,
    /// An in-stream failure: `{"error":{"code":…,"message":…,"status":…,"details":[…]}}`.
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Candidate {
    pub index: Option<u64>,
    pub content: Option<Content>,
    pub finish_reason: Option<String>,
    pub grounding_metadata: Option<GroundingMetadata>,
    pub citation_metadata: Option<CitationMetadata>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Content {
    pub parts: Vec<WirePart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct WirePart {
    pub text: Option<String>,
    pub thought: Option<bool>,
    pub thought_signature: Option<String>,
    pub function_call: Option<FunctionCall>,
    pub inline_data: Option<InlineData>,
    /// Code the model ran with the code execution tool: `{language, code}`.
    pub executable_code: Option<Value>,
    /// Its result: `{outcome, output}`.
    pub code_execution_result: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct FunctionCall {
    pub id: Option<String>,
    pub name: Option<String>,
    pub args: Option<Value>,
    pub partial_args: Option<Vec<PartialArg>>,
    pub will_continue: Option<bool>,
}

impl FunctionCall {
    /// `functionCall: {}`: the end of a streamed call.
    pub fn is_empty(&self) -> bool {
        self.id.is_none()
            && self.name.is_none()
            && self.args.is_none()
            && self.partial_args.as_ref().is_none_or(Vec::is_empty)
            && self.will_continue.is_none()
    }
}

/// One streamed argument: a value at a JSON path (`$.location`, `$.items[1].price`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PartialArg {
    pub json_path: Option<String>,
    pub string_value: Option<String>,
    /// A number, or a string for `NaN` / `Infinity` (proto JSON).
    pub number_value: Option<Value>,
    pub bool_value: Option<bool>,
    /// Present (whatever its value, `null` or `"NULL_VALUE"`) means a JSON `null`.
    #[serde(deserialize_with = "present")]
    pub null_value: bool,
    pub struct_value: Option<Value>,
    pub list_value: Option<Value>,
    pub will_continue: Option<bool>,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(deserializer).map(|_| true)
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct InlineData {
    pub mime_type: Option<String>,
    pub data: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    pub block_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    pub prompt_token_count: Option<u64>,
    pub cached_content_token_count: Option<u64>,
    pub candidates_token_count: Option<u64>,
    pub thoughts_token_count: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct GroundingMetadata {
    pub grounding_chunks: Vec<GroundingChunk>,
    pub web_search_queries: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct GroundingChunk {
    pub web: Option<WebChunk>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WebChunk {
    pub uri: Option<String>,
    pub title: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CitationMetadata {
    pub citation_sources: Vec<CitationSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CitationSource {
    pub uri: Option<String>,
    pub title: Option<String>,
}
