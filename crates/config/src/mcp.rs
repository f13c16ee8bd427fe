//! MCP servers in a config: the `mcpServers` object editors and desktop apps already keep
//! (Claude-Desktop-compatible), in an agent config or in a file of its own
//! (`toolsmith run --mcp-config FILE`), and the trait through which `mcp:` tool entries reach
//! the servers the caller connected ([`McpTools`]; the `toolsmith-mcp` crate implements it).
//!
//! ```json
//! {"mcpServers": {
//!   "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
//!          "env": {"DEBUG": "0"}, "cwd": "/srv", "sandbox": {"root": ".", "network": false}},
//!   "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer …"},
//!              "readOnly": ["search"], "deny": ["delete_everything"], "timeoutMs": 30000}
//! }}
//! ```
//!
//! An entry with `command` is a stdio server; one with `url` a streamable HTTP server (`type`,
//! when present, must agree: `stdio`, `http` or `streamable-http`; the legacy `sse` transport
//! is refused with a clear error). toolsmith's own keys, all optional: `allow` / `deny` (lists
//! of the server's tool names), `readOnly` (`true` or a list: tools trusted to have no side
//! effects — the server's annotations are never trusted), `needsApproval` (`true`, `false` or
//! a list), `timeoutMs` (per call, default 60 000, at most 3 600 000), `startupTimeoutMs`
//! (starting the server, the handshake and the first listing, default 30 000), `prefix` (what tool
//! names start with, default the server's name; `""` for none), `sandbox` (stdio only: start the
//! server inside toolsmith's sandbox, confined to `root`, with `network` off unless `true`,
//! reading only the system's paths, its root and the paths of its `read` list) and
//! `disabled`. Server names are 1 to 32 of `A-Z a-z 0-9 _ -`.
//!
//! Secrets: header and environment values are never printed — `Debug` shows their names only.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use toolsmith_core::SharedTool;

use crate::{AgentConfig, ConfigError, Defined, error};

/// How long an MCP tool call may take by default.
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(60);

/// How long starting a server, its handshake and the first listing of its tools may take by
/// default.
pub const DEFAULT_MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest per-call timeout an entry may set (one hour, as the sandbox's).
pub const MAX_MCP_TIMEOUT: Duration = Duration::from_secs(3600);

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

/// One server of an `mcpServers` object.
#[derive(Clone, PartialEq)]
pub struct McpServerEntry {
    /// The server's name (the object's key).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Only these tools of the server (its own names), when given.
    pub allow: Option<Vec<String>>,
    /// Never these tools.
    pub deny: Vec<String>,
    /// The tools trusted to have no side effects (every other tool is side-effecting).
    pub read_only: ToolNames,
    /// The tools that need approval on every call (the agent's policy decides for the others).
    pub needs_approval: ToolNames,
    /// Per-call time limit.
    pub timeout: Duration,
    /// How long starting the server, its handshake and its first listing may take.
    pub startup_timeout: Duration,
    /// What the tools' names start with: `<prefix>__<tool>` (the server's name by default;
    /// empty: the tool's own name).
    pub prefix: String,
}

/// A set of a server's tools named by config: none, some, or every one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolNames {
    /// None of them.
    #[default]
    None,
    /// These (the server's own names).
    Some(Vec<String>),
    /// Every tool of the server.
    All,
}

impl ToolNames {
    /// Whether `tool` (the server's own name) is in the set.
    ///
    /// ```
    /// use toolsmith_config::ToolNames;
    ///
    /// assert!(ToolNames::All.contains("x"));
    /// assert!(ToolNames::Some(vec!["x".into()]).contains("x"));
    /// assert!(!ToolNames::None.contains("x"));
    /// ```
    pub fn contains(&self, tool: &str) -> bool {
        match self {
            ToolNames::None => false,
            ToolNames::Some(names) => names.iter().any(|n| n == tool),
            ToolNames::All => true,
        }
    }
}

/// How to reach an MCP server.
#[derive(Clone, PartialEq)]
pub enum McpTransport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        /// The program (looked up in `PATH` when it has no `/`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of a minimal inherited environment.
        env: Vec<(String, String)>,
        /// Its working directory (relative paths: to the config file's folder).
        cwd: Option<PathBuf>,
        /// Start it inside toolsmith's sandbox.
        sandbox: Option<McpSandbox>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (`Authorization`, say).
        headers: Vec<(String, String)>,
    },
}

/// `sandbox` on a stdio server's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSandbox {
    /// The directory the server may write in (and its working directory by default).
    pub root: PathBuf,
    /// Whether it may reach the network (default `false`).
    pub network: bool,
    /// What it may read besides the system's paths and its root: where its program and
    /// packages are (a `node_modules`, a virtual environment), for example.
    pub read: Vec<PathBuf>,
}

impl fmt::Debug for McpServerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerEntry")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("allow", &self.allow)
            .field("deny", &self.deny)
            .field("read_only", &self.read_only)
            .field("needs_approval", &self.needs_approval)
            .field("timeout", &self.timeout)
            .field("startup_timeout", &self.startup_timeout)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl fmt::Debug for McpTransport {
    /// Names of variables and headers only: their values may be secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |pairs: &[(String, String)]| -> Vec<String> {
            pairs.iter().map(|(k, _)| k.clone()).collect()
        };
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                sandbox,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .field("cwd", cwd)
                .field("sandbox", sandbox)
                .finish(),
            McpTransport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &names(headers))
                .finish(),
        }
    }
}

impl McpServerEntry {
    /// Whether the config lets the model see `tool` (the server's own name): in `allow` when
    /// there is one, and not in `deny`.
    ///
    /// ```
    /// use toolsmith_config::McpServers;
    ///
    /// let servers = McpServers::from_json(
    ///     r#"{"mcpServers": {"fs": {"command": "fs-server", "deny": ["delete"]}}}"#,
    /// ).unwrap();
    /// let fs = &servers.entries()[0];
    /// assert!(fs.offers("read") && !fs.offers("delete"));
    /// ```
    pub fn offers(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|a| a == tool))
            && !self.deny.iter().any(|d| d == tool)
    }
}

/// The servers of an `mcpServers` object, in file order (disabled ones left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpServers(Vec<McpServerEntry>);

impl McpServers {
    /// Parses a file of its own, `{"mcpServers": {…}}` (other top-level keys, which desktop
    /// apps keep in the same file, are ignored).
    ///
    /// # Errors
    ///
    /// Invalid JSON, no `mcpServers` object, or an entry breaking the rules of the
    /// [module docs](self), named by its path: `mcpServers.fs.args must be an array of strings`.
    ///
    /// ```
    /// use toolsmith_config::McpServers;
    ///
    /// let err = McpServers::from_json(r#"{"mcpServers": {"old": {"url": "http://h/sse", "type": "sse"}}}"#)
    ///     .unwrap_err();
    /// assert!(err.to_string().starts_with("mcpServers.old.type: the legacy SSE transport"));
    /// ```
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Self::from_file_text(text, None)
    }

    /// Reads and parses a file (relative `cwd` and sandbox roots are relative to its folder).
    ///
    /// # Errors
    ///
    /// An unreadable file, or as [`from_json`](Self::from_json).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| error(format!("cannot read {}: {e}", path.display())))?;
        Self::from_file_text(&text, Some(path.parent().unwrap_or(Path::new("."))))
    }

    fn from_file_text(text: &str, base: Option<&Path>) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| error(format!("the MCP config is not valid JSON: {e}")))?;
        match value {
            Value::Object(mut root) => match root.remove("mcpServers") {
                Some(servers) => Self::parse(servers, "mcpServers", base),
                None => Err(error("the MCP config has no \"mcpServers\" object")),
            },
            _ => Err(error("the MCP config must be an object")),
        }
    }

    /// Parses an `mcpServers` value found at `at` (`config.mcpServers`), paths relative to
    /// `base`.
    pub(crate) fn parse(value: Value, at: &str, base: Option<&Path>) -> Result<Self, ConfigError> {
        let Value::Object(servers) = value else {
            return Err(error(format!("{at} must be an object")));
        };
        let mut entries = Vec::new();
        for (name, entry) in servers {
            if let Some(entry) = parse_entry(&name, entry, &format!("{at}.{name}"), base)? {
                entries.push(entry);
            }
        }
        Ok(McpServers(entries))
    }

    /// The servers, in file order.
    pub fn entries(&self) -> &[McpServerEntry] {
        &self.0
    }

    /// The server named `name`.
    pub fn get(&self, name: &str) -> Option<&McpServerEntry> {
        self.0.iter().find(|e| e.name == name)
    }

    /// Whether there is no server.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These servers and `entry` (built in code rather than read), as [`merge`](Self::merge)
    /// adds it.
    ///
    /// # Errors
    ///
    /// As [`merge`](Self::merge).
    pub fn with(mut self, entry: McpServerEntry) -> Result<Self, ConfigError> {
        self.merge(&McpServers(vec![entry]))?;
        Ok(self)
    }

    /// Adds the servers of `other` not already here; a server of the same name must be the
    /// same entry.
    ///
    /// # Errors
    ///
    /// `the MCP server "fs" is declared twice, differently`.
    pub fn merge(&mut self, other: &McpServers) -> Result<(), ConfigError> {
        for entry in &other.0 {
            match self.get(&entry.name) {
                Some(same) if same == entry => {}
                Some(_) => {
                    return Err(error(format!(
                        "the MCP server \"{}\" is declared twice, differently",
                        entry.name
                    )));
                }
                None => self.0.push(entry.clone()),
            }
        }
        Ok(())
    }
}

/// Which of a server's tools a `tools` entry of an agent config picks: `mcp:<server>` (all
/// that the server's entry offers) or `mcp:<server>/<tool>` (one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSelection {
    /// The server's name.
    pub server: String,
    /// The tools picked by name (the server's own names); `None`: every tool offered.
    pub only: Option<Vec<String>>,
    /// The tools whose entries say `needsApproval: true` (all of them for `mcp:<server>`):
    /// they ask on every call, as do those the server's entry names.
    pub needs_approval: ToolNames,
}

/// The MCP servers a caller connected, as tools: what `mcp:` entries of a config's `tools`
/// resolve against (the `toolsmith-mcp` crate's client implements it).
pub trait McpTools: Send + Sync {
    /// The tool that stands, in the toolset of each run, for the tools of `selection.server`
    /// that the selection picks; `None` when no server of that name is connected.
    fn tools(&self, selection: &McpSelection) -> Option<SharedTool>;
}

/// Parses `mcp:<server>` or `mcp:<server>/<tool>`; `None` when `name` has no `mcp:` prefix.
pub(crate) fn reference(name: &str) -> Option<(&str, Option<&str>)> {
    let rest = name.strip_prefix("mcp:")?;
    Some(match rest.split_once('/') {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    })
}

/// Whether `name` is a valid server name.
fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Parses one entry; `None` for a disabled one.
fn parse_entry(
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

/// Checks an `mcp:` entry's name (`config.tools.<name>`).
pub(crate) fn check_reference(
    name: &str,
    server: &str,
    tool: Option<&str>,
) -> Result<(), ConfigError> {
    if !valid_server_name(server) || tool.is_some_and(str::is_empty) {
        return Err(error(format!(
            "config.tools.{name}: an MCP entry is \"mcp:<server>\" or \"mcp:<server>/<tool>\""
        )));
    }
    Ok(())
}

/// What a config picks of each MCP server, in order of first mention: every declared server,
/// whole, when it has no `tools` key; else what its `mcp:` entries pick.
pub(crate) fn selections(config: &AgentConfig) -> Vec<McpSelection> {
    let Some(entries) = &config.tools else {
        return config
            .mcp_servers
            .entries()
            .iter()
            .map(|entry| McpSelection {
                server: entry.name.clone(),
                only: None,
                needs_approval: ToolNames::None,
            })
            .collect();
    };
    let mut picked: Vec<McpSelection> = Vec::new();
    for entry in entries {
        let Some(Defined::Mcp { server, tool }) = &entry.defined else {
            continue;
        };
        let at = match picked.iter().position(|s| &s.server == server) {
            Some(at) => at,
            None => {
                picked.push(McpSelection {
                    server: server.clone(),
                    only: Some(Vec::new()),
                    needs_approval: ToolNames::None,
                });
                picked.len() - 1
            }
        };
        let selection = &mut picked[at];
        let asks = entry.needs_approval == Some(true);
        match tool {
            None => {
                selection.only = None;
                if asks {
                    selection.needs_approval = ToolNames::All;
                }
            }
            Some(tool) => {
                if let Some(only) = &mut selection.only {
                    only.push(tool.clone());
                }
                if asks && let ToolNames::None = selection.needs_approval {
                    selection.needs_approval = ToolNames::Some(vec![tool.clone()]);
                } else if asks && let ToolNames::Some(names) = &mut selection.needs_approval {
                    names.push(tool.clone());
                }
            }
        }
    }
    picked
}

/// The tools standing for the MCP servers a config uses, one per server (see
/// [`AgentConfig::toolset_with`]).
pub(crate) fn config_tools(
    config: &AgentConfig,
    mcp: Option<&dyn McpTools>,
) -> Result<Vec<SharedTool>, ConfigError> {
    let selections = selections(config);
    if selections.is_empty() {
        return Ok(Vec::new());
    }
    let Some(mcp) = mcp else {
        return Err(error(
            "config.mcpServers: MCP servers are connected by `toolsmith run`; this caller connects none",
        ));
    };
    selections
        .iter()
        .map(|selection| {
            mcp.tools(selection).ok_or_else(|| {
                error(format!(
                    "config.tools.mcp:{0}: no MCP server \"{0}\" is connected (declare it in config.mcpServers or an --mcp-config file)",
                    selection.server
                ))
            })
        })
        .collect()
}

impl AgentConfig {
    /// The MCP servers this config and its sub-agents' and prompts' configs use, at any depth,
    /// for the caller to connect: declared servers that the config's `mcp:` entries name
    /// (every declared one when it has no `tools` key).
    ///
    /// # Errors
    ///
    /// Two configs declaring servers of the same name differently.
    ///
    /// ```
    /// use toolsmith_config::AgentConfig;
    ///
    /// let config = AgentConfig::from_json(r#"{
    ///     "tools": {"read": {}, "mcp:fs/read_file": {}},
    ///     "mcpServers": {"fs": {"command": "fs-server"}, "unused": {"url": "http://h/mcp"}}
    /// }"#).unwrap();
    /// let servers = config.mcp_servers_used().unwrap();
    /// assert_eq!(servers.entries().len(), 1);
    /// assert_eq!(servers.entries()[0].name, "fs");
    /// ```
    pub fn mcp_servers_used(&self) -> Result<McpServers, ConfigError> {
        let mut used = McpServers::default();
        let mine: Vec<String> = selections(self).into_iter().map(|s| s.server).collect();
        let own = McpServers(
            self.mcp_servers
                .entries()
                .iter()
                .filter(|entry| mine.contains(&entry.name))
                .cloned()
                .collect(),
        );
        used.merge(&own)?;
        let nested = self.subagents.iter().map(|s| &s.agent);
        for agent in nested.chain(self.prompts.iter().map(|p| &p.agent)) {
            used.merge(&agent.mcp_servers_used()?)?;
        }
        Ok(used)
    }
}
