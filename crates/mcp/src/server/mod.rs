//! The MCP server: toolsmith's tools served to any MCP client.
//!
//! [`McpServer`] holds a toolset made ready once, as a run would see it; each connection gets
//! an [`McpSession`] of its own (the rmcp [`ServerHandler`](rmcp::ServerHandler)), served over
//! stdio ([`serve_stdio`]), any byte stream ([`serve_stream`]) or streamable HTTP
//! ([`http_service`], [`serve_http`]).
//!
//! # Building
//!
//! [`McpServerBuilder::build`] takes out the `optional` tools whose flag variable is off, then
//! applies the tools' [`PrepareTools`](toolsmith_core::PrepareTools) hooks once, in toolset
//! order, as a run does as it starts (a resumable sub-agent becomes `subagent_create` and
//! `subagent_message`), then takes out the tools that do not run here
//! ([`ToolKind::executes_locally`](toolsmith_core::ToolKind::executes_locally): a provider's
//! tools run at the model's provider, client tools at the caller of a run). The result is the
//! server's toolset for its whole life ([`McpServer::tools`]); the declarations clients list
//! are made from it once. The calls a tool asks a run to make as it starts
//! ([`StartCalls`](toolsmith_core::StartCalls), an `immediate` sub-agent's) are not made:
//! a session is no run, and only its client calls tools.
//!
//! # Sessions
//!
//! A session is one client connection. Its calls share one
//! [`RunScope`](toolsmith_core::RunScope) (a run id of the form `mcp-<uuid>`, session state,
//! the server's variables): what one call leaves in the session state (a sub-agent instance,
//! the files `read` stamped) the next one of the same session finds; another session starts
//! empty. Nothing drains the scope's inbox: the results of non-blocking sub-agents, which a run
//! would hand its model later, are not delivered over MCP.
//!
//! # The protocol
//!
//! Protocol 2025-11-25, clients asking for 2025-06-18 accepted as well (any other version is
//! answered with 2025-11-25, for the client to accept or leave). `initialize` answers with the
//! server's name `toolsmith`, the crate's version, the optional instructions and the `tools`
//! capability (`listChanged: false`: the list never changes).
//!
//! **`tools/list`**: the tools the session's scope offers
//! ([`Tool::offered`](toolsmith_core::Tool::offered)), in toolset order, [`PAGE_SIZE`] per page
//! (the cursor is opaque). Each with its input schema and output schema exactly as declared,
//! the description the model would see
//! ([`ToolSpec::model_description`](toolsmith_core::ToolSpec::model_description)) and the
//! annotations its metadata implies: `readOnlyHint` = no side effect, `idempotentHint`,
//! `destructiveHint: true` for a tool with a side effect.
//!
//! **`tools/call`**, in this order:
//!
//! 1. A tool the session does not list is a JSON-RPC error (`-32602`, invalid params); every
//!    later failure is a result with `isError: true`, its text `<CODE>: <message>` and, unless
//!    the tool declares an output schema, `structuredContent` `{"code", "message",
//!    "details"?}`.
//! 2. The arguments are validated against the input schema: invalid ones are
//!    [`INVALID_INPUT`] and the tool never runs.
//! 3. Approval: a call needs it when the tool's own setting says so
//!    ([`Approval::required`](toolsmith_core::Approval::required)) or, for a tool that leaves
//!    it to the policy, when the server's [`ApprovalPolicy`]
//!    names it. The client is asked with `elicitation/create` (`approval.rs`); the call runs
//!    only on an explicit approval, else it is [`DENIED`]. A client without the elicitation
//!    capability cannot be asked: [`APPROVAL_REQUIRED`]. A call is never run unapproved.
//! 4. The call runs (a tool with [`Concurrency::Exclusive`](toolsmith_core::Concurrency)
//!    alone in its session, others side by side) through the tracing and secrets layers, the
//!    server's secret variables masked in what it returns (`call.rs`). A panic is
//!    [`TOOL_PANICKED`]; a call past its time limit (the tool's `timeout`, else the server's,
//!    [`DEFAULT_TIMEOUT`]; counted once approved, the wait for an exclusive turn included) is
//!    [`TIMEOUT`]. When the client cancels the request
//!    (`notifications/cancelled`), or the time runs out, the call's cancellation token is
//!    cancelled, the tool has [`CANCEL_GRACE`] to end on its own, then its future is dropped
//!    (a sandboxed command is killed with it). A cancelled request gets no answer.
//! 5. While it runs, a request that carries a `progressToken` gets `notifications/progress`
//!    about once a second: progress = seconds elapsed, message `running <tool>: N s`.
//! 6. The output becomes content blocks (`result.rs`): text, JSON as its text, images, files
//!    as embedded resources; `structuredContent` is the tool's value when it is a JSON object
//!    (a tool that declares an output schema must return one: else
//!    [`TOOL_OUTPUT_INVALID`]).
//!
//! toolsmith logs nothing of a call's arguments or results: the tracing layer logs names, ids,
//! durations and errors (codes and messages, secrets masked). rmcp's own `debug` logs (target
//! `rmcp`) show whole messages: keep them off where arguments or results are sensitive.

mod approval;
mod call;
mod http;
mod lines;
mod listing;
mod result;
mod session;
mod stdio;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use toolsmith_agent::ApprovalPolicy;
use toolsmith_config::AgentConfig;
use toolsmith_core::{SharedTool, Toolset, Variables};

pub use http::{HttpConfig, MCP_PATH, McpHttpService, http_service, serve_http};
/// The stdio transport's reading of one line (a `tools/call` read directly, anything else by
/// rmcp), for the fuzz targets (`fuzz/` at the repository's root): not part of the API.
#[doc(hidden)]
pub use lines::decode as decode_line;
pub use session::McpSession;
pub use stdio::{serve_stdio, serve_stream};

/// The most tools one `tools/list` page holds.
pub const PAGE_SIZE: usize = 100;

/// A call's time limit when its tool sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long an approval may wait for the client's answer before the call is denied.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a cancelled or timed-out call has to end on its own before its future is dropped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// The code of arguments that do not match the tool's input schema.
pub const INVALID_INPUT: &str = "INVALID_INPUT";
/// The code of a call the client (or the person behind it) did not approve.
pub const DENIED: &str = "DENIED";
/// The code of a call that needs approval from a client that cannot be asked.
pub const APPROVAL_REQUIRED: &str = "APPROVAL_REQUIRED";
/// The code of a tool that panicked.
pub const TOOL_PANICKED: &str = "TOOL_PANICKED";
/// The code of a call that did not finish within its time limit.
pub const TIMEOUT: &str = "TIMEOUT";
/// The code of a call the client cancelled (never sent: a cancelled request gets no answer).
pub const CANCELLED: &str = "CANCELLED";
/// The code of a successful output that does not fit the tool's declared output schema.
pub const TOOL_OUTPUT_INVALID: &str = "TOOL_OUTPUT_INVALID";

/// toolsmith's tools, ready to serve to MCP clients. Cloning is cheap: clones share everything.
///
/// ```
/// use toolsmith_core::{ToolError, Toolset, from_fn};
/// use toolsmith_mcp::server::McpServer;
///
/// let echo = from_fn("echo", "Say it back.", |text: String, _cx| async move {
///     Ok::<_, ToolError>(text)
/// });
/// let server = McpServer::builder(Toolset::new().with(echo))
///     .instructions("Tools for the workspace.")
///     .build();
/// assert_eq!(server.tools().names().collect::<Vec<_>>(), ["echo"]);
/// let session = server.session(); // one per client connection
/// # drop(session);
/// ```
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

/// What every session of a server shares.
pub(crate) struct Inner {
    /// The toolset as a run would see it.
    pub(crate) tools: Toolset,
    /// The declarations of `tools`, in the same order.
    pub(crate) listed: Vec<rmcp::model::Tool>,
    pub(crate) policy: ApprovalPolicy,
    pub(crate) timeout: Duration,
    pub(crate) approval_timeout: Duration,
    pub(crate) instructions: Option<String>,
    pub(crate) variables: Variables,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.inner.tools.names().collect::<Vec<_>>())
            .field("policy", &self.inner.policy)
            .field("timeout", &self.inner.timeout)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server of `tools`, with the defaults: no approval policy (only the tools that ask
    /// themselves), [`DEFAULT_TIMEOUT`], [`DEFAULT_APPROVAL_TIMEOUT`], no instructions, no
    /// variables.
    pub fn new(tools: Toolset) -> McpServer {
        Self::builder(tools).build()
    }

    /// A builder for a server of `tools`.
    pub fn builder(tools: Toolset) -> McpServerBuilder {
        McpServerBuilder {
            tools,
            policy: ApprovalPolicy::None,
            timeout: DEFAULT_TIMEOUT,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            instructions: None,
            variables: Variables::default(),
        }
    }

    /// The toolset the server serves: its tools as a run would see them (see the
    /// [module docs](self)), before each session's
    /// [`Tool::offered`](toolsmith_core::Tool::offered) filter.
    pub fn tools(&self) -> &Toolset {
        &self.inner.tools
    }

    /// A new session, for one client connection: the rmcp handler to serve.
    pub fn session(&self) -> McpSession {
        McpSession::new(Arc::clone(&self.inner))
    }
}

/// Builds an [`McpServer`].
#[derive(Debug)]
#[must_use]
pub struct McpServerBuilder {
    tools: Toolset,
    policy: ApprovalPolicy,
    timeout: Duration,
    approval_timeout: Duration,
    instructions: Option<String>,
    variables: Variables,
}

impl McpServerBuilder {
    /// The tools that need approval besides those that ask themselves (a tool whose own
    /// approval is set, `Always`, `Never` or a predicate, keeps it).
    pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The time limit of a call whose tool sets none.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long an approval waits for the client's answer before the call is denied.
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// The instructions `initialize` sends the client (how to use the tools).
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The variables every session's calls see ([`ToolContext::variable`]); the secret ones
    /// are masked as `[secret]` in whatever a call returns. They also decide which `optional`
    /// tools are served.
    ///
    /// [`ToolContext::variable`]: toolsmith_core::ToolContext::variable
    pub fn variables(mut self, variables: Variables) -> Self {
        self.variables = variables;
        self
    }

    /// What an agent config says of its tools' serving: its declared variables (their values in
    /// the config, else `lookup`'s), its approval policy and timeout, its instructions
    /// (`toolsmith mcp serve --config` and the service's MCP route).
    ///
    /// ```
    /// use toolsmith_config::AgentConfig;
    /// use toolsmith_core::Toolset;
    /// use toolsmith_mcp::server::McpServer;
    ///
    /// let config = AgentConfig::from_json(r#"{"instructions": "Be brief."}"#).unwrap();
    /// let server = McpServer::builder(Toolset::new()).config(&config, &|_| None).build();
    /// assert!(server.tools().is_empty());
    /// ```
    pub fn config(mut self, config: &AgentConfig, lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let values: HashMap<String, String> = config
            .variables
            .iter()
            .filter_map(|entry| {
                let name = &entry.decl.name;
                let value = entry.value.clone().or_else(|| lookup(name))?;
                Some((name.clone(), value))
            })
            .collect();
        self = self.variables(Variables::resolve(
            [&values],
            config.variables.iter().map(|entry| &entry.decl),
        ));
        if let Some(approval) = &config.approval {
            self = self
                .approval_policy(approval.policy.clone())
                .approval_timeout(approval.timeout);
        }
        if let Some(instructions) = &config.instructions {
            self = self.instructions(instructions.clone());
        }
        self
    }

    /// The server: `optional` tools whose flag is off taken out, the tools' prepare hooks
    /// applied once, in toolset order, then the tools that do not run here taken out.
    pub fn build(self) -> McpServer {
        let variables = &self.variables;
        let tools = self.tools.filter(|tool| {
            tool.meta()
                .optional
                .as_deref()
                .is_none_or(|flag| variables.get(flag).is_some_and(flag_is_on))
        });
        let tools = prepare(tools).filter(|tool| tool.kind().executes_locally());
        let listed = tools.iter().map(|tool| listing::declare(&**tool)).collect();
        McpServer {
            inner: Arc::new(Inner {
                tools,
                listed,
                policy: self.policy,
                timeout: self.timeout,
                approval_timeout: self.approval_timeout,
                instructions: self.instructions,
                variables: self.variables,
            }),
        }
    }
}

/// `tools` as a run prepares them: the hook of every tool that offers one, in toolset order,
/// each given the toolset the hooks before it left.
fn prepare(tools: Toolset) -> Toolset {
    let entries: Vec<SharedTool> = tools
        .iter()
        .filter(|tool| tool.prepare_tools().is_some())
        .cloned()
        .collect();
    entries
        .iter()
        .fold(tools, |tools, entry| match entry.prepare_tools() {
            Some(hook) => hook.prepare(entry, tools),
            None => tools,
        })
}

/// Whether a flag variable's value turns its tool on: `true`, `1` or `yes`, in any case.
fn flag_is_on(value: &str) -> bool {
    ["true", "1", "yes"]
        .iter()
        .any(|on| value.trim().eq_ignore_ascii_case(on))
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};
    use toolsmith_core::{
        PrepareTools, Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, from_fn,
    };

    use super::*;

    fn noop(name: &str) -> SharedTool {
        Arc::new(from_fn(
            name.to_string(),
            "Nothing.",
            |_: Map<String, Value>, _cx| async { Ok::<_, ToolError>("ok") },
        ))
    }

    /// Stands in for itself with `<name>_a` and `<name>_b`.
    struct Splits(ToolSpec);

    #[async_trait::async_trait]
    impl Tool for Splits {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("never"))
        }
        fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
            Some(self)
        }
    }

    impl PrepareTools for Splits {
        fn prepare(&self, entry: &SharedTool, mut tools: Toolset) -> Toolset {
            let name = entry.spec().name().to_string();
            tools.remove(&name);
            tools
                .with(noop(&format!("{name}_a")))
                .with(noop(&format!("{name}_b")))
        }
    }

    #[test]
    fn prepare_hooks_run_once_in_toolset_order() {
        let splits: SharedTool = Arc::new(Splits(ToolSpec::new("s", json!({"type": "object"}))));
        let server = McpServer::new(Toolset::new().with(noop("first")).with(splits));
        assert_eq!(
            server.tools().names().collect::<Vec<_>>(),
            ["first", "s_a", "s_b"]
        );
        assert_eq!(server.inner.listed.len(), 3);
    }

    #[test]
    fn tools_that_run_elsewhere_are_not_served() {
        let client =
            toolsmith_core::ClientTool::new(ToolSpec::new("ask_user", json!({"type": "object"})));
        let server = McpServer::new(Toolset::new().with(noop("here")).with(client));
        assert_eq!(server.tools().names().collect::<Vec<_>>(), ["here"]);
    }

    #[test]
    fn optional_tools_need_their_flag_on() {
        let flagged = Toolset::new()
            .with(noop("always"))
            .with(noop("beta"))
            .map_meta("beta", |meta: ToolMeta| meta.optional("BETA"));
        let off = McpServer::new(flagged.clone());
        assert_eq!(off.tools().names().collect::<Vec<_>>(), ["always"]);
        let mut variables = Variables::default();
        variables.insert("BETA", "Yes", false);
        let on = McpServer::builder(flagged).variables(variables).build();
        assert_eq!(on.tools().names().collect::<Vec<_>>(), ["always", "beta"]);
    }
}
