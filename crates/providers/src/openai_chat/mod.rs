//! OpenAI Chat Completions (`/v1/chat/completions`), streamed: `openai:` and
//! `openai-compatible:` (Ollama, llama.cpp server, vLLM, LM Studio, gateways).
//!
//! - Requests ([`build_body`], [`render_tools`]): messages, tools (rendered once per toolset),
//!   tool choice, settings.
//! - Streams ([`ChatStreamDecoder`], [`decode_events`]): chunk decoding, tool-call assembly with
//!   the compatible-server quirks, usage and finish-reason mapping.

mod fast;
mod request;
mod response;
mod stream;
mod wire;

use async_trait::async_trait;
use toolsmith_core::{LanguageModel, ModelError, ModelRequest, ModelStream};

use crate::call::{Decoding, call};
use crate::http::{HttpSettings, JsonPost, shared_client};
use crate::keys;

pub use request::{DIALECT, Flavor, RenderedTools, build_body, render_tools};
pub use response::decode_response;
pub use stream::{ChatStreamDecoder, decode_events};

/// OpenAI's API, the default base URL of `openai:`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// A model behind the Chat Completions wire.
///
/// ```no_run
/// use toolsmith_providers::openai_chat::OpenAiChat;
///
/// // Key from OPENAI_API_KEY, base URL from OPENAI_BASE_URL or api.openai.com.
/// let gpt = OpenAiChat::openai("gpt-4.1-mini", None, None)?;
/// // A local server: any base URL, no key.
/// let local = OpenAiChat::compatible("qwen3:8b", "http://localhost:11434/v1", None);
/// # Ok::<(), toolsmith_core::ModelError>(())
/// ```
#[derive(Clone)]
pub struct OpenAiChat {
    provider: String,
    model: String,
    base_url: String,
    api_key: Option<String>,
    flavor: Flavor,
    http: HttpSettings,
    streaming: bool,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("OpenAiChat")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("flavor", &self.flavor)
            .field("streaming", &self.streaming)
            .finish_non_exhaustive()
    }
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
        Ok(Self::with_parts(
            "openai",
            model.into(),
            base_url,
            Some(key),
            Flavor::OpenAi,
        ))
    }

    /// `openai-compatible:MODEL` at `base_url` (for example `http://localhost:11434/v1`), with
    /// an optional key.
    pub fn compatible(
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<&str>,
    ) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_string();
        Self::with_parts(
            "openai-compatible",
            model.into(),
            base_url,
            api_key.map(str::to_string).filter(|k| !k.is_empty()),
            Flavor::Compatible,
        )
    }

    fn with_parts(
        provider: &str,
        model: String,
        base_url: String,
        api_key: Option<String>,
        flavor: Flavor,
    ) -> Self {
        OpenAiChat {
            provider: provider.to_string(),
            model,
            base_url,
            api_key,
            flavor,
            http: HttpSettings::default(),
            streaming: true,
            client: shared_client().clone(),
        }
    }

    /// Replaces the timeouts and retry policy.
    pub fn with_http_settings(mut self, settings: HttpSettings) -> Self {
        self.http = settings;
        self
    }

    /// Streams responses over server-sent events (the default) or, with `false`, asks for one
    /// JSON body and decodes it into the same parts ([`decode_response`]).
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Renames the provider (in warnings, errors and [`LanguageModel::provider`]) and the key
    /// under which `provider_options` are read: for gateways such as `groq` or `xai`.
    pub fn with_provider_name(mut self, provider: impl Into<String>) -> Self {
        self.provider = provider.into();
        self
    }

    /// The base URL requests go to (`…/v1`, without the trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The endpoint: `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// The JSON body this model would send for `request`, and the warnings it would report.
    pub fn request_body(&self, request: &ModelRequest) -> (serde_json::Value, Vec<String>) {
        let (mut body, warnings) = build_body(request, &self.provider, &self.model, self.flavor);
        if !self.streaming
            && let Some(body) = body.as_object_mut()
        {
            body.remove("stream_options");
            body.insert("stream".into(), serde_json::Value::Bool(false));
        }
        (body, warnings)
    }
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let (body, warnings) = self.request_body(request);
        let mut post = JsonPost::json(&self.provider, self.endpoint(), &body)?;
        if let Some(key) = &self.api_key {
            post = post.bearer(key)?;
        }
        let decoding = Decoding {
            streaming: self.streaming,
            stream: ChatStreamDecoder::new(),
            whole: decode_response,
        };
        call(
            post,
            &self.client,
            &self.http,
            &self.model,
            warnings,
            decoding,
        )
        .await
    }
}
