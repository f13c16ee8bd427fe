//! Chat Completions stream chunks, as servers actually send them: every field optional.

use serde::Deserialize;
use serde_json::Value;

/// One `chat.completion.chunk` (or an in-stream error).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Chunk {
    pub id: Option<String>,
    pub model: Option<String>,
    pub choices: Vec<Choice>,
    pub usage: Option<WireUsage>,
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Choice {
    pub index: Option<u64>,
    pub delta: Option<Delta>,
    /// Some servers send whole messages in stream chunks.
    pub message: Option<Delta>,
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta {
    pub content: Option<String>,
    pub reasoning_content: Option<String>,
    pub reasoning: Option<String>,
    pub tool_calls: Option<Vec<ToolCallDelta>>,
    pub annotations: Option<Vec<Annotation>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolCallDelta {
    pub index: Option<i64>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FunctionDelta {
    pub name: Option<String>,
    /// Usually a string; a few servers send an object.
    pub arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Annotation {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub url_citation: Option<UrlCitation>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct UrlCitation {
    pub url: Option<String>,
    pub title: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WireUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub prompt_tokens_details: Option<PromptDetails>,
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PromptDetails {
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CompletionDetails {
    pub reasoning_tokens: Option<u64>,
}
