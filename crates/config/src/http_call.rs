//! One JSON POST of a config-defined HTTP tool (webhooks, Tavily), with the errors the model
//! sees: `<KIND>_TIMEOUT`, `<KIND>_UNREACHABLE`, `<KIND>_FAILED` (an answer outside 2xx, its
//! first 500 bytes quoted). Messages name the host only: a URL's path or query may hold a
//! token, and headers are never quoted.

use std::time::Duration;

use serde_json::Value;
use toolsmith_core::{ToolError, ToolOutput};

/// The most of a failed answer quoted in its error.
const QUOTED_BYTES: usize = 500;

/// What is calling, for error codes and messages: `("WEBHOOK", "webhook")`.
pub(crate) struct Caller {
    pub(crate) code: &'static str,
    pub(crate) noun: &'static str,
}

/// POSTs `body` to `url` with `headers` and returns the answer: JSON when it parses, else
/// text.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &reqwest::Url,
    headers: &[(String, String)],
    body: &Value,
    timeout: Duration,
    caller: &Caller,
) -> Result<ToolOutput, ToolError> {
    let (code, noun, at) = (caller.code, caller.noun, host(url));
    let mut request = client.post(url.clone()).timeout(timeout).json(body);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            ToolError::new(
                format!("{code}_TIMEOUT"),
                format!(
                    "{noun} {at} did not answer within {} ms",
                    timeout.as_millis()
                ),
            )
        } else {
            let why = if e.is_connect() {
                "cannot connect"
            } else {
                "request failed"
            };
            ToolError::new(
                format!("{code}_UNREACHABLE"),
                format!("{noun} {at}: {why}{}", crate::webhook::forbidden_note(&e)),
            )
        }
    })?;
    let status = response.status();
    let bytes = response.bytes().await.map_err(|_| {
        ToolError::new(
            format!("{code}_UNREACHABLE"),
            format!("{noun} {at}: the answer was cut off"),
        )
    })?;
    if !status.is_success() {
        let quoted = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED_BYTES)]).into_owned();
        return Err(ToolError::new(
            format!("{code}_FAILED"),
            format!("{noun} {at} answered {}: {quoted}", status.as_u16()),
        ));
    }
    Ok(match serde_json::from_slice::<Value>(&bytes) {
        Ok(value) => ToolOutput::json(value),
        Err(_) => ToolOutput::text(String::from_utf8_lossy(&bytes).into_owned()),
    })
}

/// `host[:port]` of a URL, for messages (never its path or query).
pub(crate) fn host(url: &reqwest::Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => "(no host)".to_string(),
    }
}
