//! One entry of an `mcpServers` object, checked key by key (the rules: the [module docs](super)).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::{
    DEFAULT_MCP_STARTUP_TIMEOUT, DEFAULT_MCP_TIMEOUT, MAX_MCP_TIMEOUT, McpSandbox, McpServerEntry,
    McpTransport, ToolNames,
};
use crate::{ConfigError, error};

/// The keys of a server entry.
const KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "allow",
    "deny",
    "readOnly",
    "needsApproval",
    "timeoutMs",
    "startupTimeoutMs",
    "prefix",
    "sandbox",
    "disabled",
];

/// Whether `name` is a valid server name.
pub(super) fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Parses one entry; `None` for a disabled one.
pub(super) fn parse_entry(
    name: &str,
    entry: Value,
    at: &str,
    base: Option<&Path>,
) -> Result<Option<McpServerEntry>, ConfigError> {
    if !valid_server_name(name) {
        return Err(error(format!(
            "{at}: a server's name is 1 to 32 of A-Z, a-z, 0-9, '_' and '-'"
        )));
    }
    let Value::Object(mut entry) = entry else {
        return Err(error(format!("{at} must be an object")));
    };
    if let Some(key) = entry.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(error(format!("{at}.{key} is not a supported setting")));
    }
    let disabled = match entry.remove("disabled") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(error(format!("{at}.disabled must be a boolean"))),
    };
    let string = |entry: &mut Map<String, Value>, key: &str| match entry.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(error(format!("{at}.{key} must be a string"))),
    };
    let kind = string(&mut entry, "type")?;
    let command = string(&mut entry, "command")?;
    let url = string(&mut entry, "url")?;
    let relative = |path: String| match base {
        Some(base) if Path::new(&path).is_relative() => base.join(path),
        _ => PathBuf::from(path),
    };
    let transport = match (command, url) {
        (Some(_), Some(_)) => {
            return Err(error(format!(
                "{at}: give either \"command\" (a stdio server) or \"url\" (an HTTP server), not both"
            )));
        }
        (None, None) => {
            return Err(error(format!(
                "{at}: \"command\" (a stdio server) or \"url\" (an HTTP server) is required"
            )));
        }
        (Some(command), None) => {
            match kind.as_deref() {
                None | Some("stdio") => {}
                Some(other) => {
                    return Err(error(format!(
                        "{at}.type is \"{other}\" but the entry has a \"command\" (type \"stdio\")"
                    )));
                }
            }
            if command.trim().is_empty() {
                return Err(error(format!("{at}.command must not be empty")));
            }
            let args = match entry.remove("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(args)) => args
                    .into_iter()
                    .map(|a| match a {
                        Value::String(s) => Ok(s),
                        _ => Err(error(format!("{at}.args must be an array of strings"))),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(error(format!("{at}.args must be an array of strings"))),
            };
            let env = pairs(entry.remove("env"), &format!("{at}.env"))?;
            let cwd = string(&mut entry, "cwd")?.map(relative);
            let sandbox = match entry.remove("sandbox") {
                None | Some(Value::Null) => None,
                Some(Value::Object(sandbox)) => Some(sandbox_block(sandbox, at, &relative)?),
                Some(_) => return Err(error(format!("{at}.sandbox must be an object"))),
            };
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                sandbox,
            }
        }
        (None, Some(url)) => {
            match kind.as_deref() {
                None | Some("http" | "streamable-http" | "streamableHttp") => {}
                Some("sse") => {
                    return Err(error(format!(
                        "{at}.type: the legacy SSE transport is not supported; give the server's streamable HTTP endpoint (type \"http\")"
                    )));
                }
                Some(other) => {
                    return Err(error(format!(
                        "{at}.type must be \"http\" for an entry with a \"url\", got \"{other}\""
                    )));
                }
            }
            let parsed = reqwest::Url::parse(&url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if parsed.is_none() {
                return Err(error(format!("{at}.url must be an http or https URL")));
            }
            let headers = pairs(entry.remove("headers"), &format!("{at}.headers"))?;
            for (key, value) in &headers {
                let ok = reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_ok()
                    && reqwest::header::HeaderValue::from_str(value).is_ok();
                if !ok {
                    return Err(error(format!("{at}.headers.{key} is not a valid header")));
                }
                let reserved = [
                    "accept",
                    "mcp-session-id",
                    "mcp-protocol-version",
                    "last-event-id",
                ];
                if reserved.iter().any(|r| key.eq_ignore_ascii_case(r)) {
                    return Err(error(format!(
                        "{at}.headers.{key} is set by the MCP transport itself"
                    )));
                }
            }
            for key in ["args", "env", "cwd", "sandbox"] {
                if entry.contains_key(key) {
                    return Err(error(format!(
                        "{at}.{key} is a setting of stdio servers (this one has a \"url\")"
                    )));
                }
            }
            McpTransport::Http { url, headers }
        }
    };
    let list = |entry: &mut Map<String, Value>, key: &str| match entry.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(names)) => names
            .into_iter()
            .map(|n| match n {
                Value::String(s) => Ok(s),
                _ => Err(error(format!("{at}.{key} must be an array of tool names"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(error(format!("{at}.{key} must be an array of tool names"))),
    };
    let allow = list(&mut entry, "allow")?;
    let deny = list(&mut entry, "deny")?.unwrap_or_default();
    let names = |entry: &mut Map<String, Value>, key: &str| match entry.remove(key) {
        None | Some(Value::Null) => Ok(ToolNames::None),
        Some(Value::Bool(true)) => Ok(ToolNames::All),
        Some(Value::Bool(false)) => Ok(ToolNames::None),
        Some(Value::Array(names)) => names
            .into_iter()
            .map(|n| match n {
                Value::String(s) => Ok(s),
                _ => Err(()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ToolNames::Some)
            .map_err(|()| {
                error(format!(
                    "{at}.{key} must be true, false or an array of tool names"
                ))
            }),
        Some(_) => Err(error(format!(
            "{at}.{key} must be true, false or an array of tool names"
        ))),
    };
    let read_only = names(&mut entry, "readOnly")?;
    let needs_approval = names(&mut entry, "needsApproval")?;
    let millis =
        |entry: &mut Map<String, Value>, key: &str, default: Duration| match entry.remove(key) {
            None | Some(Value::Null) => Ok(default),
            Some(value) => match value.as_u64() {
                Some(ms) if ms >= 1 && Duration::from_millis(ms) <= MAX_MCP_TIMEOUT => {
                    Ok(Duration::from_millis(ms))
                }
                _ => Err(error(format!(
                    "{at}.{key} must be an integer from 1 to {}",
                    MAX_MCP_TIMEOUT.as_millis()
                ))),
            },
        };
    let timeout = millis(&mut entry, "timeoutMs", DEFAULT_MCP_TIMEOUT)?;
    let startup_timeout = millis(&mut entry, "startupTimeoutMs", DEFAULT_MCP_STARTUP_TIMEOUT)?;
    let prefix = match string(&mut entry, "prefix")? {
        None => name.to_string(),
        Some(prefix)
            if prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                && prefix.len() <= 32 =>
        {
            prefix
        }
        Some(_) => {
            return Err(error(format!(
                "{at}.prefix is at most 32 of A-Z, a-z, 0-9, '_' and '-'"
            )));
        }
    };
    if disabled {
        return Ok(None);
    }
    Ok(Some(McpServerEntry {
        name: name.to_string(),
        transport,
        allow,
        deny,
        read_only,
        needs_approval,
        timeout,
        startup_timeout,
        prefix,
    }))
}

/// Parses `sandbox`: `{"root": DIR, "network"?: bool, "read"?: [PATH…]}`.
fn sandbox_block(
    mut block: Map<String, Value>,
    at: &str,
    relative: &dyn Fn(String) -> PathBuf,
) -> Result<McpSandbox, ConfigError> {
    let root = match block.remove("root") {
        Some(Value::String(root)) if !root.is_empty() => relative(root),
        _ => {
            return Err(error(format!(
                "{at}.sandbox.root must be a directory's path"
            )));
        }
    };
    let network = match block.remove("network") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(error(format!("{at}.sandbox.network must be a boolean"))),
    };
    let read = match block.remove("read") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(paths)) => paths
            .into_iter()
            .map(|p| match p {
                Value::String(p) if !p.is_empty() => Ok(relative(p)),
                _ => Err(error(format!(
                    "{at}.sandbox.read must be an array of paths"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(error(format!(
                "{at}.sandbox.read must be an array of paths"
            )));
        }
    };
    if let Some(key) = block.keys().next() {
        return Err(error(format!(
            "{at}.sandbox.{key} is not a supported setting"
        )));
    }
    Ok(McpSandbox {
        root,
        network,
        read,
    })
}

/// Parses an object of strings (`env`, `headers`).
fn pairs(value: Option<Value>, at: &str) -> Result<Vec<(String, String)>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                _ => Err(error(format!("{at}.{k} must be a string"))),
            })
            .collect(),
        Some(_) => Err(error(format!("{at} must be an object of strings"))),
    }
}
