//! What every HTTP wire's model shares: [`ModelSettings`] and the builder methods that set them
//! ([`ModelBuilder`]).
//!
//! [`OpenAiChat`](crate::OpenAiChat), [`OpenAiResponses`](crate::OpenAiResponses),
//! [`AnthropicMessages`](crate::AnthropicMessages) and [`GoogleGemini`](crate::GoogleGemini)
//! each hold one [`ModelSettings`] beside their wire's own settings, implement [`ModelBuilder`]
//! by lending it, and make every call through it: the POST goes to the wire's endpoint with the
//! key sent the wire's way and kept out of every error, and the answer is decoded by the wire's
//! decoders, streamed or whole as [`with_streaming`](ModelBuilder::with_streaming) chose.
//! (`LocalModel` and [`ScriptedModel`](crate::ScriptedModel) have no endpoint, key or HTTP
//! settings: they do not use it.)

use std::sync::{Arc, Mutex};

use toolsmith_core::{ModelError, ModelStream};

use crate::call::{Decoding, WholeDecoder, call};
use crate::decode::StreamDecoder;
use crate::http::{HttpSettings, JsonPost, shared_client};

/// How a wire sends its API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer KEY` (OpenAI and the servers speaking its wires), when there is a
    /// key.
    Bearer,
    /// The key as the value of this header (`x-api-key`, `x-goog-api-key`).
    Header(&'static str),
}

/// The settings every HTTP wire's model shares: the provider's name, the model id, the base URL,
/// the API key, streaming or not, timeouts and retries, and the HTTP client (the process-wide
/// one).
///
/// Built by the models' constructors and changed through [`ModelBuilder`]. Its `Debug` output
/// never holds the key.
#[derive(Clone)]
pub struct ModelSettings {
    /// In warnings, errors and `LanguageModel::provider`.
    pub(crate) provider: String,
    /// The model id sent in requests.
    pub(crate) model: String,
    /// Without the trailing slash.
    pub(crate) base_url: String,
    /// Never empty when set.
    pub(crate) api_key: Option<String>,
    auth: Auth,
    /// Server-sent events (`true`, the default) or one JSON body.
    pub(crate) streaming: bool,
    http: HttpSettings,
    client: reqwest::Client,
    /// The last endpoint posted to, parsed: every call of a model goes to the same URL, and
    /// parsing it (host, IDNA, percent-encoding) cost each call about 2 000 instructions and
    /// three allocations. Keyed by the URL's text, so a changed setting (Gemini's endpoint
    /// depends on streaming) is parsed anew; shared by clones, which post to the same URLs.
    endpoint: Arc<Mutex<Option<(String, reqwest::Url)>>>,
}

impl std::fmt::Debug for ModelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("ModelSettings")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("streaming", &self.streaming)
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

impl ModelSettings {
    /// `model` of `provider` at `base_url` (its trailing slashes removed), with `api_key` (an
    /// empty one is none) sent as `auth` says: streamed, with the default timeouts and retries,
    /// on the shared client.
    pub(crate) fn new(
        provider: &str,
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<String>,
        auth: Auth,
    ) -> Self {
        ModelSettings {
            provider: provider.to_string(),
            model: model.into(),
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key: api_key.filter(|key| !key.is_empty()),
            auth,
            streaming: true,
            http: HttpSettings::default(),
            client: shared_client().clone(),
            endpoint: Arc::default(),
        }
    }

    /// The POST of `body` (serialised JSON) to `url`, carrying the key (when there is one) and
    /// keeping it out of every error.
    ///
    /// # Errors
    ///
    /// A `Config` error if the key is not a valid header value.
    pub(crate) fn post(&self, url: String, body: Vec<u8>) -> Result<JsonPost, ModelError> {
        let mut post = JsonPost::new(&self.provider, url, body.into());
        post.parsed = self.parsed(&post.url);
        let Some(key) = &self.api_key else {
            return Ok(post);
        };
        match self.auth {
            Auth::Bearer => post.bearer(key),
            Auth::Header(name) => {
                let mut post = post.header(name, key)?;
                post.secret = Some(key.clone());
                Ok(post)
            }
        }
    }

    /// `url` parsed, from the cache when it is the last one (an unparsable URL is left to the
    /// client, which reports it as before).
    fn parsed(&self, url: &str) -> Option<reqwest::Url> {
        let mut cached = self.endpoint.lock().unwrap_or_else(|p| p.into_inner());
        match &*cached {
            Some((text, parsed)) if text == url => Some(parsed.clone()),
            _ => {
                let parsed = reqwest::Url::parse(url).ok()?;
                *cached = Some((url.to_owned(), parsed.clone()));
                Some(parsed)
            }
        }
    }

    /// Sends `post` with these timeouts and retries and decodes the answer: the event stream
    /// through `stream`, or (without streaming) the whole body through `whole`. `warnings` are
    /// logged once and lead the stream (see [`call`]).
    ///
    /// # Errors
    ///
    /// As [`call`]: the POST's error, or the whole body's.
    pub(crate) async fn send<D: StreamDecoder>(
        &self,
        post: JsonPost,
        warnings: Vec<String>,
        stream: D,
        whole: WholeDecoder,
    ) -> Result<ModelStream, ModelError> {
        let decoding = Decoding {
            streaming: self.streaming,
            stream,
            whole,
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

/// The builder methods every HTTP wire's model shares, implemented once over its
/// [`ModelSettings`]: bring the trait into scope (`use toolsmith_providers::ModelBuilder;`) to
/// call them.
pub trait ModelBuilder: Sized {
    /// The model's shared settings.
    fn settings(&self) -> &ModelSettings;

    /// The model's shared settings, to change them.
    fn settings_mut(&mut self) -> &mut ModelSettings;

    /// Replaces the timeouts and retry policy.
    fn with_http_settings(mut self, settings: HttpSettings) -> Self {
        self.settings_mut().http = settings;
        self
    }

    /// Streams responses over server-sent events (`true`, the default) or, with `false`, asks
    /// for one JSON body, which the wire's `decode_response` turns into the same parts.
    fn with_streaming(mut self, streaming: bool) -> Self {
        self.settings_mut().streaming = streaming;
        self
    }

    /// The base URL requests go to (`…/v1`, `…/v1beta`), without the trailing slash.
    fn base_url(&self) -> &str {
        &self.settings().base_url
    }
}
