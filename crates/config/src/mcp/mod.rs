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

use serde_json::Value;
use toolsmith_core::SharedTool;

use crate::{AgentConfig, ConfigError, Defined, error};

mod entry;

use entry::{parse_entry, valid_server_name};

/// How long an MCP tool call may take by default.
pub const DEFAULT_MCP_TIMEOUT: Duration = Duration::from_secs(60);

/// How long starting a server, its handshake and the first listing of its tools may take by
/// default.
pub const DEFAULT_MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest per-call timeout an entry may set (one hour, as the sandbox's).
pub const MAX_MCP_TIMEOUT: Duration = Duration::from_secs(3600);

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
