//! The shared HTTP client and the retrying POST every wire uses (internal: the crate exports
//! only [`HttpSettings`], the timeouts and retries a model is given).
//!
//! One `reqwest` client serves the whole process ([`shared_client`], [`CONNECT_TIMEOUT`]). A
//! [`JsonPost`] is serialised once and resent as is: each attempt waits at most
//! `response_timeout` for the headers, a failed one is retried as [`RetryPolicy`] allows, and
//! the last error is returned with the key ([`JsonPost::secret`]) removed from its message.

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use toolsmith_core::{ModelError, ModelErrorKind};

use crate::errors::{status_error, transport_error};
use crate::retry::{RetryPolicy, retry_after_header};

/// How long to wait for a TCP (and TLS) connection, for every provider.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// One `reqwest` client for the whole process: connection pools and TLS state are shared by
/// every model and every run.
pub fn shared_client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("toolsmith/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// Timeouts and retries for one model's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSettings {
    /// How long to wait for the response headers, per attempt.
    pub response_timeout: Duration,
    /// The longest silence allowed between two chunks of a streamed body.
    pub idle_timeout: Duration,
    /// Retries before the stream starts.
    pub retry: RetryPolicy,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            response_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
        }
    }
}

/// A JSON POST, ready to send (and resend): the body is serialised once.
#[derive(Debug, Clone)]
pub struct JsonPost {
    /// The provider's name, for error messages.
    pub provider: String,
    /// The full URL.
    pub url: String,
    /// `url` already parsed, when it parses: sent without parsing it again.
    pub parsed: Option<reqwest::Url>,
    /// Extra headers (authorisation, versions).
    pub headers: HeaderMap,
    /// The serialised JSON body.
    pub body: Bytes,
    /// The API key, removed from every error message.
    pub secret: Option<String>,
}

impl JsonPost {
    /// A POST of `body` to `url`.
    pub fn new(provider: impl Into<String>, url: impl Into<String>, body: Bytes) -> Self {
        JsonPost {
            provider: provider.into(),
            url: url.into(),
            parsed: None,
            headers: HeaderMap::new(),
            body,
            secret: None,
        }
    }

    /// Adds a header; a name or value that is not valid in a header is a `Config` error (the
    /// message never repeats the value, which may be a key).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, ModelError> {
        let invalid = || {
            ModelError::new(
                ModelErrorKind::Config,
                format!("The {name} header is not valid (control characters?)."),
            )
        };
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
        let mut value = HeaderValue::from_str(value).map_err(|_| invalid())?;
        let lower = header.as_str();
        value.set_sensitive(lower == "authorization" || lower.contains("key"));
        self.headers.insert(header, value);
        Ok(self)
    }

    /// Sends `Authorization: Bearer KEY` and keeps the key out of errors.
    pub fn bearer(mut self, key: &str) -> Result<Self, ModelError> {
        self = self.header("authorization", &format!("Bearer {key}"))?;
        self.secret = Some(key.to_string());
        Ok(self)
    }

    /// Sends the request, retrying per `settings.retry`, and returns the successful response
    /// whose body has not been read yet.
    ///
    /// # Errors
    ///
    /// The last attempt's error: a status mapped by [`status_kind`](crate::errors::status_kind)
    /// with the provider's message, a `Timeout`, or a `Network` error.
    pub async fn send(
        &self,
        client: &reqwest::Client,
        settings: &HttpSettings,
    ) -> Result<reqwest::Response, ModelError> {
        let mut attempt = 0;
        loop {
            let error = match self.attempt(client, settings).await {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            match settings.retry.delay_for(attempt, &error) {
                Some(delay) => {
                    tracing::debug!(
                        provider = %self.provider,
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        error = %error,
                        "retrying model call"
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                None => return Err(error),
            }
        }
    }

    async fn attempt(
        &self,
        client: &reqwest::Client,
        settings: &HttpSettings,
    ) -> Result<reqwest::Response, ModelError> {
        let secret = self.secret.as_deref();
        let request = match &self.parsed {
            Some(url) => client.post(url.clone()),
            None => client.post(&self.url),
        };
        let request = request
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(self.body.clone());
        let response = match tokio::time::timeout(settings.response_timeout, request.send()).await {
            Err(_) => {
                return Err(ModelError::new(
                    ModelErrorKind::Timeout,
                    format!(
                        "{} did not answer within {:?}",
                        self.provider, settings.response_timeout
                    ),
                ));
            }
            Ok(Err(error)) => return Err(transport_error(&self.provider, &error, secret)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after_header(response.headers());
        let body = tokio::time::timeout(settings.response_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        Err(status_error(
            &self.provider,
            status.as_u16(),
            &body,
            retry_after,
            secret,
        ))
    }
}
