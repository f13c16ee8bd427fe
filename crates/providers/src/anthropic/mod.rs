//! Anthropic Messages API (`/v1/messages`), streamed or not: `anthropic:`.
//!
//! - Requests ([`build_body`], [`render_tools`]): top-level `system`, alternating messages with
//!   `tool_use` / `tool_result` blocks, thinking blocks and provider-executed blocks echoed back
//!   from their provider metadata, tools (rendered once per toolset, hosted tools verbatim),
//!   `tool_choice` with `disable_parallel_tool_use`, settings, `provider_options.anthropic`.
//! - Streams ([`MessagesStreamDecoder`], [`decode_events`]) and whole bodies
//!   ([`decode_response`]): the same parts, with usage, finish reasons, server tool results and
//!   their sources (seed 002).

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

pub use request::{DEFAULT_MAX_TOKENS, DIALECT, RenderedTools, build_body, render_tools};
pub use response::decode_response;
pub use stream::{MessagesStreamDecoder, TRUNCATED, decode_events};

/// Anthropic's API, the default base URL of `anthropic:`.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A model behind the Messages API.
///
/// ```no_run
/// use toolsmith_providers::anthropic::AnthropicMessages;
///
/// // Key from ANTHROPIC_API_KEY, base URL from ANTHROPIC_BASE_URL or api.anthropic.com.
/// let claude = AnthropicMessages::new("claude-sonnet-4-5", None, None)?;
/// // A proxy speaking the same wire, without streaming.
/// let proxied = AnthropicMessages::new("claude-haiku-4-5", Some("sk-ant-…"), Some("http://localhost:8080/v1"))?
///     .with_streaming(false);
/// assert_eq!(proxied.endpoint(), "http://localhost:8080/v1/messages");
/// # Ok::<(), toolsmith_core::ModelError>(())
/// ```
#[derive(Clone)]
pub struct AnthropicMessages {
    model: String,
    base_url: String,
    api_key: String,
    streaming: bool,
    http: HttpSettings,
    client: reqwest::Client,
}

impl std::fmt::Debug for AnthropicMessages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed.
        f.debug_struct("AnthropicMessages")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("streaming", &self.streaming)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

impl AnthropicMessages {
    /// `anthropic:MODEL`: the key is `api_key`, else `ANTHROPIC_API_KEY`; the base URL is
    /// `base_url`, else `ANTHROPIC_BASE_URL`, else [`ANTHROPIC_BASE_URL`]. Streams by default.
    ///
    /// # Errors
    ///
    /// A `Config` error when there is no key:
    /// `ANTHROPIC_API_KEY is not set: pass --api-key or set ANTHROPIC_API_KEY`.
    pub fn new(
        model: impl Into<String>,
        api_key: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<Self, ModelError> {
        let api_key = keys::require_key(api_key, "ANTHROPIC_API_KEY")?;
        let base_url = keys::base_url(base_url, "ANTHROPIC_BASE_URL", ANTHROPIC_BASE_URL);
        Ok(AnthropicMessages {
            model: model.into(),
            base_url,
            api_key,
            streaming: true,
            http: HttpSettings::default(),
            client: shared_client().clone(),
        })
    }

    /// Replaces the timeouts and retry policy.
    pub fn with_http_settings(mut self, settings: HttpSettings) -> Self {
        self.http = settings;
        self
    }

    /// Streams (`true`, the default: SSE decoded as it arrives) or asks for one JSON body
    /// (`false`: decoded by [`decode_response`] into the same parts).
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// The base URL requests go to (`…/v1`, without the trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The endpoint: `{base_url}/messages`.
    pub fn endpoint(&self) -> String {
        format!("{}/messages", self.base_url)
    }

    /// The JSON body this model would send for `request`, and the warnings it would report.
    pub fn request_body(&self, request: &ModelRequest) -> (serde_json::Value, Vec<String>) {
        build_body(request, &self.model, self.streaming)
    }
}

#[async_trait]
impl LanguageModel for AnthropicMessages {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let (body, warnings) = self.request_body(request);
        let mut post = JsonPost::json("anthropic", self.endpoint(), &body)?
            .header("x-api-key", &self.api_key)?
            .header("anthropic-version", ANTHROPIC_VERSION)?;
        post.secret = Some(self.api_key.clone());
        let decoding = Decoding {
            streaming: self.streaming,
            stream: MessagesStreamDecoder::new(),
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
