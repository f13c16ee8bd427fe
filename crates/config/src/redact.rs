//! [`redacted`]: an agent config as it may be shown to a person — every place a config can
//! hold a credential replaced by `"[redacted]"`, the rest as written.
//!
//! What is hidden, wherever it appears in the config (sub-agents' and prompts' inline configs
//! included):
//! - the value of any key that names a credential: `apiKey`, `token`, `secret`, `password`,
//!   `authorization`, `credentials`, `privateKey` and their `_`/case variants, or any key
//!   ending in `key`, `token`, `secret` or `password`;
//! - every value of a `headers` or `env` object (their names stay: which headers are sent is
//!   not secret, what they carry may be);
//! - a declared variable's `value`;
//! - the user and password of any URL (`https://user:pass@host/` → `https://[redacted]@host/`)
//!   and the values of its query parameters (`?key=…`).
//!
//! It errs on the side of hiding: a key that merely looks like a credential's is hidden too.

use serde_json::{Map, Value};

/// What a hidden value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// `config` with its credentials hidden (see the [module docs](self)).
///
/// ```
/// use serde_json::json;
///
/// let config = json!({
///     "model": {"provider": "openai", "name": "gpt-4o", "baseUrl": "https://u:p@llm.example/v1?key=k"},
///     "tools": {"search": {"type": "tavilySearch", "apiKey": "tvly-123"},
///               "hook": {"type": "webhook", "url": "https://hooks.example/x",
///                        "headers": {"Authorization": "Bearer abc"}}},
/// });
/// let shown = toolsmith_config::redacted(&config);
/// assert_eq!(shown["tools"]["search"]["apiKey"], "[redacted]");
/// assert_eq!(shown["tools"]["hook"]["headers"]["Authorization"], "[redacted]");
/// assert_eq!(shown["model"]["baseUrl"], "https://[redacted]@llm.example/v1?key=[redacted]");
/// assert_eq!(shown["model"]["name"], "gpt-4o");
/// ```
pub fn redacted(config: &Value) -> Value {
    match config {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), redact_entry(key, value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redacted).collect()),
        Value::String(text) => Value::String(redact_url(text)),
        other => other.clone(),
    }
}

fn redact_entry(key: &str, value: &Value) -> Value {
    let hidden = || Value::String(REDACTED.to_string());
    let scalar = !(value.is_object() || value.is_array() || value.is_null());
    match credential(key) {
        Some(Credential::Whole) if !value.is_null() => return hidden(),
        Some(Credential::Scalar) if scalar => return hidden(),
        _ if key == "value" && scalar => return hidden(),
        _ => {}
    }
    match (key, value) {
        ("headers" | "env", Value::Object(map)) => Value::Object(
            map.keys()
                .map(|name| (name.clone(), hidden()))
                .collect::<Map<_, _>>(),
        ),
        // `env` as a list of `NAME=value` (or `[name, value]`) entries.
        ("env", Value::Array(items)) => Value::Array(
            items
                .iter()
                .map(|item| match item {
                    Value::String(entry) => match entry.split_once('=') {
                        Some((name, _)) => Value::String(format!("{name}={REDACTED}")),
                        None => item.clone(),
                    },
                    Value::Array(pair) if pair.len() == 2 => {
                        Value::Array(vec![pair[0].clone(), hidden()])
                    }
                    other => redacted(other),
                })
                .collect(),
        ),
        _ => redacted(value),
    }
}

/// How much of a key's value is a credential.
enum Credential {
    /// All of it, whatever its shape (`credentials: {…}`).
    Whole,
    /// A string or number under it (`apiKey`); an object under a key that merely ends like a
    /// credential's (a schema's property `key`) is looked into instead.
    Scalar,
}

/// Whether a key names a credential, and how.
fn credential(key: &str) -> Option<Credential> {
    let key: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if matches!(
        key.as_str(),
        "authorization" | "credentials" | "credential" | "auth" | "cookie"
    ) {
        return Some(Credential::Whole);
    }
    ["key", "token", "secret", "password", "passwd", "bearer"]
        .iter()
        .any(|end| key.ends_with(end))
        .then_some(Credential::Scalar)
}

/// A URL with its user, password and query values hidden; any other text as it is.
fn redact_url(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_string();
    };
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    {
        return text.to_string();
    }
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{REDACTED}@{host}"),
        None => authority.to_string(),
    };
    let path = match path.split_once('?') {
        Some((before, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (query, None),
            };
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) => format!("{name}={REDACTED}"),
                    None => pair.to_string(),
                })
                .collect();
            let mut out = format!("{before}?{}", query.join("&"));
            if let Some(fragment) = fragment {
                out.push('#');
                out.push_str(fragment);
            }
            out
        }
        None => path.to_string(),
    };
    format!("{scheme}://{authority}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn credentials_are_hidden_wherever_they_are() {
        let config = json!({
            "model": "openai:gpt-4o",
            "instructions": "Be brief. See https://docs.example/guide",
            "mcpServers": {"local": {"command": "srv", "env": {"GITHUB_TOKEN": "zz-ghp", "MODE": "ro"}},
                           "remote": {"url": "https://mcp.example/mcp",
                                      "headers": {"X-Api-Key": "zz-k1", "Accept": "text/plain"}}},
            "variables": [{"name": "REGION", "type": "text", "value": "eu"}],
            "subagents": [{"name": "helper", "config": {"model": "anthropic:claude",
                "tools": {"t": {"type": "httpCall", "url": "https://api.example/x?token=zz-abc&page=2",
                                "bearerToken": "zz-bearer", "client_secret": "zz-cs", "password": null}}}}],
            "sandbox": {"env": ["PATH=/bin", "AWS_SECRET_ACCESS_KEY=zz-aws"]},
            "maxSteps": 5,
        });
        let shown = redacted(&config);
        let text = shown.to_string();
        for secret in ["zz-", "\"eu\""] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        // Names and everything else stay.
        assert_eq!(shown["mcpServers"]["local"]["env"]["MODE"], REDACTED);
        assert_eq!(shown["mcpServers"]["remote"]["headers"]["Accept"], REDACTED);
        assert_eq!(
            shown["subagents"][0]["config"]["tools"]["t"]["url"],
            "https://api.example/x?token=[redacted]&page=[redacted]"
        );
        assert_eq!(
            shown["subagents"][0]["config"]["tools"]["t"]["password"],
            Value::Null
        );
        assert_eq!(shown["sandbox"]["env"][0], "PATH=[redacted]");
        assert_eq!(shown["instructions"], config["instructions"]);
        assert_eq!(shown["maxSteps"], 5);
        assert_eq!(shown["variables"][0]["name"], "REGION");
        assert_eq!(shown["model"], "openai:gpt-4o");
        // A schema property that is called like a credential is still a schema.
        let schema = json!({"inputSchema": {"properties": {"key": {"type": "string"}}},
                            "credentials": {"user": "u", "pass": "p"}});
        let shown = redacted(&schema);
        assert_eq!(shown["inputSchema"]["properties"]["key"]["type"], "string");
        assert_eq!(shown["credentials"], REDACTED);
    }

    #[test]
    fn only_urls_are_rewritten() {
        for text in ["plain", "a://", "not a url: x", "mailto:a@b"] {
            assert_eq!(redact_url(text), text, "{text}");
        }
        assert_eq!(
            redact_url("postgres://user:pw@db:5432/app#frag"),
            "postgres://[redacted]@db:5432/app#frag"
        );
    }
}
