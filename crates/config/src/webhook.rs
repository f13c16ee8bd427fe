//! Webhook tools: a config entry `{"type": "webhook", "url", "description", "inputSchema",
//! "headers"?, "timeoutMs"?}` is a tool that POSTs its call to the URL, so that work can be
//! done in any language without writing Rust.
//!
//! The request body is `{"toolName", "toolCallId", "input"}`, and for a call the harness
//! service runs asynchronously also `"resultId"`, and for an `external-dispatch` one
//! `"completeUrl"` (absolute) and `"token"` (a bearer token that authorises exactly that
//! completion). A synchronous webhook's answer is the result: JSON when it parses, else text;
//! an answer outside 2xx is a tool error the model sees (`WEBHOOK_FAILED`), an unreachable URL
//! `WEBHOOK_UNREACHABLE`, a slow one `WEBHOOK_TIMEOUT` (`http_call.rs`).
//!
//! **The network.** A webhook URL comes from whoever wrote the config, which in the service
//! is an account, not the operator: by default ([`WebhookPolicy::public_only`]) a webhook may
//! not reach loopback, private, link-local or otherwise internal addresses (checked on every
//! address the name resolves to, and on IP literals), follows no redirects and uses no proxy.
//! `toolsmith run`, whose configs are the user's own, allows every address.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde_json::{Map, Value, json};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::http_call::{Caller, host, post_json};
use crate::{ConfigError, error};

/// How long a webhook may take by default.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// A webhook entry's own keys.
const WEBHOOK_KEYS: &[&str] = &[
    "type",
    "url",
    "description",
    "inputSchema",
    "headers",
    "timeoutMs",
];

/// The keys every tool entry may have, read by the config itself.
const CONTROL_KEYS: &[&str] = &[
    "enabled",
    "needsApproval",
    "env",
    "variables",
    "async",
    "execution",
];

/// Which addresses webhooks may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookPolicy {
    /// Whether loopback, private, link-local and other internal addresses are allowed.
    pub allow_private: bool,
}

impl WebhookPolicy {
    /// Public addresses only: what the service uses unless its operator allows more.
    pub fn public_only() -> Self {
        WebhookPolicy {
            allow_private: false,
        }
    }

    /// Every address: for configs written by the machine's own user.
    pub fn any() -> Self {
        WebhookPolicy {
            allow_private: true,
        }
    }

    /// An HTTP client builder that reaches what the policy allows: no redirects; without
    /// private addresses, no proxy and a resolver that refuses a name resolving to one (an IP
    /// literal is checked by [`allows`](Self::allows)). Webhooks and the service's MCP
    /// servers are reached through it.
    pub fn client_builder(self) -> reqwest::ClientBuilder {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if self.allow_private {
            client
        } else {
            client.no_proxy().dns_resolver(Arc::new(PublicOnly))
        }
    }

    /// Whether `url`'s host may be reached, as far as an IP literal tells (a name is checked
    /// by the resolver of [`client_builder`](Self::client_builder) when it is looked up).
    ///
    /// ```
    /// use toolsmith_config::WebhookPolicy;
    ///
    /// let url = |u: &str| reqwest::Url::parse(u).unwrap();
    /// assert!(!WebhookPolicy::public_only().allows(&url("http://127.0.0.1:8080/mcp")));
    /// assert!(WebhookPolicy::public_only().allows(&url("https://mcp.example.com/mcp")));
    /// assert!(WebhookPolicy::any().allows(&url("http://10.0.0.1/")));
    /// ```
    pub fn allows(self, url: &reqwest::Url) -> bool {
        self.allow_private || literal_ip(url).is_none_or(is_public)
    }
}

/// A checked webhook entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WebhookEntry {
    url: reqwest::Url,
    description: String,
    input_schema: Value,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl WebhookEntry {
    /// Checks a webhook entry's options (`type` already seen to be `webhook`).
    pub(crate) fn parse(name: &str, options: &Map<String, Value>) -> Result<Self, ConfigError> {
        let at = format!("config.tools.{name}");
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            return Err(error(format!(
                "{at}: a webhook tool's name is 1 to 64 of A-Z, a-z, 0-9, '_' and '-'"
            )));
        }
        let url = options
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| error(format!("{at}.url must be a string")))?;
        let url = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| error(format!("{at}.url must be an http or https URL")))?;
        let description = match options.get("description") {
            Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
            _ => {
                return Err(error(format!(
                    "{at}.description must be a non-empty string"
                )));
            }
        };
        let input_schema = match options.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            _ => {
                return Err(error(format!(
                    "{at}.inputSchema must be a JSON Schema object"
                )));
            }
        };
        let mut headers = Vec::new();
        match options.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (key, value) in map {
                    let value = value
                        .as_str()
                        .ok_or_else(|| error(format!("{at}.headers.{key} must be a string")))?;
                    let ok = reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_ok()
                        && reqwest::header::HeaderValue::from_str(value).is_ok();
                    if !ok {
                        return Err(error(format!("{at}.headers.{key} is not a valid header")));
                    }
                    headers.push((key.clone(), value.to_string()));
                }
            }
            Some(_) => return Err(error(format!("{at}.headers must be an object of strings"))),
        }
        let timeout = match options.get("timeoutMs") {
            None | Some(Value::Null) => DEFAULT_WEBHOOK_TIMEOUT,
            Some(value) => match value.as_u64() {
                Some(ms) if (1..=600_000).contains(&ms) => Duration::from_millis(ms),
                _ => {
                    return Err(error(format!(
                        "{at}.timeoutMs must be an integer from 1 to 600000"
                    )));
                }
            },
        };
        if let Some(key) = options
            .keys()
            .find(|k| !WEBHOOK_KEYS.contains(&k.as_str()) && !CONTROL_KEYS.contains(&k.as_str()))
        {
            return Err(error(format!("{at}.{key} is not a supported setting")));
        }
        Ok(WebhookEntry {
            url,
            description,
            input_schema,
            headers,
            timeout,
        })
    }

    /// The tool.
    pub(crate) fn tool(
        &self,
        name: &str,
        policy: WebhookPolicy,
    ) -> Result<WebhookTool, ConfigError> {
        let client = policy
            .client_builder()
            .timeout(self.timeout)
            .build()
            .map_err(|e| error(format!("config.tools.{name}: {e}")))?;
        let spec = ToolSpec::new(name, self.input_schema.clone())
            .with_description(self.description.clone());
        Ok(WebhookTool {
            spec,
            entry: self.clone(),
            policy,
            client,
        })
    }
}

/// A webhook tool (see the [module docs](self)).
pub struct WebhookTool {
    spec: ToolSpec,
    entry: WebhookEntry,
    policy: WebhookPolicy,
    client: reqwest::Client,
}

impl std::fmt::Debug for WebhookTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The headers may hold credentials: names only.
        f.debug_struct("WebhookTool")
            .field("name", &self.spec.name())
            .field("url", &self.entry.url.as_str())
            .field(
                "headers",
                &self
                    .entry
                    .headers
                    .iter()
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

#[async_trait::async_trait]
impl Tool for WebhookTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let url = &self.entry.url;
        if !self.policy.allows(url) {
            return Err(ToolError::new(
                "WEBHOOK_FORBIDDEN",
                format!(
                    "webhook {} names a private address, which this service does not reach",
                    host(url)
                ),
            ));
        }
        let mut body = json!({
            "toolName": cx.tool_name(),
            "toolCallId": cx.tool_call_id(),
            "input": input,
        });
        if let Some(call) = cx.async_call() {
            body["resultId"] = json!(call.result_id);
            if let Some(complete_url) = &call.complete_url {
                body["completeUrl"] = json!(complete_url);
            }
            if let Some(token) = &call.token {
                body["token"] = json!(token);
            }
        }
        let caller = Caller {
            code: "WEBHOOK",
            noun: "webhook",
        };
        let headers = self
            .entry
            .headers
            .iter()
            .map(|(name, value)| Ok((name.clone(), interpolate(name, value, cx)?)))
            .collect::<Result<Vec<_>, ToolError>>()?;
        post_json(
            &self.client,
            url,
            &headers,
            &body,
            self.entry.timeout,
            &caller,
        )
        .await
    }
}

/// A header value with each `${NAME}` replaced by the call's variable `NAME` (a token the tool
/// declares in `variables`, kept per thread): the value never rests in the config.
fn interpolate(header: &str, value: &str, cx: &ToolContext) -> Result<String, ToolError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + end];
        let found = cx.variable(name).ok_or_else(|| {
            ToolError::new(
                "WEBHOOK_VARIABLE",
                format!(
                    "the webhook's header {header} needs the variable {name}, which is not set"
                ),
            )
        })?;
        out.push_str(&rest[..start]);
        out.push_str(found);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Says so when a request failed because the name resolves to a private address.
pub(crate) fn forbidden_note(e: &reqwest::Error) -> &'static str {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(error) = source {
        if error.to_string().contains(PRIVATE_ADDRESS) {
            return " (it resolves to a private address, which this service does not reach)";
        }
        source = error.source();
    }
    ""
}

const PRIVATE_ADDRESS: &str = "resolves to a private address";

/// The IP address a URL names literally (`http://10.0.0.1/`, `http://[::1]/`), if it does.
fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// Whether `ip` is a public unicast address: not loopback, private (RFC 1918, unique local),
/// link-local, shared (100.64/10), unspecified, broadcast, multicast or documentation; an
/// IPv4-mapped IPv6 address as its IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0xdb8)
        }
    }
}

/// A resolver that refuses names resolving to any non-public address (so that a name cannot
/// point a webhook at the service's own network).
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.iter().any(|a| !is_public(a.ip())) {
                return Err(format!("{host} {PRIVATE_ADDRESS}").into());
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn entries_are_checked() {
        let parse = |v: Value| WebhookEntry::parse("lookup", v.as_object().unwrap());
        let ok = json!({"type": "webhook", "url": "https://x.example/hook", "description": "d",
                        "inputSchema": {"type": "object"}, "headers": {"authorization": "Bearer t"}});
        assert!(parse(ok).is_ok());
        let err = |v: Value| parse(v).unwrap_err().to_string();
        assert_eq!(
            err(
                json!({"type": "webhook", "url": "ftp://x", "description": "d", "inputSchema": {}})
            ),
            "config.tools.lookup.url must be an http or https URL"
        );
        assert_eq!(
            err(json!({"type": "webhook", "url": "https://x", "inputSchema": {}})),
            "config.tools.lookup.description must be a non-empty string"
        );
        assert_eq!(
            err(json!({"type": "webhook", "url": "https://x", "description": "d"})),
            "config.tools.lookup.inputSchema must be a JSON Schema object"
        );
        assert_eq!(
            err(
                json!({"type": "webhook", "url": "https://x", "description": "d", "inputSchema": {}, "timeoutMs": 0})
            ),
            "config.tools.lookup.timeoutMs must be an integer from 1 to 600000"
        );
        assert_eq!(
            err(
                json!({"type": "webhook", "url": "https://x", "description": "d", "inputSchema": {}, "retries": 3})
            ),
            "config.tools.lookup.retries is not a supported setting"
        );
    }
}
