//! In-stream errors of the Responses API.

use serde_json::Value;
use toolsmith_core::{ModelError, ModelErrorKind};

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The provider's in-stream error (`{"type","code","message"}`) as a [`ModelError`]: the kind
/// from the code, the message naming the code.
pub(crate) fn provider_error(error: &Value) -> ModelError {
    let message = str_of(error, "message")
        .or_else(|| error.as_str())
        .unwrap_or("The provider reported an error in the stream.");
    let code = str_of(error, "code")
        .or_else(|| str_of(error, "type"))
        .map(str::to_string)
        .or_else(|| {
            error
                .get("code")
                .filter(|c| c.is_number())
                .map(Value::to_string)
        });
    let text = [str_of(error, "code"), str_of(error, "type")]
        .iter()
        .flatten()
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let kind = if text.contains("rate_limit") || text.contains("insufficient_quota") {
        ModelErrorKind::RateLimited
    } else if text.contains("server_error")
        || text.contains("internal")
        || text.contains("overloaded")
        || text.contains("unavailable")
    {
        ModelErrorKind::Server
    } else if text.contains("invalid_api_key")
        || text.contains("authentication")
        || text.contains("permission")
    {
        ModelErrorKind::Auth
    } else if text.contains("invalid")
        || text.contains("context_length")
        || text.contains("not_found")
        || text.contains("unsupported")
    {
        ModelErrorKind::InvalidRequest
    } else {
        ModelErrorKind::Other
    };
    let message = match code {
        Some(code) => format!("The provider reported an error ({code}): {message}"),
        None => format!("The provider reported an error: {message}"),
    };
    ModelError::new(kind, message)
}
