//! OpenAI Chat Completions (`/v1/chat/completions`), streamed or (with
//! [`with_streaming(false)`](ModelBuilder::with_streaming)) one JSON body: `openai:` and
//! `openai-compatible:` (Ollama, llama.cpp server, vLLM, LM Studio, gateways).
//!
//! - Requests ([`build_body`], [`render_tools`]): messages, tools (rendered once per toolset),
//!   tool choice, settings.
//! - Streams ([`ChatStreamDecoder`], [`decode_events`]): chunk decoding, tool-call assembly with
//!   the compatible-server quirks, usage and finish-reason mapping.
//! - Whole bodies ([`decode_response`]): the request has neither `stream` nor `stream_options`;
//!   the `chat.completion` is read once into the parts a stream of it would give. Servers that
//!   cannot stream tool calls (llama-cpp-python's `chatml-function-calling`) need this mode;
//!   for `openai-compatible:` a stream that ends without a finish reason says so in its error.

mod fast;
mod messages;
mod request;
mod response;
mod stream;
mod wire;

use async_trait::async_trait;
use toolsmith_core::{LanguageModel, ModelError, ModelRequest, ModelStream};

use crate::body::Body;
use crate::keys;
use crate::settings::{Auth, ModelBuilder, ModelSettings};

pub use request::{DIALECT, Flavor, RenderedTools, build_body, render_tools};
pub use response::decode_response;
pub use stream::{ChatStreamDecoder, decode_events};

/// OpenAI's API, the default base URL of `openai:`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// A model behind the Chat Completions wire. Its builder methods (streaming, timeouts and
/// retries) are [`ModelBuilder`]'s.
///
/// ```no_run
/// use toolsmith_providers::ModelBuilder;
/// use toolsmith_providers::openai_chat::OpenAiChat;
///
/// // Key from OPENAI_API_KEY, base URL from OPENAI_BASE_URL or api.openai.com.
/// let gpt = OpenAiChat::openai("gpt-4.1-mini", None, None)?;
/// // A local server: any base URL, no key, one JSON body per call.
/// let local = OpenAiChat::compatible("qwen3:8b", "http://localhost:11434/v1", None)
///     .with_streaming(false);
/// # Ok::<(), toolsmith_core::ModelError>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiChat {
    settings: ModelSettings,
    flavor: Flavor,
}

impl OpenAiChat {
    /// `openai:MODEL`: the key is `api_key`, else `OPENAI_API_KEY`; the base URL is `base_url`,
    /// else `OPENAI_BASE_URL`, else [`OPENAI_BASE_URL`].
    ///
    /// # Errors
    ///
    /// A `Config` error when there is no key:
    /// `OPENAI_API_KEY is not set: pass --api-key or set OPENAI_API_KEY`.
    pub fn openai(
        model: impl Into<String>,
        api_key: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<Self, ModelError> {
        let key = keys::require_key(api_key, "OPENAI_API_KEY")?;
        let base_url = keys::base_url(base_url, "OPENAI_BASE_URL", OPENAI_BASE_URL);
        Ok(OpenAiChat {
            settings: ModelSettings::new("openai", model, base_url, Some(key), Auth::Bearer),
            flavor: Flavor::OpenAi,
        })
    }

    /// `openai-compatible:MODEL` at `base_url` (for example `http://localhost:11434/v1`), with
    /// an optional key.
    pub fn compatible(
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<&str>,
    ) -> Self {
        let key = api_key.map(str::to_string);
        OpenAiChat {
            settings: ModelSettings::new("openai-compatible", model, base_url, key, Auth::Bearer),
            flavor: Flavor::Compatible,
        }
    }

    /// Renames the provider (in warnings, errors and [`LanguageModel::provider`]) and the key
    /// under which `provider_options` are read: for gateways such as `groq` or `xai`.
    pub fn with_provider_name(mut self, provider: impl Into<String>) -> Self {
        self.settings.provider = provider.into();
        self
    }

    /// The endpoint: `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.settings.base_url)
    }

    /// The JSON body this model would send for `request`, and the warnings it would report.
    pub fn request_body(&self, request: &ModelRequest) -> (serde_json::Value, Vec<String>) {
        let (body, warnings) = self.body(request);
        (body.into_value(), warnings)
    }

    /// [`request_body`](Self::request_body) before it is serialised.
    pub(crate) fn body(&self, request: &ModelRequest) -> (Body, Vec<String>) {
        let settings = &self.settings;
        let (mut body, warnings) =
            request::build(request, &settings.provider, &settings.model, self.flavor);
        // Not streamed: no `stream` key at all (the API's default is one body), since some
        // compatible servers read any `stream` key as a request to stream.
        if !settings.streaming {
            body.remove("stream_options");
            body.remove("stream");
        }
        (body, warnings)
    }
}

impl ModelBuilder for OpenAiChat {
    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    fn provider(&self) -> &str {
        &self.settings.provider
    }

    fn model_id(&self) -> &str {
        &self.settings.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let (body, warnings) = self.body(request);
        let post = self.settings.post(self.endpoint(), body.to_bytes())?;
        let mut decoder = ChatStreamDecoder::new();
        // A compatible server that drops a stream may answer the same request whole.
        decoder.truncation_hint = self.flavor == Flavor::Compatible;
        self.settings
            .send(post, warnings, decoder, decode_response)
            .await
    }
}
