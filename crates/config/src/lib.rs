//! Agent configs: the JSON file `toolsmith run --config` reads (the agent harness's `tools` shape).
//!
//! ```json
//! {
//!   "model": "google:gemini-2.5-flash",
//!   "instructions": "Answer with sources.",
//!   "maxSteps": 8,
//!   "approval": {"policy": ["write"], "timeout": 60000, "timeoutAction": "deny"},
//!   "tools": {
//!     "read": {},
//!     "bash": {"needsApproval": true},
//!     "googleSearch": {"timeRangeFilter": {"startTime": "2026-01-01T00:00:00Z"}}
//!   }
//! }
//! ```
//!
//! - `model`: `"PROVIDER:MODEL"` or `{"provider": …, "name": …, "baseUrl"?: …, "stream"?: …}`
//!   (`"stream": false`: one JSON body per model call instead of a stream).
//! - `execution`: `"sequential"` (the default: one call at a time, in order), `"parallel"` (at
//!   most 5 at once) or `{"mode": "parallel", "max": N}`.
//! - `parallelToolCalls` (the Standard Agents spec's): whether the model may call several
//!   tools per step; by default `false` with sequential execution, the provider's default with
//!   parallel execution.
//! - `clientTools`: `[{"name", "description"?, "inputSchema"?}]`, tools the caller answers: a
//!   call pauses the run until the caller appends its result (`docs/approvals.md`).
//! - `approval` (as in RadarOS): `policy` `"none"` (default) | `"all"` | a list of the agent's tool
//!   names (another name is rejected, naming it, when the agent is built);
//!   `timeout` in milliseconds (default 300 000); `timeoutAction` `"deny"` (default) |
//!   `"approve"` | `"error"` (RadarOS's `"throw"` is accepted for it). A tool's
//!   `needsApproval: true` makes it ask whatever the policy; `needsApproval: false` leaves it
//!   to the policy, turning off an approval the tool came with (`toolsmith run` asks about
//!   `write`, `edit` and `bash` by default).
//! - `tools`: an object; each entry an object. A tool is enabled iff its entry exists and
//!   `enabled` is not `false` (`{}` enables it). `enabled`, `needsApproval` and `async` are
//!   optional booleans, `execution` is `same-invocation` | `external-dispatch`; they are removed
//!   before the rest of the entry goes to the tool's factory. Without a `tools` key: the agent
//!   harness's workspace tools ([`WORKSPACE_TOOLS`]: `read`, `write`, `edit`, `glob`, `grep`,
//!   `bash`), not every built-in.
//! - `workspace` (the agent harness's, top-level configs only): `{"permissionMode"?: "ask" |
//!   "bypass", "readOnly"?: false}`. `ask` (the default): `write`, `edit`, `bash` ask on every
//!   call; `bypass`: nothing asks because of the workspace (a tool's own `needsApproval: true`
//!   and the `approval` policy still do); `readOnly`: only `read` and `glob` are offered, a
//!   `tools` entry naming another built-in is refused
//!   (`config.tools.write is not available in a read-only workspace`). See [`WorkspaceConfig`].
//! - `sandbox` and `tools.<bash|run_code>.sandbox` (RadarOS's): `false` | `true` |
//!   `{"enabled"?, "timeoutMs"?: 30000, "maxOutputBytes"?, "maxMemoryMB"?: 256, "network"?:
//!   "off" | "loopback" | "full", "env"?}`, resolved as RadarOS does (a tool-level object
//!   replaces the agent-level one); no settings means the workspace's own policy, never an
//!   unconfined tool. The caller builds the tools ([`BuildContext::sandboxed`]); bounds use
//!   Smithers' texts (`config.tools.bash.sandbox: timeoutMs exceeds 3600000.`). See
//!   [`SandboxSettings`].
//! - Tool names: the built-ins (`read`, `write`, `edit`, `grep`, `glob`, `bash`, `run_code`,
//!   `calculator`, which take no options) and the provider-executed tools `anthropicWebSearch`
//!   (needs an `anthropic` model), `openaiWebSearch` (needs `openai-responses`) and
//!   `googleSearch` (needs `google`), whose options are sent to the provider verbatim. The
//!   Standard Agents spec's reserved callables `provider:<id>` (`provider:googleSearch`…) are
//!   aliases of those, and `mcp:<server>` / `mcp:<server>/<tool>` pick MCP tools.
//!
//! - `subagents`: `[{"name", "description", "config": PATH | {…}, "needsApproval"?, …}]`,
//!   agents exposed as tools, with the Standard Agents spec's `SubagentToolConfig` keys
//!   (`blocking`, `initUserMessageProperty`, `initAttachmentsProperty`, `initAgentNameProperty`,
//!   `inputSchema`, `immediate`, `optional`, `resumable`). `config` is a file path (relative to
//!   the file naming it) or an inline config; without a `model` the sub-agent uses its
//!   parent's, without an `approval` block its parent's.
//! - `prompts`: `[{"name", "description", "instructions", "model"?, "tools"?, "maxSteps"?,
//!   "needsApproval"?, …}]`, prompts exposed as tools, with the Standard Agents spec's
//!   `SubpromptConfig` keys (`includeTextResponse`, `includeToolCalls`, `includeErrors`,
//!   `initUserMessageProperty`, `initAttachmentsProperty`, `inputSchema`).
//! - `resultLimit` (RadarOS's `toolResultLimit`): `{"maxChars"?: 20000, "strategy"?:
//!   "truncate" | "summarize"}`, the limit on what the model sees of a result, for tools
//!   without their own (`tools.<name>.resultLimit`); `summarizeModel`: `"PROVIDER:MODEL"`, the
//!   model that writes summaries. A tool entry's `cache: {"ttl": MS}` serves its successful
//!   results again (refused on a side effect that is not idempotent). `maxToolOutputBytes`:
//!   results longer are kept as artifacts, read back with `getArtifact` / `listArtifacts`.
//!   `router`: `{"model", "maxTools"?: 8, "minTools"?: 0, "temperature"?: 0}`, a cheap model
//!   that picks the tools each run declares.
//! - `variables`: `[{"name", "type"?: "text" | "secret", "required"?, "scoped"?,
//!   "description"?, "value"?}]`, declared at the agent level; a secret's value is refused here
//!   (`toolsmith run` takes values from `--var NAME=VALUE`, else the environment).
//!
//! Errors use the agent harness's texts, for example `config.tools.<name> is not a supported tool`
//! and `config.tools.googleSearch requires config.model.provider to be google`; an unknown key
//! anywhere is rejected with its path (`config.subagents[0].blockign is not a supported setting`).
//! Sub-agents and prompts: `docs/subagents.md`. The user's reference of the file, every key with
//! its default and errors: `docs/config.md`.

mod blocks;
mod build;
mod composite;
mod economy;
mod entries;
mod http_call;
mod mcp;
mod redact;
mod reserved;
mod sandbox;
mod tavily;
mod webhook;
mod workspace;

pub use economy::RouterConfig;
pub use redact::{Credentials, REDACTED, redacted};
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};
use toolsmith_agent::{ApprovalPolicy, ExecutionPolicy, TimeoutAction};

use blocks::{approval_block, client_tools, execution, model_object};
use toolsmith_core::{Approval, AsyncMode, ClientTool, ToolSpec, Toolset};

pub use build::{
    BuildContext, DEFAULT_MAX_STEPS, ParentAgent, ResolveModel, SandboxedBuiltin, WrapTools,
};
pub use composite::{MAX_NESTING, PromptEntry, SubagentEntry, VariableEntry};
pub use mcp::{
    DEFAULT_MCP_STARTUP_TIMEOUT, DEFAULT_MCP_TIMEOUT, MAX_MCP_TIMEOUT, McpSandbox, McpSelection,
    McpServerEntry, McpServers, McpTools, McpTransport, ToolNames,
};
pub use webhook::{DEFAULT_WEBHOOK_TIMEOUT, WebhookPolicy, WebhookTool, is_public};

pub use sandbox::{
    DEFAULT_SANDBOX_MEMORY_MB, DEFAULT_SANDBOX_TIMEOUT, MAX_SANDBOX_MEMORY_MB,
    MIN_SANDBOX_MEMORY_MB, SANDBOXED_TOOLS, SandboxNetwork, SandboxSetting, SandboxSettings,
    resolve as resolve_sandbox,
};
pub use tavily::{TAVILY_API_KEY_VAR, TAVILY_BASE_URL_VAR, TAVILY_TOOLS, TavilyTool};
pub use workspace::{
    ASKING_TOOLS, PermissionMode, READ_ONLY_TOOLS, WORKSPACE_TOOLS, WorkspaceConfig,
};

use entries::{provider_tool, tool_entries};
use tavily::TavilyEntry;
use webhook::WebhookEntry;

/// A config error, with the agent harness's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn error(message: impl Into<String>) -> ConfigError {
    ConfigError(message.into())
}

/// The model a config names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    /// `anthropic`, `openai`, `openai-responses`, `google`, `openai-compatible`, …
    pub provider: String,
    /// The provider's model name.
    pub name: String,
    /// A base URL overriding the provider's.
    pub base_url: Option<String>,
    /// The object form's `"stream"`: `Some(false)` asks the provider for one JSON body instead
    /// of a stream (for OpenAI-compatible servers that cannot stream tool calls); `None` (the
    /// key absent, and always for `PROVIDER:MODEL`) keeps the provider's default.
    pub stream: Option<bool>,
}

impl ModelConfig {
    /// Parses `PROVIDER:MODEL`.
    ///
    /// # Errors
    ///
    /// When there is no `:` or either half is empty.
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        match spec.split_once(':') {
            Some((provider, name)) if !provider.is_empty() && !name.is_empty() => Ok(ModelConfig {
                provider: provider.to_string(),
                name: name.to_string(),
                base_url: None,
                stream: None,
            }),
            _ => Err(error(format!(
                "config.model must have the form PROVIDER:MODEL, got \"{spec}\""
            ))),
        }
    }

    /// `PROVIDER:MODEL`.
    pub fn spec(&self) -> String {
        format!("{}:{}", self.provider, self.name)
    }
}

/// One enabled tool's entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolConfig {
    /// The config name (`googleSearch`, `read`…).
    pub name: String,
    /// `needsApproval`: `Some(true)` asks on every call; `Some(false)` leaves the tool to the
    /// agent's approval policy, whatever approval the tool came with (`toolsmith run` gives
    /// `write`, `edit` and `bash` one by default); `None` keeps the tool's own.
    pub needs_approval: Option<bool>,
    /// Tool-level variable values (`env`).
    pub env: Vec<(String, String)>,
    /// `async: true`, with `execution` (default `same-invocation`): the tool runs outside
    /// the model's turn, which only the harness service can do (`toolsmith run` refuses it).
    pub async_mode: Option<AsyncMode>,
    /// The options passed to the tool's factory.
    pub options: Map<String, Value>,
    /// The checked entry of a tool the config itself defines (a webhook, a Tavily tool).
    pub(crate) defined: Option<Defined>,
    /// Variables the tool declares it needs (`variables`, as the agent-level key): resolved
    /// before it runs, `scoped` and `required` ones asked of an operator for a sub-agent.
    pub variables: Vec<toolsmith_core::VariableDecl>,
    /// `cache: {"ttl": MS}`: how long its successful results are served again.
    pub cache_ttl: Option<Duration>,
    /// `resultLimit: {"maxChars"?, "strategy"?}`: the limit on what the model sees of a result.
    pub result_limit: Option<toolsmith_core::ResultLimit>,
    /// `sandbox` (`bash`, `run_code`): its own sandbox settings, as written.
    pub sandbox: Option<SandboxSetting>,
}

/// A tool a config entry defines with its options, rather than picks from the built-ins or the
/// provider's tools.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Defined {
    /// `"type": "webhook"`.
    Webhook(WebhookEntry),
    /// `tavilySearch`, `tavilyExtract`.
    Tavily(TavilyEntry),
    /// `mcp:<server>` (`tool: None`) or `mcp:<server>/<tool>`.
    Mcp {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: Option<String>,
    },
}

/// A parsed agent config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentConfig {
    /// The model, if the config names one.
    pub model: Option<ModelConfig>,
    /// System instructions.
    pub instructions: Option<String>,
    /// The most steps a run takes.
    pub max_steps: Option<u32>,
    /// How a step's tool calls run, when the config says.
    pub execution: Option<ExecutionPolicy>,
    /// Whether the model may call several tools per step (`parallelToolCalls`), when the config
    /// says; unset, the agent's default (off when the calls run one at a time).
    pub parallel_tool_calls: Option<bool>,
    /// The enabled tools, in config order; `None` when the config has no `tools` key.
    pub tools: Option<Vec<ToolConfig>>,
    /// The approval settings, when the config has an `approval` key.
    pub approval: Option<ApprovalConfig>,
    /// Tools the caller answers (no executor here), in config order.
    pub client_tools: Vec<ClientToolConfig>,
    /// Agents exposed as tools, in config order.
    pub subagents: Vec<SubagentEntry>,
    /// Prompts exposed as tools, in config order.
    pub prompts: Vec<PromptEntry>,
    /// Declared variables, in config order.
    pub variables: Vec<VariableEntry>,
    /// The credentials written in the config (its headers', keys', `env`s' values: what
    /// [`redacted`] hides), masked in every run of it as secret variables' values are.
    pub credentials: Credentials,
    /// The MCP servers the config declares (`mcpServers`), in config order.
    pub mcp_servers: McpServers,
    /// `resultLimit`: the limit on what the model sees of a result, for tools without one.
    pub result_limit: Option<toolsmith_core::ResultLimit>,
    /// `summarizeModel`: the model that summarises results under a `summarize` limit.
    pub summarize_model: Option<ModelConfig>,
    /// `maxToolOutputBytes`: results longer than this are kept as artifacts.
    pub max_tool_output_bytes: Option<usize>,
    /// `router`: a cheap model picks the tools each run declares.
    pub router: Option<RouterConfig>,
    /// `workspace`: the permission mode and read-only flag (top-level configs only).
    pub workspace: Option<WorkspaceConfig>,
    /// `sandbox`: the agent-level sandbox settings of `bash` and `run_code`, as written.
    pub sandbox: Option<SandboxSetting>,
}

/// One `clientTools` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientToolConfig {
    /// The tool's name.
    pub name: String,
    /// What the model is told it does.
    pub description: Option<String>,
    /// Its input's JSON Schema (default `{"type": "object"}`).
    pub input_schema: Value,
}

impl ClientToolConfig {
    /// The tool.
    pub fn tool(&self) -> ClientTool {
        let mut spec = ToolSpec::new(self.name.as_str(), self.input_schema.clone());
        if let Some(description) = &self.description {
            spec = spec.with_description(description.clone());
        }
        ClientTool::new(spec)
    }
}

/// The `approval` block.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalConfig {
    /// Which tools need approval agent-wide.
    pub policy: ApprovalPolicy,
    /// How long an approval may wait.
    pub timeout: Duration,
    /// What happens when it waited too long.
    pub timeout_action: TimeoutAction,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            policy: ApprovalPolicy::None,
            timeout: Duration::from_millis(300_000),
            timeout_action: TimeoutAction::Deny,
        }
    }
}

/// The built-in tools a config may enable.
pub const BUILTIN_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "grep",
    "glob",
    "bash",
    "run_code",
    "calculator",
];

/// The provider-executed tools a config may enable, and the provider each needs.
pub const PROVIDER_TOOLS: &[(&str, &str)] = &[
    ("anthropicWebSearch", "anthropic"),
    ("openaiWebSearch", "openai-responses"),
    ("googleSearch", "google"),
];

impl AgentConfig {
    /// Parses and checks a config.
    ///
    /// # Errors
    ///
    /// Invalid JSON, a field of the wrong type, or a tool entry breaking the agent harness's rules.
    ///
    /// ```
    /// use toolsmith_config::AgentConfig;
    ///
    /// let err = AgentConfig::from_json(r#"{"tools": {"bash": {"enabled": "yes"}}}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "config.tools.bash.enabled must be a boolean");
    /// let err = AgentConfig::from_json(r#"{"tools": {"tavily": {}}}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "config.tools.tavily is not a supported tool");
    /// ```
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| error(format!("config is not valid JSON: {e}")))?;
        Self::from_value(value)
    }

    /// [`from_json`](Self::from_json) for a parsed value. A config given as a value (or as
    /// text) has no folder: its sub-agents' and prompts' configs must be inline, never a file's
    /// path — a config stored in the service comes from an account, and must not read the
    /// server's files.
    ///
    /// # Errors
    ///
    /// As [`from_json`](Self::from_json); a sub-agent's or prompt's config given as a path.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolsmith_config::AgentConfig;
    ///
    /// let config = json!({"subagents": [
    ///     {"name": "reader", "description": "Reads.", "config": "/etc/reader.json"}
    /// ]});
    /// let err = AgentConfig::from_value(config).unwrap_err();
    /// assert!(err.to_string().starts_with("config.subagents[0].config: a config file's path"));
    /// ```
    pub fn from_value(value: Value) -> Result<Self, ConfigError> {
        Self::parse(value, None, 0)
    }

    /// Reads and parses a config file; the paths of sub-agent configs in it are relative to
    /// its folder.
    ///
    /// # Errors
    ///
    /// An unreadable file, or as [`from_json`](Self::from_json).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        Self::from_file_at(path, 0)
    }

    fn from_file_at(path: &Path, depth: usize) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| error(format!("cannot read {}: {e}", path.display())))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| error(format!("config is not valid JSON: {e}")))?;
        Self::parse(value, Some(path.parent().unwrap_or(Path::new("."))), depth)
    }

    /// Parses `value`; `base` is the folder of the file it came from (sub-agent configs named
    /// by path are relative to it), `None` for a value (which may name no file).
    fn parse(value: Value, base: Option<&Path>, depth: usize) -> Result<Self, ConfigError> {
        if depth > MAX_NESTING {
            return Err(error(format!(
                "sub-agent configs nest more than {MAX_NESTING} deep (does a config name itself?)"
            )));
        }
        let credentials = Credentials(redact::credentials(&value));
        let Value::Object(mut root) = value else {
            return Err(error("config must be an object"));
        };
        let mut config = AgentConfig {
            credentials,
            ..AgentConfig::default()
        };
        match root.remove("model") {
            None | Some(Value::Null) => {}
            Some(Value::String(spec)) => config.model = Some(ModelConfig::parse(&spec)?),
            Some(Value::Object(model)) => config.model = Some(model_object(&model)?),
            Some(_) => {
                return Err(error(
                    "config.model must be a string PROVIDER:MODEL or an object {provider, name}",
                ));
            }
        }
        match root.remove("instructions") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => config.instructions = Some(text),
            Some(_) => return Err(error("config.instructions must be a string")),
        }
        match root.remove("maxSteps") {
            None | Some(Value::Null) => {}
            Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n > 0 => config.max_steps = Some(n),
                _ => return Err(error("config.maxSteps must be a positive integer")),
            },
        }
        match root.remove("execution") {
            None | Some(Value::Null) => {}
            Some(value) => config.execution = Some(execution(value)?),
        }
        match root.remove("parallelToolCalls") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(allowed)) => config.parallel_tool_calls = Some(allowed),
            Some(_) => return Err(error("config.parallelToolCalls must be a boolean")),
        }
        config.result_limit = economy::result_limit(root.remove("resultLimit"), "config")?;
        config.router = economy::router(root.remove("router"))?;
        match root.remove("maxToolOutputBytes") {
            None | Some(Value::Null) => {}
            Some(value) => match value.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) if n > 0 => config.max_tool_output_bytes = Some(n),
                _ => {
                    return Err(error(
                        "config.maxToolOutputBytes must be a positive integer",
                    ));
                }
            },
        }
        match root.remove("summarizeModel") {
            None | Some(Value::Null) => {}
            Some(spec) => {
                config.summarize_model = Some(economy::model(&spec, "config.summarizeModel")?);
            }
        }
        match root.remove("tools") {
            None | Some(Value::Null) => {}
            Some(Value::Object(tools)) => config.tools = Some(tool_entries(tools)?),
            Some(_) => return Err(error("config.tools must be an object")),
        }
        match root.remove("workspace") {
            None | Some(Value::Null) => {}
            Some(_) if depth > 0 => {
                return Err(error(
                    "config.workspace: only the top-level config sets the workspace (sub-agents and prompts share their parent's)",
                ));
            }
            Some(block) => config.workspace = Some(WorkspaceConfig::parse(block)?),
        }
        if let Some(value) = root.remove("sandbox").filter(|v| !v.is_null()) {
            config.sandbox = Some(sandbox::parse(value, "config.sandbox", None)?);
        }
        if let Some(workspace) = config.workspace {
            let refused = config.tools.iter().flatten().find(|t| {
                t.defined.is_none()
                    && BUILTIN_TOOLS.contains(&t.name.as_str())
                    && !workspace.offers(&t.name)
            });
            if let Some(tool) = refused {
                return Err(error(format!(
                    "config.tools.{} is not available in a read-only workspace",
                    tool.name
                )));
            }
        }
        match root.remove("clientTools") {
            None | Some(Value::Null) => {}
            Some(Value::Array(entries)) => config.client_tools = client_tools(entries)?,
            Some(_) => return Err(error("config.clientTools must be an array")),
        }
        match root.remove("approval") {
            None | Some(Value::Null) => {}
            Some(Value::Object(block)) => config.approval = Some(approval_block(block)?),
            Some(_) => return Err(error("config.approval must be an object")),
        }
        let list = |root: &mut Map<String, Value>, key: &str| match root.remove(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(entries)) => Ok(entries),
            Some(_) => Err(error(format!("config.{key} must be an array"))),
        };
        config.subagents = composite::subagents(list(&mut root, "subagents")?, base, depth)?;
        config.prompts = composite::prompts(list(&mut root, "prompts")?, base, depth)?;
        config.variables = composite::variables(list(&mut root, "variables")?, "config.variables")?;
        if let Some(servers) = root.remove("mcpServers") {
            config.mcp_servers = McpServers::parse(servers, "config.mcpServers", base)?;
        }
        if let Some(key) = root.keys().next() {
            return Err(error(format!("config.{key} is not a supported setting")));
        }
        Ok(config)
    }

    /// The path of the first tool with `async: true` in this config or a sub-agent's or
    /// prompt's config in it (`config.tools.<name>`, `config.subagents[0].tools.<name>`…), for
    /// callers that run every tool inline.
    ///
    /// ```
    /// use toolsmith_config::AgentConfig;
    ///
    /// let config = AgentConfig::from_json(r#"{"tools": {"read": {"async": true}}}"#).unwrap();
    /// assert_eq!(config.async_tool().as_deref(), Some("config.tools.read"));
    /// ```
    pub fn async_tool(&self) -> Option<String> {
        let own = self.tools.iter().flatten().find(|t| t.async_mode.is_some());
        if let Some(tool) = own {
            return Some(format!("config.tools.{}", tool.name));
        }
        let nested = |kind: &str, i: usize, agent: &AgentConfig| {
            agent
                .async_tool()
                .map(|path| path.replacen("config.", &format!("config.{kind}[{i}]."), 1))
        };
        self.subagents
            .iter()
            .enumerate()
            .find_map(|(i, s)| nested("subagents", i, &s.agent))
            .or_else(|| {
                self.prompts
                    .iter()
                    .enumerate()
                    .find_map(|(i, p)| nested("prompts", i, &p.agent))
            })
    }

    /// Whether `name` is declared a secret variable (`"type": "secret"`, the default type)
    /// by this config or by a sub-agent's or prompt's config in it, at any depth.
    ///
    /// ```
    /// use toolsmith_config::AgentConfig;
    ///
    /// let config = AgentConfig::from_json(
    ///     r#"{"variables": [{"name": "TOKEN"}, {"name": "REGION", "type": "text"}],
    ///         "prompts": [{"name": "p", "description": "d", "instructions": "i",
    ///                      "variables": [{"name": "DEEP", "type": "secret"}]}]}"#,
    /// ).unwrap();
    /// assert!(config.declares_secret("TOKEN") && config.declares_secret("DEEP"));
    /// assert!(!config.declares_secret("REGION") && !config.declares_secret("OTHER"));
    /// ```
    pub fn declares_secret(&self, name: &str) -> bool {
        self.variables
            .iter()
            .any(|v| v.decl.name == name && v.decl.kind == toolsmith_core::VariableKind::Secret)
            || self.subagents.iter().any(|s| s.agent.declares_secret(name))
            || self.prompts.iter().any(|p| p.agent.declares_secret(name))
    }

    /// What the config picks of each MCP server, in order of first mention: every declared
    /// server, whole, when the config has no `tools` key; else what its `mcp:` entries pick
    /// (servers they name may be declared elsewhere: an `--mcp-config` file).
    ///
    /// ```
    /// use toolsmith_config::{AgentConfig, ToolNames};
    ///
    /// let config = AgentConfig::from_json(
    ///     r#"{"tools": {"mcp:git/git_status": {}, "mcp:git/git_commit": {"needsApproval": true}}}"#,
    /// ).unwrap();
    /// let picked = config.mcp_selections();
    /// assert_eq!(picked[0].server, "git");
    /// assert_eq!(picked[0].only.as_deref(), Some(&["git_status".to_string(), "git_commit".to_string()][..]));
    /// assert_eq!(picked[0].needs_approval, ToolNames::Some(vec!["git_commit".into()]));
    /// ```
    pub fn mcp_selections(&self) -> Vec<McpSelection> {
        mcp::selections(self)
    }

    /// The config's tools for a run on a `provider` model: built-ins taken from `builtins`,
    /// provider tools built by their factories, approval applied, then the client tools.
    ///
    /// # Errors
    ///
    /// A provider tool whose provider is not `provider`:
    /// `config.tools.googleSearch requires config.model.provider to be google`; a built-in
    /// missing from `builtins`; a client tool named like another tool; MCP servers (which
    /// need [`toolset_with`](Self::toolset_with) and a caller that connects them).
    pub fn toolset(&self, builtins: &Toolset, provider: &str) -> Result<Toolset, ConfigError> {
        self.toolset_with(builtins, provider, WebhookPolicy::public_only(), None)
    }

    /// [`toolset`](Self::toolset), with webhook tools allowed to reach what `webhooks` says
    /// (`toolset` allows public addresses only) and the MCP servers `mcp` connected: every
    /// tool of every declared server when the config has no `tools` key, else those its
    /// `mcp:` entries pick.
    ///
    /// # Errors
    ///
    /// As [`toolset`](Self::toolset); a declared or named server `mcp` has not connected:
    /// `config.mcpServers.fs: the server is not connected`.
    pub fn toolset_with(
        &self,
        builtins: &Toolset,
        provider: &str,
        webhooks: WebhookPolicy,
        mcp: Option<&dyn McpTools>,
    ) -> Result<Toolset, ConfigError> {
        self.toolset_sandboxed(builtins, provider, webhooks, mcp, None)
    }

    /// [`toolset_with`](Self::toolset_with), `sandboxed` building the built-ins that have
    /// sandbox settings of their own (without it, such settings are an error).
    fn toolset_sandboxed(
        &self,
        builtins: &Toolset,
        provider: &str,
        webhooks: WebhookPolicy,
        mcp: Option<&dyn McpTools>,
        sandboxed: Option<SandboxedBuiltin<'_>>,
    ) -> Result<Toolset, ConfigError> {
        let builtins = &match self.workspace {
            Some(workspace) => workspace.builtins(builtins.clone()),
            None => builtins.clone(),
        };
        let mut tools = self.server_tools(builtins, provider, webhooks, sandboxed)?;
        for tool in mcp::config_tools(self, mcp)? {
            let name = tool.spec().name().to_string();
            if tools.add(tool).is_some() {
                return Err(error(format!(
                    "config: \"{name}\" is already the name of a tool"
                )));
            }
        }
        for client in &self.client_tools {
            if tools.get(&client.name).is_some() {
                return Err(error(format!(
                    "config.clientTools: \"{}\" is already the name of a tool",
                    client.name
                )));
            }
            tools.add(client.tool());
        }
        Ok(tools)
    }

    /// The built-in and provider tools of [`toolset`](Self::toolset).
    fn server_tools(
        &self,
        builtins: &Toolset,
        provider: &str,
        webhooks: WebhookPolicy,
        sandboxed: Option<SandboxedBuiltin<'_>>,
    ) -> Result<Toolset, ConfigError> {
        let Some(entries) = &self.tools else {
            let mut tools = Toolset::new();
            for name in workspace::default_tools(self.workspace.as_ref()) {
                if builtins.contains(name) {
                    tools.add(self.builtin(name, builtins, sandboxed)?);
                }
            }
            return Ok(tools);
        };
        let mut tools = Toolset::new();
        for entry in entries {
            let name = if let Some(defined) = &entry.defined {
                match defined {
                    Defined::Webhook(webhook) => tools.add(webhook.tool(&entry.name, webhooks)?),
                    Defined::Tavily(tavily) => tools.add(tavily.tool(&entry.name)?),
                    // Added with the other MCP tools (`mcp::config_tools`), one per server.
                    Defined::Mcp { .. } => continue,
                };
                entry.name.clone()
            } else if let Some(tool) = provider_tool(entry, provider)? {
                let name = toolsmith_core::Tool::spec(&tool).name().to_string();
                tools.add(tool);
                name
            } else {
                tools.add(self.builtin(&entry.name, builtins, sandboxed)?);
                entry.name.clone()
            };
            match entry.needs_approval {
                Some(true) => {
                    tools = tools.map_meta(&name, |meta| meta.approval(Approval::Always));
                }
                Some(false) => {
                    tools = tools.map_meta(&name, |meta| meta.approval(Approval::Policy));
                }
                None => {}
            }
            for decl in &entry.variables {
                let decl = decl.clone();
                tools = tools.map_meta(&name, |meta| meta.variable(decl));
            }
            if !entry.env.is_empty() {
                let env = entry.env.clone();
                tools = tools.map_meta(&name, |mut meta| {
                    meta.env.extend(env);
                    meta
                });
            }
            if entry.cache_ttl.is_some() || entry.result_limit.is_some() {
                let meta = tools
                    .get(&name)
                    .map(|t| t.meta().clone())
                    .unwrap_or_default();
                let meta = economy::apply(meta, &name, entry.cache_ttl, entry.result_limit)?;
                tools = tools.map_meta(&name, |_| meta);
            }
        }
        Ok(tools)
    }
}

#[cfg(test)]
mod mcp_tests;
#[cfg(test)]
mod tests;
