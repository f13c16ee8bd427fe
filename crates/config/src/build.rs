//! Building what a config declares beyond the top agent's own model and tools: its sub-agents
//! and prompts as tools (each with an agent built from its own config), and its variables.

use std::sync::Arc;

use toolsmith_agent::{
    Agent, AgentBuilder, ApprovalPolicy, PromptTool, SUBAGENT_CREATE, SUBAGENT_MESSAGE,
    SubagentTool, ToolRouter,
};
use toolsmith_core::{
    Approval, LanguageModel, SharedTool, ToolMeta, Toolset, VariableDecl, VariableKind,
};

use super::{
    AgentConfig, ApprovalConfig, ConfigError, McpTools, ModelConfig, SandboxSettings,
    WebhookPolicy, error,
};

/// The most steps a run takes when the config does not say (`maxSteps`).
pub const DEFAULT_MAX_STEPS: u32 = 10;

/// Builds the model a `model` entry names (`toolsmith run`: the provider registry).
pub type ResolveModel<'a> =
    &'a (dyn Fn(&ModelConfig) -> Result<Arc<dyn LanguageModel>, String> + Sync);

/// What building a config's composite tools needs from its caller.
pub struct BuildContext<'a> {
    /// The built-in tools `tools` entries pick from.
    pub builtins: &'a Toolset,
    /// Builds the model a sub-agent or prompt names.
    pub resolve: ResolveModel<'a>,
    /// A declared variable's value from outside the config (`toolsmith run`: `--var`, then
    /// the environment).
    pub lookup: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// Which addresses the webhook tools of sub-agents' and prompts' configs may reach.
    pub webhooks: WebhookPolicy,
    /// Rewrites the tools of each sub-agent's and prompt's config before their composite tools
    /// join them (the service wraps the config's async tools); `None` keeps them as they are.
    pub wrap: Option<WrapTools<'a>>,
    /// The MCP servers the caller connected, which `mcp:` entries and `mcpServers` of
    /// sub-agents' and prompts' configs resolve against.
    pub mcp: Option<&'a dyn McpTools>,
    /// Builds a built-in with its own sandbox settings (`sandbox`, `tools.<name>.sandbox`);
    /// `None`: a config with such settings is refused.
    pub sandboxed: Option<SandboxedBuiltin<'a>>,
}

/// See [`BuildContext::sandboxed`]: the built-in's name (one of
/// [`SANDBOXED_TOOLS`](crate::SANDBOXED_TOOLS)) and its resolved settings in, the tool (of the
/// same name) out, or why the settings cannot be applied.
pub type SandboxedBuiltin<'a> =
    &'a (dyn Fn(&str, &SandboxSettings) -> Result<SharedTool, String> + Sync);

/// See [`BuildContext::wrap`]: a config's own tools in, the tools its agent gets out.
pub type WrapTools<'a> = &'a (dyn Fn(Toolset, &AgentConfig) -> Toolset + Sync);

/// The agent a config's composite tools belong to: what a sub-agent without its own model or
/// approval block inherits.
#[derive(Clone)]
pub struct ParentAgent {
    /// Its model.
    pub model: Arc<dyn LanguageModel>,
    /// Its model's provider (which provider tools a config may enable).
    pub provider: String,
    /// Its approval settings.
    pub approval: Option<ApprovalConfig>,
}

impl AgentConfig {
    /// [`toolset_with`](Self::toolset_with) with what `cx` gives: its built-ins (each built
    /// again by `cx.sandboxed` when the config gives it sandbox settings), webhook policy and
    /// MCP servers.
    ///
    /// # Errors
    ///
    /// As [`toolset_with`](Self::toolset_with); sandbox settings `cx.sandboxed` cannot apply,
    /// or without `cx.sandboxed` at all
    /// (`config.tools.bash.sandbox: sandbox settings are not supported here …`).
    pub fn toolset_in(
        &self,
        cx: &BuildContext<'_>,
        provider: &str,
    ) -> Result<Toolset, ConfigError> {
        self.toolset_sandboxed(cx.builtins, provider, cx.webhooks, cx.mcp, cx.sandboxed)
    }

    /// Every built-in of `cx.builtins` this config's workspace offers (with its approvals),
    /// each with the sandbox settings the config gives it: what a caller picking built-ins by
    /// name (`toolsmith run --tools`) picks from.
    ///
    /// # Errors
    ///
    /// As [`toolset_in`](Self::toolset_in) for sandbox settings.
    pub fn builtins_in(&self, cx: &BuildContext<'_>) -> Result<Toolset, ConfigError> {
        let offered = match self.workspace {
            Some(workspace) => workspace.builtins(cx.builtins.clone()),
            None => cx.builtins.clone(),
        };
        let mut tools = Toolset::new();
        for tool in offered.iter() {
            tools.add(self.builtin(tool.spec().name(), &offered, cx.sandboxed)?);
        }
        Ok(tools)
    }

    /// The config's sub-agents and prompts as tools, in config order (sub-agents first), each
    /// running an agent built from its own config under `parent`.
    ///
    /// # Errors
    ///
    /// A sub-agent's model that cannot be built, or its tools (as
    /// [`toolset`](Self::toolset)).
    pub fn composite_tools(
        &self,
        cx: &BuildContext<'_>,
        parent: &ParentAgent,
    ) -> Result<Toolset, ConfigError> {
        let mut tools = Toolset::new();
        for (i, entry) in self.subagents.iter().enumerate() {
            let agent = child_agent(&entry.agent, cx, parent)
                .map_err(|e| error(format!("config.subagents[{i}] ({}): {e}", entry.name)))?;
            let mut tool = SubagentTool::with_config(
                &entry.name,
                &entry.description,
                agent,
                entry.tool.clone(),
            );
            for (name, value) in &entry.env {
                tool = tool.with_variable(name, value);
            }
            tools.add(approved(Arc::new(tool), entry.needs_approval));
        }
        for (i, entry) in self.prompts.iter().enumerate() {
            let agent = child_agent(&entry.agent, cx, parent)
                .map_err(|e| error(format!("config.prompts[{i}] ({}): {e}", entry.name)))?;
            let mut tool =
                PromptTool::new(&entry.name, &entry.description, agent, entry.tool.clone());
            for (name, value) in &entry.env {
                tool = tool.with_variable(name, value);
            }
            tools.add(approved(Arc::new(tool), entry.needs_approval));
        }
        Ok(tools)
    }

    /// The agent this config describes, to build: `tools` (the config's own toolset, from
    /// [`toolset`](Self::toolset) or the caller's choice) with the composite tools added, on
    /// `parent`'s model; `maxSteps` (default 10), `instructions`, `execution`,
    /// `parallelToolCalls`, the approval settings, `resultLimit`, `maxToolOutputBytes`, `router` and `summarizeModel` (built with
    /// `cx.resolve`) and the declared variables (values from the config, else `cx.lookup`) set.
    /// The caller may override any of them on the builder.
    ///
    /// # Errors
    ///
    /// As [`with_composite_tools`](Self::with_composite_tools).
    pub fn agent_builder(
        &self,
        tools: Toolset,
        cx: &BuildContext<'_>,
        parent: &ParentAgent,
    ) -> Result<AgentBuilder, ConfigError> {
        let tools = self.with_composite_tools(tools, cx, parent)?;
        let mut builder = Agent::builder_shared(Arc::clone(&parent.model))
            .tools(tools)
            .max_steps(self.max_steps.unwrap_or(DEFAULT_MAX_STEPS));
        if let Some(instructions) = &self.instructions {
            builder = builder.instructions(instructions.clone());
        }
        // The config's credentials are masked as secret variables are: a name no config can
        // declare (it has a space), a value no tool is told about but through the mask.
        for (i, value) in self.credentials.values().iter().enumerate() {
            let name = format!("config credential {i}");
            builder = builder
                .declare_variable(VariableDecl {
                    name: name.clone(),
                    kind: VariableKind::Secret,
                    required: false,
                    scoped: false,
                    description: "A credential written in the agent's config.".to_string(),
                })
                .variable(name, value.clone());
        }
        if let Some(policy) = self.execution {
            builder = builder.execution(policy);
        }
        if let Some(allowed) = self.parallel_tool_calls {
            builder = builder.parallel_tool_calls(allowed);
        }
        if let Some(approval) = &self.approval {
            builder = builder
                .approval_policy(approval.policy.clone())
                .approval_timeout(approval.timeout, approval.timeout_action);
        }
        if let Some(limit) = self.result_limit {
            builder = builder.result_limit(limit);
        }
        if let Some(bytes) = self.max_tool_output_bytes {
            builder = builder.spill_artifacts(bytes);
        }
        if let Some(router) = &self.router {
            let model = (cx.resolve)(&router.model)
                .map_err(|e| error(format!("config.router.model: {e}")))?;
            builder = builder.router(
                ToolRouter::new(model)
                    .max_tools(router.max_tools)
                    .min_tools(router.min_tools)
                    .temperature(router.temperature),
            );
        }
        if let Some(spec) = &self.summarize_model {
            let model =
                (cx.resolve)(spec).map_err(|e| error(format!("config.summarizeModel: {e}")))?;
            builder = builder.summarize_model(model);
        }
        Ok(self.declare_variables(builder, cx.lookup))
    }

    /// Declares the config's variables on `builder`, with their values: the config's own
    /// (text variables only), else `lookup`'s.
    pub fn declare_variables(
        &self,
        mut builder: AgentBuilder,
        lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> AgentBuilder {
        for entry in &self.variables {
            builder = builder.declare_variable(entry.decl.clone());
            if let Some(value) = entry.value.clone().or_else(|| lookup(&entry.decl.name)) {
                builder = builder.variable(entry.decl.name.clone(), value);
            }
        }
        builder
    }

    /// Adds the composite tools to `tools`, the agent's whole toolset then, against which the
    /// config's own approval policy is checked.
    ///
    /// # Errors
    ///
    /// A sub-agent or prompt named like a tool already there; an approval policy naming a tool
    /// the agent does not have.
    pub fn with_composite_tools(
        &self,
        mut tools: Toolset,
        cx: &BuildContext<'_>,
        parent: &ParentAgent,
    ) -> Result<Toolset, ConfigError> {
        // Sub-agents and prompts share this config's workspace: its offering and approvals.
        let offered;
        let mut cx = BuildContext { ..*cx };
        if let Some(workspace) = self.workspace {
            offered = workspace.builtins(cx.builtins.clone());
            cx.builtins = &offered;
        }
        for tool in self.composite_tools(&cx, parent)?.iter() {
            let name = tool.spec().name();
            if tools.contains(name) {
                return Err(error(format!(
                    "config: the sub-agent or prompt \"{name}\" is named like another tool"
                )));
            }
            tools.add(tool.clone());
        }
        self.check_policy_names(&tools)?;
        Ok(tools)
    }

    /// Fails on a name in this config's own `approval.policy` list that is not one of `tools`
    /// (the agent's whole toolset) nor a tool the runtime adds (`subagent_create`,
    /// `subagent_message`): a misspelt name would silently ask for nothing. A policy inherited
    /// from a parent names the parent's tools and is not checked against a sub-agent's.
    fn check_policy_names(&self, tools: &Toolset) -> Result<(), ConfigError> {
        let Some(ApprovalConfig {
            policy: ApprovalPolicy::Tools(names),
            ..
        }) = &self.approval
        else {
            return Ok(());
        };
        // The names a run sees: an MCP server's entry gives way to its tools as the run starts.
        let mut prepared = tools.clone();
        for tool in tools.iter() {
            if let Some(hook) = tool.prepare_tools() {
                prepared = hook.prepare(tool, prepared);
            }
        }
        let unknown: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|name| {
                !tools.contains(name)
                    && !prepared.contains(name)
                    && ![SUBAGENT_CREATE, SUBAGENT_MESSAGE].contains(name)
            })
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        Err(error(format!(
            "config.approval.policy names tools this agent does not have: {}",
            unknown.join(", ")
        )))
    }
}

/// `tool`, with approval required on every call when `needs_approval`.
fn approved(tool: SharedTool, needs_approval: bool) -> SharedTool {
    if !needs_approval {
        return tool;
    }
    let name = tool.spec().name().to_string();
    Toolset::new()
        .with(tool)
        .map_meta(&name, |meta: ToolMeta| meta.approval(Approval::Always))
        .get(&name)
        .cloned()
        .expect("the tool was just added")
}

/// A sub-agent's or prompt's agent: its own model or its parent's, its own approval block or
/// its parent's, its tools and composite tools, instructions, step cap and variables.
fn child_agent(
    config: &AgentConfig,
    cx: &BuildContext<'_>,
    parent: &ParentAgent,
) -> Result<Agent, ConfigError> {
    let (model, provider) = match &config.model {
        Some(spec) => ((cx.resolve)(spec).map_err(error)?, spec.provider.clone()),
        None => (parent.model.clone(), parent.provider.clone()),
    };
    let me = ParentAgent {
        model: model.clone(),
        provider,
        approval: config.approval.clone().or_else(|| parent.approval.clone()),
    };
    let tools = config.toolset_in(cx, &me.provider)?;
    let tools = match cx.wrap {
        Some(wrap) => wrap(tools, config),
        None => tools,
    };
    let tools = config.with_composite_tools(tools, cx, &me)?;
    let mut builder = Agent::builder_shared(model)
        .tools(tools)
        .max_steps(config.max_steps.unwrap_or(10));
    if let Some(policy) = config.execution {
        builder = builder.execution(policy);
    }
    if let Some(allowed) = config.parallel_tool_calls {
        builder = builder.parallel_tool_calls(allowed);
    }
    if let Some(instructions) = &config.instructions {
        builder = builder.instructions(instructions.clone());
    }
    if let Some(approval) = &me.approval {
        builder = builder
            .approval_policy(approval.policy.clone())
            .approval_timeout(approval.timeout, approval.timeout_action);
    }
    Ok(config.declare_variables(builder, cx.lookup).build())
}
