//! [`ModelError`]: a failed model call.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What went wrong calling a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// Missing or bad configuration (no API key, bad base URL). Not retried.
    Config,
    /// The provider rejected the credentials (401/403). Not retried.
    Auth,
    /// The provider rejected the request (400/404/422). Not retried.
    InvalidRequest,
    /// Too many requests (429). Retried after `retry_after`.
    RateLimited,
    /// The provider failed or is overloaded (5xx, 529). Retried.
    Server,
    /// The connection failed or dropped. Retried.
    Network,
    /// The call took too long. Retried.
    Timeout,
    /// The response or stream was malformed or truncated.
    InvalidResponse,
    /// The call was cancelled.
    Cancelled,
    /// Anything else.
    Other,
}

/// A failed model call: a kind, a message safe to show (never an API key), and what is known of
/// the HTTP exchange.
///
/// ```
/// use std::time::Duration;
/// use toolsmith_core::{ModelError, ModelErrorKind};
///
/// let e = ModelError::new(ModelErrorKind::RateLimited, "rate limited")
///     .with_status(429)
///     .with_retry_after(Duration::from_secs(2));
/// assert!(e.is_retryable());
/// assert_eq!(e.to_string(), "rate limited");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[error("{message}")]
#[serde(rename_all = "camelCase")]
pub struct ModelError {
    /// The kind.
    pub kind: ModelErrorKind,
    /// What happened.
    pub message: String,
    /// The HTTP status, if there was a response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long the provider asked us to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Duration>,
}

impl ModelError {
    /// An error of `kind`.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
        }
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the provider's requested delay.
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = Some(delay);
        self
    }

    /// Whether retrying the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ModelErrorKind::RateLimited
                | ModelErrorKind::Server
                | ModelErrorKind::Network
                | ModelErrorKind::Timeout
        )
    }
}
