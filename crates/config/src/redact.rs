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

/// The credentials written in a config ([`AgentConfig::credentials`](crate::AgentConfig)):
/// their `Debug` shows how many, never what.
#[derive(Clone, Default, PartialEq)]
pub struct Credentials(pub(crate) Vec<String>);

impl Credentials {
    /// The values.
    pub fn values(&self) -> &[String] {
        &self.0
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({} {REDACTED})", self.0.len())
    }
}

/// The values [`redacted`] hides — credentials written in a config —, to mask wherever they
/// appear in a run (a worker that echoes a header it was sent, an error that quotes one): each
/// hidden string or number, and a `Bearer`/`Basic` header's credential alone too. URLs
/// rewritten for their user or query are given whole.
pub(crate) fn credentials(config: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect(config, &redacted(config), &mut found);
    found.sort();
    found.dedup();
    found
}

/// What of `original` differs in `shown` (its redacted form), into `found`.
fn collect(original: &Value, shown: &Value, found: &mut Vec<String>) {
    match (original, shown) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                if let Some(hidden) = b.get(key) {
                    collect(value, hidden, found);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (value, hidden) in a.iter().zip(b) {
                collect(value, hidden, found);
            }
        }
        (original, shown) if original == shown => {}
        (Value::String(text), _) => {
            let scheme = text.split_once(' ').filter(|(scheme, _)| {
                scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("basic")
            });
            if let Some((_, credential)) = scheme {
                found.push(credential.trim().to_string());
            }
            // An `env` entry `NAME=value`: its value.
            if let Some((_, value)) = text.split_once('=').filter(|_| !text.contains("://")) {
                found.push(value.to_string());
            }
            found.push(text.clone());
        }
        (Value::Number(n), _) => found.push(n.to_string()),
        // A value hidden whole (`credentials: {…}`): every string in it.
        (other, _) => strings(other, found),
    }
}

fn strings(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::String(text) => found.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, found)),
        Value::Object(map) => map.values().for_each(|v| strings(v, found)),
        _ => {}
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
    fn the_hidden_values_are_the_credentials_to_mask() {
        let config = json!({
            "tools": {"hook": {"url": "https://h/x", "headers": {"Authorization": "Bearer zz-tok"}},
                      "search": {"apiKey": "zz-key"}},
            "mcpServers": {"m": {"command": "srv", "env": {"TOKEN": "zz-env"}}},
            "sandbox": {"env": ["A=zz-pair"]},
            "credentials": {"user": "zz-user"},
            "instructions": "Be brief.",
        });
        let found = credentials(&config);
        for want in [
            "Bearer zz-tok",
            "zz-tok",
            "zz-key",
            "zz-env",
            "A=zz-pair",
            "zz-pair",
            "zz-user",
        ] {
            assert!(found.contains(&want.to_string()), "{want} in {found:?}");
        }
        assert!(
            !found
                .iter()
                .any(|f| f.contains("brief") || f.contains("https://h/x"))
        );
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
