//! [`LanguageModel`]: the provider interface, and the request it takes.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Message, ModelError, ModelPart, ToolDeclarations};

/// A model's streamed response.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelPart, ModelError>> + Send>>;

/// A language model behind some wire: the provider interface.
///
/// One required method. `stream` borrows the request only while it builds the call; the returned
/// stream owns whatever it needs, so the loop can keep appending to its messages.
///
/// ```
/// use futures::stream;
/// use toolsmith_core::{async_trait, FinishReason, LanguageModel, ModelError, ModelPart,
///     ModelRequest, ModelStream, Usage};
///
/// struct Silent;
///
/// #[async_trait]
/// impl LanguageModel for Silent {
///     async fn stream(&self, _request: &ModelRequest) -> Result<ModelStream, ModelError> {
///         Ok(Box::pin(stream::iter([Ok(ModelPart::Finish {
///             usage: Usage::default(),
///             finish_reason: FinishReason::default(),
///             provider_metadata: Default::default(),
///         })])))
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait LanguageModel: Send + Sync + 'static {
    /// The provider's name (`anthropic`, `openai`, `scripted`…).
    fn provider(&self) -> &str {
        "custom"
    }

    /// The model's id at that provider.
    fn model_id(&self) -> &str {
        "custom"
    }

    /// Starts a call and returns its stream of parts.
    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError>;
}

/// Everything a model call needs.
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    /// The thread so far, instructions first.
    pub messages: Vec<Message>,
    /// The tools on offer, with their declarations cached per provider dialect.
    pub tools: Arc<ToolDeclarations>,
    /// Whether and which tool the model must call.
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one step (`None`: the provider's default).
    pub parallel_tool_calls: Option<bool>,
    /// Whether `parallel_tool_calls` is a default the caller filled in (an agent whose calls
    /// run one at a time turns parallel calls off unless told otherwise) rather than a request:
    /// a wire that cannot honour such a default ignores it silently, where it warns about a
    /// request.
    pub parallel_tool_calls_defaulted: bool,
    /// Sampling and length settings.
    pub settings: CallSettings,
    /// Provider-specific options, keyed by provider name, passed through.
    pub provider_options: Map<String, Value>,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call to this tool.
    Tool {
        /// The tool's name.
        #[serde(rename = "toolName")]
        tool_name: String,
    },
}

/// Sampling and length settings for a model call. `None` leaves the provider's default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallSettings {
    /// Maximum tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Seed for deterministic sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Sequences that end generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
}
