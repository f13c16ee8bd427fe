//! Resumable sub-agents, as in the Standard Agents spec: long-lived instances driven by the
//! runtime-injected `subagent_create` and `subagent_message` tools.
//!
//! A sub-agent tool whose [`SubagentConfig::resumable`] is set is not offered as itself: the
//! run offers `subagent_create` (start a named instance with a first message) and
//! `subagent_message` (send an existing instance another message) instead, shared by every
//! resumable sub-agent of the agent. An instance keeps its thread between messages, in the
//! run's session state under `subagents.instances.<name>` (keep the state with the thread to
//! continue instances in a later run). At `maxInstances` instances of every resumable agent,
//! `subagent_create` is no longer offered.
//!
//! How: a resumable sub-agent's [`PrepareTools`] hook, as a run starts, takes the sub-agent out
//! of the run's toolset and puts its [`AgentInstances`] (its instances in this run) behind the
//! lifecycle tools: it creates the pair for the first resumable sub-agent, and hands each later
//! one to the pair's own hook, which takes it in (the pair is rebuilt with one more agent, its
//! spec naming them all). The pair routes each call to the agent it is for: `subagent_create`
//! by its `agent` (the only one when there is one), `subagent_message` by the instance's.
//!
//! [`SubagentConfig::resumable`]: super::SubagentConfig::resumable

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolsmith_core::{
    PrepareTools, RunScope, SharedTool, Tool, ToolContext, ToolError, ToolKind, ToolMeta,
    ToolOutput, ToolSpec, Toolset,
};

use super::SubagentTool;
use super::agent_instances::{AgentInstances, instance_name, instances, not_found};

/// The tool that starts an instance.
pub const SUBAGENT_CREATE: &str = "subagent_create";
/// The tool that messages an instance.
pub const SUBAGENT_MESSAGE: &str = "subagent_message";
/// The session-state key the instances live under.
pub const SUBAGENTS_STATE_KEY: &str = "subagents";

/// The error code of a `subagent_create` that needs scoped variables nobody has provided.
pub const SUBAGENT_ENV_REQUIRED: &str = "subagent_env_required";

/// A resumable sub-agent's say in the run's toolset (offered through
/// [`Tool::prepare_tools`] when [`SubagentConfig::resumable`](super::SubagentConfig::resumable)
/// is set): it is replaced by the lifecycle tools, and its instances join theirs.
impl PrepareTools for SubagentTool {
    fn prepare(&self, entry: &SharedTool, mut tools: Toolset) -> Toolset {
        tools.remove(entry.spec().name());
        let agent: SharedTool = Arc::new(AgentInstances::new(entry, self.clone()));
        let lifecycle = tools.get(SUBAGENT_CREATE).cloned();
        match lifecycle.as_ref().and_then(|t| t.prepare_tools()) {
            Some(lifecycle) => lifecycle.prepare(&agent, tools),
            None => Lifecycle::install(vec![agent], tools),
        }
    }
}

/// Whether `subagent_create` in `tools` asks which agent to start: only when there are several
/// resumable sub-agents.
pub(super) fn asks_for_agent(tools: &Toolset) -> bool {
    tools
        .get(SUBAGENT_CREATE)
        .is_none_or(|t| t.spec().input_schema()["properties"].get("agent").is_some())
}

/// `subagent_create` (`create`) or `subagent_message`, over the [`AgentInstances`] of the run's
/// resumable sub-agents (with the first one's runtime metadata: its approval applies to both).
struct Lifecycle {
    spec: ToolSpec,
    meta: ToolMeta,
    /// Each resumable sub-agent's instances, named after the sub-agent.
    agents: Arc<[SharedTool]>,
    create: bool,
}

impl Lifecycle {
    /// `tools` with the lifecycle pair over `agents` (replacing an earlier pair).
    fn install(agents: Vec<SharedTool>, tools: Toolset) -> Toolset {
        let agents: Arc<[SharedTool]> = agents.into();
        let meta = agents[0].meta().clone();
        let create = Lifecycle {
            spec: create_spec(&agents),
            meta: meta.clone(),
            agents: agents.clone(),
            create: true,
        };
        let message = Lifecycle {
            spec: message_spec(),
            meta,
            agents,
            create: false,
        };
        tools.with(create).with(message)
    }

    fn agent(&self, name: &str) -> Result<&SharedTool, ToolError> {
        self.agents
            .iter()
            .find(|a| a.spec().name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.agents.iter().map(|a| a.spec().name()).collect();
                ToolError::new(
                    "INVALID_INPUT",
                    format!(
                        "No resumable sub-agent is called \"{name}\". Sub-agents: {}.",
                        names.join(", ")
                    ),
                )
            })
    }

    fn first(&self) -> &str {
        self.agents[0].spec().name()
    }
}

/// The pair takes in another resumable sub-agent's instances (the `entry` a resumable
/// sub-agent's hook hands it): the pair is rebuilt over one more agent.
impl PrepareTools for Lifecycle {
    fn prepare(&self, entry: &SharedTool, tools: Toolset) -> Toolset {
        let mut agents = self.agents.to_vec();
        agents.push(entry.clone());
        Lifecycle::install(agents, tools)
    }
}

fn create_spec(agents: &[SharedTool]) -> ToolSpec {
    let mut properties = Map::new();
    let mut required = vec![json!("name"), json!("message")];
    if agents.len() > 1 {
        let names: Vec<&str> = agents.iter().map(|a| a.spec().name()).collect();
        properties.insert(
            "agent".into(),
            json!({"type": "string", "enum": names, "description": "Which sub-agent to start."}),
        );
        required.insert(0, json!("agent"));
    }
    properties.insert(
        "name".into(),
        json!({"type": "string", "minLength": 1,
               "description": "A unique name for the new instance: send it later messages by this name."}),
    );
    properties.insert(
        "message".into(),
        json!({"type": "string", "description": "Its first message: the task, with everything needed."}),
    );
    let agents: Vec<String> = agents
        .iter()
        .map(|a| format!("{} ({})", a.spec().name(), a.spec().description()))
        .collect();
    ToolSpec::new(
        SUBAGENT_CREATE,
        json!({"type": "object", "properties": properties, "required": required,
               "additionalProperties": false}),
    )
    .with_description(format!(
        "Start a new long-lived sub-agent instance and send it its first message; it keeps \
         its memory between messages. Use this only for a new instance: to talk to one that \
         exists, use {SUBAGENT_MESSAGE}. Sub-agents: {}.",
        agents.join("; ")
    ))
}

fn message_spec() -> ToolSpec {
    ToolSpec::new(
        SUBAGENT_MESSAGE,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "The instance's name."},
                "message": {"type": "string", "description": "What to tell it."}
            },
            "required": ["name", "message"],
            "additionalProperties": false
        }),
    )
    .with_description(format!(
        "Send another message to a sub-agent instance started with {SUBAGENT_CREATE}; it \
         remembers the earlier ones."
    ))
}

#[async_trait]
impl Tool for Lifecycle {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn kind(&self) -> &ToolKind {
        &ToolKind::Agent
    }

    /// `subagent_create` hides once every resumable agent has its maximum of instances.
    fn offered(&self, scope: &RunScope) -> bool {
        !self.create || self.agents.iter().any(|a| a.offered(scope))
    }

    fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
        self.create.then_some(self as &dyn PrepareTools)
    }

    /// Hands the call to the agent it is for, with its input and context as they are.
    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let agent = if self.create {
            match input.get("agent").and_then(Value::as_str) {
                Some(agent) => agent.to_string(),
                None => self.first().to_string(),
            }
        } else {
            let name = instance_name(&input)?;
            let instances = instances(cx.state());
            match instances.get(name) {
                Some(instance) => instance.agent.clone(),
                // A paused instance resumes even when the state no longer has it.
                None if cx.resume().is_some() => self.first().to_string(),
                None => return Err(not_found(name, &instances)),
            }
        };
        self.agent(&agent)?.call(input, cx).await
    }
}
