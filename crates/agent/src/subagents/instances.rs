//! Resumable sub-agents (seed 004): long-lived instances driven by the runtime-injected
//! `subagent_create` and `subagent_message` tools.
//!
//! A sub-agent tool whose [`SubagentConfig::resumable`] is set is not offered as itself: the
//! run offers `subagent_create` (start a named instance with a first message) and
//! `subagent_message` (send an existing instance another message) instead, shared by every
//! resumable sub-agent of the agent. An instance keeps its thread between messages, in the
//! run's session state under `subagents.instances.<name>` (keep the state with the thread to
//! continue instances in a later run). At `maxInstances` instances of every resumable agent,
//! `subagent_create` is no longer offered.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolsmith_core::{
    Message, RunScope, SessionState, SharedTool, Tool, ToolContext, ToolError, ToolKind, ToolMeta,
    ToolOutput, ToolSpec, Toolset,
};

use super::child_run::{ChildEnd, child_input, run_child};
use super::tool::{answer, scoped_values};
use super::{ParentCommunication, Side, SubagentTool};

/// The tool that starts an instance.
pub const SUBAGENT_CREATE: &str = "subagent_create";
/// The tool that messages an instance.
pub const SUBAGENT_MESSAGE: &str = "subagent_message";
/// The session-state key the instances live under.
pub const SUBAGENTS_STATE_KEY: &str = "subagents";

/// The error code of a `subagent_create` that needs scoped variables nobody has provided.
pub const SUBAGENT_ENV_REQUIRED: &str = "subagent_env_required";

/// One instance as the session state keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Instance {
    /// The resumable sub-agent tool it is an instance of.
    agent: String,
    /// Its thread.
    messages: Vec<Message>,
}

/// The resumable sub-agents of a run, shared by its two lifecycle tools.
struct Resumables {
    /// Tool name → the sub-agent.
    agents: Vec<(String, SubagentTool)>,
    /// Instance name → its lock: messages to a busy instance wait their turn.
    busy: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Replaces the resumable sub-agents of `tools` by `subagent_create` and `subagent_message`
/// (with the first one's runtime metadata: its approval applies to both).
pub(crate) fn inject(tools: Toolset) -> Toolset {
    let resumable: Vec<(String, SharedTool, SubagentTool)> = tools
        .iter()
        .filter_map(|tool| {
            let sub = tool.as_any()?.downcast_ref::<SubagentTool>()?;
            sub.config().resumable.as_ref()?;
            Some((tool.spec().name().to_string(), tool.clone(), sub.clone()))
        })
        .collect();
    let Some((_, first, _)) = resumable.first() else {
        return tools;
    };
    let meta = first.meta().clone();
    let names: HashSet<String> = resumable.iter().map(|(n, ..)| n.clone()).collect();
    let set = Arc::new(Resumables {
        agents: resumable
            .iter()
            .map(|(name, _, sub)| (name.clone(), sub.clone()))
            .collect(),
        busy: Mutex::default(),
    });
    let create = Lifecycle::new(create_spec(&set), meta.clone(), set.clone(), true);
    let message = Lifecycle::new(message_spec(), meta, set, false);
    tools
        .filter(|t| !names.contains(t.spec().name()))
        .with(create)
        .with(message)
}

fn create_spec(set: &Resumables) -> ToolSpec {
    let mut properties = Map::new();
    let mut required = vec![json!("name"), json!("message")];
    if set.agents.len() > 1 {
        let names: Vec<&str> = set.agents.iter().map(|(n, _)| n.as_str()).collect();
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
    let agents: Vec<String> = set
        .agents
        .iter()
        .map(|(name, sub)| format!("{name} ({})", sub.description()))
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

/// `subagent_create` (`create`) or `subagent_message`.
struct Lifecycle {
    spec: ToolSpec,
    meta: ToolMeta,
    set: Arc<Resumables>,
    create: bool,
}

impl Lifecycle {
    fn new(spec: ToolSpec, meta: ToolMeta, set: Arc<Resumables>, create: bool) -> Self {
        Lifecycle {
            spec,
            meta,
            set,
            create,
        }
    }

    fn agent(&self, name: &str) -> Result<&SubagentTool, ToolError> {
        self.set
            .agents
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, sub)| sub)
            .ok_or_else(|| {
                let names: Vec<&str> = self.set.agents.iter().map(|(n, _)| n.as_str()).collect();
                ToolError::new(
                    "INVALID_INPUT",
                    format!(
                        "No resumable sub-agent is called \"{name}\". Sub-agents: {}.",
                        names.join(", ")
                    ),
                )
            })
    }

    /// Starts an instance: checks the name, the limit and the scoped variables.
    async fn create(&self, input: &Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let agent_name = match input.get("agent").and_then(Value::as_str) {
            Some(name) => name,
            None => self.set.agents[0].0.as_str(),
        };
        let sub = self.agent(agent_name)?;
        let name = instance_name(input)?;
        let instances = instances(cx.state());
        if instances.contains_key(name) {
            return Err(ToolError::new(
                "INSTANCE_EXISTS",
                format!(
                    "An instance named \"{name}\" exists already: send it messages with \
                     {SUBAGENT_MESSAGE}, or pick another name."
                ),
            ));
        }
        let resumable = sub
            .config()
            .resumable
            .as_ref()
            .expect("only resumable agents");
        let count = instances.values().filter(|i| i.agent == agent_name).count();
        if let Some(max) = resumable.max_instances.filter(|&max| count >= max as usize) {
            return Err(ToolError::new(
                "MAX_INSTANCES",
                format!(
                    "\"{agent_name}\" has its maximum of {max} instances: send a message to one \
                     of them with {SUBAGENT_MESSAGE} instead."
                ),
            ));
        }
        env_required(sub, agent_name, name, input, cx)?;
        let first = side_message(resumable.receives_messages, text(input)?);
        self.converse(sub, agent_name, name, vec![first], input, cx)
            .await
    }

    /// Sends an existing instance a message.
    async fn message(&self, input: &Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = instance_name(input)?;
        let instances = instances(cx.state());
        let Some(instance) = instances.get(name) else {
            let mut names: Vec<&str> = instances.keys().map(String::as_str).collect();
            names.sort_unstable();
            return Err(ToolError::new(
                "INSTANCE_NOT_FOUND",
                format!(
                    "No sub-agent instance is named \"{name}\". {} Start one with \
                     {SUBAGENT_CREATE}.",
                    if names.is_empty() {
                        "None has been started.".to_string()
                    } else {
                        format!("Instances: {}.", names.join(", "))
                    }
                ),
            ));
        };
        let sub = self.agent(&instance.agent)?;
        let side = sub
            .config()
            .resumable
            .as_ref()
            .expect("only resumable agents");
        let mut messages = instance.messages.clone();
        messages.push(side_message(side.receives_messages, text(input)?));
        self.converse(sub, &instance.agent, name, messages, input, cx)
            .await
    }

    /// Runs the instance on `messages` (or resumes its paused run), one message at a time per
    /// instance, and keeps its thread.
    async fn converse(
        &self,
        sub: &SubagentTool,
        agent_name: &str,
        name: &str,
        messages: Vec<Message>,
        input: &Value,
        cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let lock = {
            let mut busy = self.set.busy.lock().unwrap_or_else(|p| p.into_inner());
            busy.entry(name.to_string()).or_default().clone()
        };
        let _turn = lock.lock().await;
        let mut child = child_input(cx, messages, vec![format!("name:{name}")]);
        child.variables = scoped_values(sub.config(), cx);
        child.defaults = sub.defaults.clone();
        let output = match run_child(sub.agent(), child, cx, input, "Sub-agent").await? {
            ChildEnd::Done(output) => output,
            ChildEnd::Paused(pause) => return Err(pause),
        };
        let instance = Instance {
            agent: agent_name.to_string(),
            messages: output.messages.clone(),
        };
        save(cx.state(), name, &instance);
        let explicit = sub
            .config()
            .resumable
            .as_ref()
            .is_some_and(|r| r.parent_communication == ParentCommunication::Explicit);
        if explicit {
            // Only what the instance sends with notify_parent reaches the parent.
            return Ok(ToolOutput::text(format!(
                "Message delivered to \"{name}\"; it will report back when it has something \
                 to say."
            )));
        }
        Ok(ToolOutput::text(answer(name, &output)))
    }
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
        if !self.create {
            return true;
        }
        let instances = instances(&scope.state);
        self.set.agents.iter().any(|(name, sub)| {
            let max = sub
                .config()
                .resumable
                .as_ref()
                .and_then(|r| r.max_instances);
            max.is_none_or(|max| {
                instances.values().filter(|i| i.agent == *name).count() < max as usize
            })
        })
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(resume) = cx.resume() {
            // A paused instance: its thread is in the saved run.
            let name = instance_name(&input)?.to_string();
            let agent_name = match (self.create, input.get("agent").and_then(Value::as_str)) {
                (true, Some(agent)) => agent.to_string(),
                (true, None) => self.set.agents[0].0.clone(),
                (false, _) => instances(cx.state())
                    .get(&name)
                    .map(|i| i.agent.clone())
                    .unwrap_or_else(|| self.set.agents[0].0.clone()),
            };
            let sub = self.agent(&agent_name)?;
            let messages = resume.run.messages.clone();
            return self
                .converse(sub, &agent_name, &name, messages, &input, cx)
                .await;
        }
        if self.create {
            self.create(&input, cx).await
        } else {
            self.message(&input, cx).await
        }
    }
}

/// The instances in the session state.
fn instances(state: &SessionState) -> HashMap<String, Instance> {
    state
        .get(SUBAGENTS_STATE_KEY)
        .and_then(|s| s.get("instances").cloned())
        .and_then(|i| serde_json::from_value(i).ok())
        .unwrap_or_default()
}

fn save(state: &SessionState, name: &str, instance: &Instance) {
    let value = serde_json::to_value(instance).unwrap_or(Value::Null);
    state.update(|map| {
        let root = map.entry(SUBAGENTS_STATE_KEY).or_insert_with(|| json!({}));
        if !root.is_object() {
            *root = json!({});
        }
        let instances = root
            .as_object_mut()
            .expect("an object")
            .entry("instances")
            .or_insert_with(|| json!({}));
        if !instances.is_object() {
            *instances = json!({});
        }
        instances
            .as_object_mut()
            .expect("an object")
            .insert(name.to_string(), value);
    });
}

fn instance_name(input: &Value) -> Result<&str, ToolError> {
    match input.get("name").and_then(Value::as_str).map(str::trim) {
        Some(name) if !name.is_empty() => Ok(name),
        _ => Err(ToolError::new(
            "INVALID_INPUT",
            "A sub-agent instance needs a non-empty \"name\".",
        )),
    }
}

fn text(input: &Value) -> Result<String, ToolError> {
    match input.get("message").and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => Ok(text.to_string()),
        _ => Err(ToolError::new(
            "INVALID_INPUT",
            "The message to the sub-agent must be a non-empty string in \"message\".",
        )),
    }
}

/// The parent's message as the receiving side sees it (seed 004's `receives_messages`).
fn side_message(side: Side, text: String) -> Message {
    match side {
        Side::SideA => Message::user(text),
        Side::SideB => Message::assistant(text),
    }
}

/// `subagent_env_required` when the sub-agent's tools declare required scoped variables that
/// neither the sub-agent nor the per-instance values provide. The deferred start is recorded
/// in the session state under `subagents.deferred.<request id>` for the service to boot once
/// an operator provides the values.
fn env_required(
    sub: &SubagentTool,
    agent_name: &str,
    name: &str,
    input: &Value,
    cx: &ToolContext,
) -> Result<(), ToolError> {
    let provided = scoped_values(sub.config(), cx);
    let own = sub.agent().variables();
    let mut missing = Vec::new();
    for tool in sub.agent().tools().iter() {
        for decl in &tool.meta().variables {
            let set = provided.contains_key(&decl.name) || own.contains_key(&decl.name);
            if decl.scoped
                && decl.required
                && !set
                && !missing
                    .iter()
                    .any(|m: &Value| m["name"] == decl.name.as_str())
            {
                missing.push(json!({
                    "name": decl.name,
                    "type": if decl.kind == toolsmith_core::VariableKind::Secret { "secret" } else { "text" },
                    "description": decl.description,
                }));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let request_id = format!("req_{}", uuid::Uuid::new_v4().simple());
    let thread = cx.thread_id().unwrap_or("{parent_thread_id}");
    let endpoint = format!("/threads/{thread}/variables/{request_id}");
    cx.state().update(|map| {
        let root = map.entry(SUBAGENTS_STATE_KEY).or_insert_with(|| json!({}));
        if let Some(root) = root.as_object_mut() {
            let deferred = root.entry("deferred").or_insert_with(|| json!({}));
            if let Some(deferred) = deferred.as_object_mut() {
                deferred.insert(
                    request_id.clone(),
                    json!({"agent": agent_name, "name": name, "input": input}),
                );
            }
        }
    });
    let names: Vec<&str> = missing.iter().filter_map(|m| m["name"].as_str()).collect();
    Err(ToolError::new(
        SUBAGENT_ENV_REQUIRED,
        format!(
            "Sub-agent \"{agent_name}\" needs the variable{} {} before instance \"{name}\" can \
             start. An operator must provide {} (request {request_id}); the instance starts \
             once they are set.",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" },
        ),
    )
    .with_details(json!({
        "requestId": request_id,
        "agent": agent_name,
        "name": name,
        "variables": missing,
        "endpoints": {"get": endpoint, "post": endpoint},
    })))
}
