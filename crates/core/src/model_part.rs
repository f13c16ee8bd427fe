//! [`ModelPart`]: what a provider's stream yields.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{FinishReason, ProviderMetadata, Source, Usage};

/// One part of a model's streamed response, the same for every provider wire.
///
/// Text, reasoning and tool input arrive as start / delta / end triples keyed by `id`; a complete
/// tool call arrives as [`ModelPart::ToolCall`] once its input is whole. The stream ends with
/// [`ModelPart::Finish`]. Ids are `Arc<str>`: a block's every delta carries its id, and cloning
/// an `Arc` costs a counter increment where a `String` cost an allocation per delta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ModelPart {
    /// The stream opened; warnings about unsupported settings.
    StreamStart {
        /// Settings or tools the provider ignored, and why.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// The provider's id and model for this response.
    ResponseMetadata {
        /// The response id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The model that answered.
        #[serde(default, rename = "modelId", skip_serializing_if = "Option::is_none")]
        model_id: Option<String>,
    },
    /// A text block starts.
    TextStart {
        /// The block id, shared by the block's parts.
        id: Arc<str>,
    },
    /// More text.
    TextDelta {
        /// The block id, shared by the block's parts.
        id: Arc<str>,
        /// The new text.
        delta: String,
    },
    /// A text block ends.
    TextEnd {
        /// The block id, shared by the block's parts.
        id: Arc<str>,
        /// Opaque provider data for the block.
        #[serde(
            default,
            rename = "providerMetadata",
            skip_serializing_if = "ProviderMetadata::is_empty"
        )]
        provider_metadata: ProviderMetadata,
    },
    /// A reasoning block starts.
    ReasoningStart {
        /// The block id, shared by the block's parts.
        id: Arc<str>,
    },
    /// More reasoning.
    ReasoningDelta {
        /// The block id, shared by the block's parts.
        id: Arc<str>,
        /// The new text.
        delta: String,
    },
    /// A reasoning block ends; signatures and encrypted content ride in the metadata.
    ReasoningEnd {
        /// The block id, shared by the block's parts.
        id: Arc<str>,
        /// Opaque provider data for the block.
        #[serde(
            default,
            rename = "providerMetadata",
            skip_serializing_if = "ProviderMetadata::is_empty"
        )]
        provider_metadata: ProviderMetadata,
    },
    /// A tool call's input starts streaming.
    ToolInputStart {
        /// The tool call id, shared by the input's parts.
        id: Arc<str>,
        /// The tool's name.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// Whether the provider executes it.
        #[serde(
            default,
            rename = "providerExecuted",
            skip_serializing_if = "std::ops::Not::not"
        )]
        provider_executed: bool,
    },
    /// More of a tool call's input JSON text.
    ToolInputDelta {
        /// The tool call id, shared by the input's parts.
        id: Arc<str>,
        /// The new JSON text.
        delta: String,
    },
    /// A tool call's input is complete.
    ToolInputEnd {
        /// The tool call id, shared by the input's parts.
        id: Arc<str>,
    },
    /// A complete tool call.
    ToolCall(ModelToolCall),
    /// The result of a provider-executed tool.
    ToolResult {
        /// The call it answers.
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        /// The tool's name.
        #[serde(rename = "toolName")]
        tool_name: String,
        /// The provider's result, as it sent it.
        result: Value,
        /// Whether the provider reports an error.
        #[serde(
            default,
            rename = "isError",
            skip_serializing_if = "std::ops::Not::not"
        )]
        is_error: bool,
        /// Opaque provider data.
        #[serde(
            default,
            rename = "providerMetadata",
            skip_serializing_if = "ProviderMetadata::is_empty"
        )]
        provider_metadata: ProviderMetadata,
    },
    /// A cited source.
    Source(Source),
    /// A generated file.
    File {
        /// IANA media type.
        #[serde(rename = "mediaType")]
        media_type: String,
        /// Base64 data.
        data: String,
    },
    /// The call ended.
    Finish {
        /// Tokens used.
        usage: Usage,
        /// Why it ended.
        #[serde(rename = "finishReason")]
        finish_reason: FinishReason,
        /// Opaque provider data for the response.
        #[serde(
            default,
            rename = "providerMetadata",
            skip_serializing_if = "ProviderMetadata::is_empty"
        )]
        provider_metadata: ProviderMetadata,
    },
    /// A raw provider event, passed through when raw output is requested.
    Raw(Value),
}

/// A complete tool call from the model.
///
/// `input` is the JSON text exactly as the model produced it; the loop parses and validates it,
/// so malformed input becomes an error result rather than a lost call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelToolCall {
    /// The provider's id for the call.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments as JSON text (may be empty or malformed).
    pub input: String,
    /// Whether the provider executes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_executed: bool,
    /// Opaque provider data to echo back verbatim.
    #[serde(default, skip_serializing_if = "ProviderMetadata::is_empty")]
    pub provider_metadata: ProviderMetadata,
}

impl ModelToolCall {
    /// A call with JSON text input and no metadata.
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        input: impl Into<String>,
    ) -> Self {
        ModelToolCall {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            input: input.into(),
            provider_executed: false,
            provider_metadata: ProviderMetadata::default(),
        }
    }
}
