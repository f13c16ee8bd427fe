//! Anthropic Messages API (`/v1/messages`), streamed or not: `anthropic:`.
//!
//! - Requests ([`build_body`], [`render_tools`]): top-level `system`, alternating messages with
//!   `tool_use` / `tool_result` blocks, thinking blocks and provider-executed blocks echoed back
//!   from their provider metadata, tools (rendered once per toolset, hosted tools verbatim),
//!   `tool_choice` with `disable_parallel_tool_use`, settings, `provider_options.anthropic`.
//! - Streams ([`MessagesStreamDecoder`], [`decode_events`]) and whole bodies
//!   ([`decode_response`]): the same parts, with usage, finish reasons, server tool results and
//!   their sources (as in the Deuz SDK).

mod fast;
mod request;
mod response;
mod stream;
mod wire;

use async_trait::async_trait;
use toolsmith_core::{LanguageModel, ModelError, ModelRequest, ModelStream};

use self::stream::PROVIDER;
use crate::keys;
use crate::settings::{Auth, ModelBuilder, ModelSettings};

pub use request::{DEFAULT_MAX_TOKENS, DIALECT, RenderedTools, build_body, render_tools};
pub use response::decode_response;
pub use stream::{MessagesStreamDecoder, TRUNCATED, decode_events};

/// Anthropic's API, the default base URL of `anthropic:`.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` header every request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A model behind the Messages API. Its builder methods (streaming, timeouts and retries) are
/// [`ModelBuilder`]'s.
///
/// ```no_run
/// use toolsmith_providers::ModelBuilder;
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
#[derive(Clone, Debug)]
pub struct AnthropicMessages {
    settings: ModelSettings,
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
        let auth = Auth::Header("x-api-key");
        Ok(AnthropicMessages {
            settings: ModelSettings::new(PROVIDER, model, base_url, Some(api_key), auth),
        })
    }

    /// The endpoint: `{base_url}/messages`.
    pub fn endpoint(&self) -> String {
        format!("{}/messages", self.settings.base_url)
    }

    /// The JSON body this model would send for `request`, and the warnings it would report.
    pub fn request_body(&self, request: &ModelRequest) -> (serde_json::Value, Vec<String>) {
        let (body, warnings) = self.body(request);
        (body.into_value(), warnings)
    }

    /// [`request_body`](Self::request_body) before it is serialised.
    pub(crate) fn body(&self, request: &ModelRequest) -> (crate::body::Body, Vec<String>) {
        request::build(request, &self.settings.model, self.settings.streaming)
    }
}

impl ModelBuilder for AnthropicMessages {
    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }
}

#[async_trait]
impl LanguageModel for AnthropicMessages {
    fn provider(&self) -> &str {
        &self.settings.provider
    }

    fn model_id(&self) -> &str {
        &self.settings.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let (body, warnings) = self.body(request);
        let post = self
            .settings
            .post(self.endpoint(), body.to_bytes())?
            .header("anthropic-version", ANTHROPIC_VERSION)?;
        let decoder = MessagesStreamDecoder::new();
        self.settings
            .send(post, warnings, decoder, decode_response)
            .await
    }
}
