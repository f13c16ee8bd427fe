//! Google Gemini's native API (`generateContent`, `streamGenerateContent?alt=sse`): `google:`.
//!
//! - Requests ([`build_body`], [`render_tools`]): contents with thought signatures echoed
//!   verbatim, `functionDeclarations` in the [`Gemini`](crate::dialect::Gemini) schema dialect
//!   (rendered once per toolset), Google Search as its own `tools` entry, `toolConfig`,
//!   `generationConfig`, provider options.
//! - Streams ([`GeminiStreamDecoder`], [`decode_events`]): text and thoughts, whole and streamed
//!   (`partialArgs`) function calls, grounding sources, usage with thoughts tokens, finish
//!   reasons.
//! - Whole bodies ([`decode_response`]) for `with_streaming(false)`.
//!
//! Errors: HTTP failures are retried as the model's [`RetryPolicy`](crate::RetryPolicy) allows
//! (429 and 5xx, honouring `retry-after` and the `RetryInfo` of Google's error bodies); the key
//! travels in the `x-goog-api-key` header and never appears in an error.

mod args;
mod fast;
mod request;
mod response;
mod stream;
mod wire;

use async_trait::async_trait;
use toolsmith_core::{LanguageModel, ModelError, ModelErrorKind, ModelRequest, ModelStream};

use crate::keys;
use crate::settings::{Auth, ModelBuilder, ModelSettings};

pub use request::{
    DIALECT, GENERATION_CONFIG_KEYS, RenderedTools, SKIP_SIGNATURE_VALIDATOR, build_body,
    render_tools,
};
pub use response::decode_response;
pub use stream::{CODE_EXECUTION, GeminiStreamDecoder, PROVIDER, decode_events};

/// The Gemini API, the default base URL of `google:`.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The variable holding the API key.
pub const API_KEY_VAR: &str = "GEMINI_API_KEY";

/// A second variable accepted for the key when [`API_KEY_VAR`] is not set (the AI SDK's name).
pub const FALLBACK_API_KEY_VAR: &str = "GOOGLE_GENERATIVE_AI_API_KEY";

/// The variable overriding the base URL.
pub const BASE_URL_VAR: &str = "GOOGLE_GENERATIVE_AI_BASE_URL";

/// A Gemini model behind the native API. Its builder methods (streaming, timeouts and retries)
/// are [`ModelBuilder`]'s.
///
/// Named `GoogleGemini` (provider and wire, like [`OpenAiChat`](crate::openai_chat::OpenAiChat))
/// so it never clashes with the schema dialect [`dialect::Gemini`](crate::dialect::Gemini).
///
/// ```no_run
/// use toolsmith_providers::ModelBuilder;
/// use toolsmith_providers::google::GoogleGemini;
///
/// // Key from GEMINI_API_KEY, base URL from GOOGLE_GENERATIVE_AI_BASE_URL or Google's.
/// let flash = GoogleGemini::new("gemini-2.5-flash", None, None)?;
/// assert!(flash.endpoint().ends_with("/models/gemini-2.5-flash:streamGenerateContent?alt=sse"));
/// // One JSON body per call instead of a stream.
/// let whole = GoogleGemini::new("gemini-2.5-flash", Some("key"), None)?.with_streaming(false);
/// assert!(whole.endpoint().ends_with(":generateContent"));
/// # Ok::<(), toolsmith_core::ModelError>(())
/// ```
#[derive(Clone, Debug)]
pub struct GoogleGemini {
    settings: ModelSettings,
}

impl GoogleGemini {
    /// `google:MODEL`: the key is `api_key`, else `GEMINI_API_KEY`, else
    /// `GOOGLE_GENERATIVE_AI_API_KEY`; the base URL is `base_url`, else
    /// `GOOGLE_GENERATIVE_AI_BASE_URL`, else [`GEMINI_BASE_URL`]. Streams by default.
    ///
    /// # Errors
    ///
    /// A `Config` error when there is no key:
    /// `GEMINI_API_KEY is not set: pass --api-key or set GEMINI_API_KEY`.
    pub fn new(
        model: impl Into<String>,
        api_key: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<Self, ModelError> {
        let key = match keys::optional_key(api_key, API_KEY_VAR) {
            Some(key) => key,
            None => match keys::optional_key(None, FALLBACK_API_KEY_VAR) {
                Some(key) => key,
                None => keys::require_key(None, API_KEY_VAR)?,
            },
        };
        let base_url = keys::base_url(base_url, BASE_URL_VAR, GEMINI_BASE_URL);
        let auth = Auth::Header("x-goog-api-key");
        Ok(GoogleGemini {
            settings: ModelSettings::new(PROVIDER, model, base_url, Some(key), auth),
        })
    }

    /// The endpoint: `{base_url}/models/{model}:streamGenerateContent?alt=sse`, or
    /// `…:generateContent` without streaming. A model already named `models/…` or
    /// `tunedModels/…` keeps its prefix.
    pub fn endpoint(&self) -> String {
        let ModelSettings {
            model,
            base_url,
            streaming,
            ..
        } = &self.settings;
        let model = if model.starts_with("models/") || model.starts_with("tunedModels/") {
            model.clone()
        } else {
            format!("models/{model}")
        };
        if *streaming {
            format!("{base_url}/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base_url}/{model}:generateContent")
        }
    }

    /// The JSON body this model would send for `request`, and the warnings it would report.
    pub fn request_body(&self, request: &ModelRequest) -> (serde_json::Value, Vec<String>) {
        let (body, warnings) = self.body(request);
        (body.into_value(), warnings)
    }

    /// [`request_body`](Self::request_body) before it is serialised.
    pub(crate) fn body(&self, request: &ModelRequest) -> (crate::body::Body, Vec<String>) {
        request::build(request, &self.settings.model)
    }
}

impl ModelBuilder for GoogleGemini {
    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }
}

#[async_trait]
impl LanguageModel for GoogleGemini {
    fn provider(&self) -> &str {
        &self.settings.provider
    }

    fn model_id(&self) -> &str {
        &self.settings.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let (body, warnings) = self.body(request);
        let post = self.settings.post(self.endpoint(), body.to_bytes())?;
        let decoder = GeminiStreamDecoder::new();
        self.settings
            .send(post, warnings, decoder, decode_response)
            .await
            .map_err(refine_error)
    }
}

/// Gemini answers a missing, invalid or expired key with a 400 (`API key not valid…`,
/// `API_KEY_INVALID`): that is an authentication failure, not a bad request.
fn refine_error(mut error: ModelError) -> ModelError {
    if error.status == Some(400) && error.message.contains("API key") {
        error.kind = ModelErrorKind::Auth;
    }
    error
}
