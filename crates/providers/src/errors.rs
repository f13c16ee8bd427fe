//! HTTP failures → [`ModelError`]: status mapping, provider error bodies, key redaction.

use std::time::Duration;

use serde_json::Value;
use toolsmith_core::{ModelError, ModelErrorKind};

/// The [`ModelErrorKind`] for an HTTP status: 401/403 `Auth`, 400/404/422 (and other 4xx)
/// `InvalidRequest`, 408 `Timeout`, 429 `RateLimited`, 5xx and 529 `Server`.
///
/// ```
/// use toolsmith_core::ModelErrorKind;
/// use toolsmith_providers::errors::status_kind;
///
/// assert_eq!(status_kind(401), ModelErrorKind::Auth);
/// assert_eq!(status_kind(429), ModelErrorKind::RateLimited);
/// assert_eq!(status_kind(529), ModelErrorKind::Server);
/// ```
pub fn status_kind(status: u16) -> ModelErrorKind {
    match status {
        401 | 403 => ModelErrorKind::Auth,
        408 => ModelErrorKind::Timeout,
        429 => ModelErrorKind::RateLimited,
        500..=599 => ModelErrorKind::Server,
        400..=499 => ModelErrorKind::InvalidRequest,
        _ => ModelErrorKind::Other,
    }
}

/// The provider's own message in an error body: `{"error":{"message":…}}`, `{"error":"…"}`,
/// `{"message":…}`, or a JSON array holding one of those (Gemini); `None` when the body has none.
pub fn provider_message(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let value = match value {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    };
    match value.get("error") {
        Some(Value::String(message)) => return Some(message.clone()),
        Some(error) => {
            if let Some(message) = error.get("message").and_then(Value::as_str) {
                return Some(message.to_string());
            }
        }
        None => {}
    }
    value
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The error for a non-success response: its kind from the status, its message from the body
/// (the provider's message when it has one, else a short excerpt), with any occurrence of
/// `secret` removed.
pub fn status_error(
    provider: &str,
    status: u16,
    body: &str,
    retry_after: Option<Duration>,
    secret: Option<&str>,
) -> ModelError {
    let detail = provider_message(body).unwrap_or_else(|| excerpt(body.trim(), 500));
    let message = if detail.is_empty() {
        format!("{provider} returned HTTP {status}")
    } else {
        format!("{provider} returned HTTP {status}: {detail}")
    };
    let mut error =
        ModelError::new(status_kind(status), redact(&message, secret)).with_status(status);
    if let Some(delay) = retry_after {
        error = error.with_retry_after(delay);
    }
    error
}

/// The error for a transport failure (connection refused, reset, TLS, body read).
pub fn transport_error(provider: &str, error: &reqwest::Error, secret: Option<&str>) -> ModelError {
    let kind = if error.is_timeout() {
        ModelErrorKind::Timeout
    } else if error.is_builder() {
        ModelErrorKind::Config
    } else {
        ModelErrorKind::Network
    };
    // reqwest's Display includes the URL but never headers; redact anyway in case a key was put
    // in the URL by a custom base URL.
    let mut message = format!("{provider} request failed: {error}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    ModelError::new(kind, redact(&message, secret))
}

/// `text` with every occurrence of `secret` replaced by `[redacted]`.
pub fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if secret.len() >= 4 && text.contains(secret) => {
            text.replace(secret, "[redacted]")
        }
        _ => text.to_string(),
    }
}

/// At most `max` bytes of `text`, cut at a character boundary.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_from_the_body_and_never_hold_the_key() {
        let body = r#"{"error":{"message":"Incorrect API key provided: sk-secret-123.","type":"invalid_request_error"}}"#;
        let e = status_error("openai", 401, body, None, Some("sk-secret-123"));
        assert_eq!(e.kind, ModelErrorKind::Auth);
        assert_eq!(
            e.message,
            "openai returned HTTP 401: Incorrect API key provided: [redacted]."
        );
        assert_eq!(
            provider_message(r#"[{"error":{"message":"x"}}]"#).as_deref(),
            Some("x")
        );
        assert_eq!(provider_message(r#"{"error":"y"}"#).as_deref(), Some("y"));
        assert_eq!(provider_message("not json"), None);
        let e = status_error("openai", 502, "<html>bad gateway</html>", None, None);
        assert_eq!(e.kind, ModelErrorKind::Server);
        assert!(e.message.ends_with("<html>bad gateway</html>"));
    }
}
