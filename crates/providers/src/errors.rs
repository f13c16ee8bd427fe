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

/// The delay a Google API error body asks for: the `retryDelay` of its
/// `type.googleapis.com/google.rpc.RetryInfo` detail (`{"error":{"details":[{"@type":…,
/// "retryDelay":"20s"}]}}`, also inside a one-element array), in the protobuf JSON duration
/// form (`"20s"`, `"34.4s"`) or as `{"seconds":…,"nanos":…}`.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use toolsmith_providers::errors::retry_info_delay;
///
/// let body = json!({"error": {"code": 429, "details": [
///     {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}
/// ]}});
/// assert_eq!(retry_info_delay(&body), Some(Duration::from_millis(34_400)));
/// assert_eq!(retry_info_delay(&json!({"error": {"message": "no"}})), None);
/// ```
pub fn retry_info_delay(body: &Value) -> Option<Duration> {
    let body = match body {
        Value::Array(items) => items.first()?,
        other => other,
    };
    let details = body
        .get("error")
        .unwrap_or(body)
        .get("details")?
        .as_array()?;
    let info = details.iter().find(|d| {
        d.get("@type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
    })?;
    let seconds = match info.get("retryDelay")? {
        Value::String(text) => text.trim().strip_suffix('s')?.trim().parse::<f64>().ok()?,
        Value::Object(parts) => {
            let whole = match parts.get("seconds") {
                Some(Value::String(s)) => s.parse::<f64>().ok()?,
                Some(n) => n.as_f64()?,
                None => 0.0,
            };
            whole + parts.get("nanos").and_then(Value::as_f64).unwrap_or(0.0) / 1e9
        }
        _ => return None,
    };
    // Not `from_secs_f64`, which panics past `Duration::MAX` (a `"1e20s"` did).
    Duration::try_from_secs_f64(seconds).ok()
}

/// The error for a non-success response: its kind from the status, its message from the body
/// (the provider's message when it has one, else a short excerpt), with any occurrence of
/// `secret` removed. Without a `retry_after` (from the headers), a Google `RetryInfo` in the
/// body sets it (see [`retry_info_delay`]).
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
    let retry_after = retry_after.or_else(|| {
        serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| retry_info_delay(&v))
    });
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

    #[test]
    fn google_retry_info_sets_the_delay_when_no_header_did() {
        let body = r#"{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}}"#;
        let e = status_error("google", 429, body, None, None);
        assert_eq!(e.kind, ModelErrorKind::RateLimited);
        assert_eq!(e.retry_after, Some(Duration::from_secs(20)));
        assert_eq!(
            e.message,
            "google returned HTTP 429: You exceeded your current quota."
        );
        // A retry-after header wins.
        let e = status_error("google", 503, body, Some(Duration::from_secs(1)), None);
        assert_eq!(e.retry_after, Some(Duration::from_secs(1)));
        // In an array, as a {seconds, nanos} object, fractional; bad values ignored.
        let array = format!("[{body}]").replace(r#""20s""#, r#"{"seconds":"2","nanos":500000000}"#);
        let e = status_error("google", 503, &array, None, None);
        assert_eq!(e.retry_after, Some(Duration::from_millis(2500)));
        for delay in [r#""0.25s""#, r#""-1s""#, r#""soon""#, "3"] {
            let body = body.replace(r#""20s""#, delay);
            let got = status_error("google", 429, &body, None, None).retry_after;
            let want = (delay == r#""0.25s""#).then(|| Duration::from_millis(250));
            assert_eq!(got, want, "{delay}");
        }
        assert_eq!(
            status_error("openai", 429, "{}", None, None).retry_after,
            None
        );
    }
}
