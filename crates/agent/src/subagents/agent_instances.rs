//! [`AgentInstances`]: the instances of one resumable sub-agent in one run, behind the
//! lifecycle tools (`subagent_create`, `subagent_message`). Their threads live in the session
//! state under `subagents.instances.<name>`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith_core::{
    Message, RunScope, SessionState, SharedTool, Tool, ToolContext, ToolError, ToolKind, ToolMeta,
    ToolOutput, ToolSpec, VariableKind,
};

use super::child_run::{ChildEnd, child_input, run_child};
use super::tool::{answer, scoped_values};
use super::{
    ParentCommunication, Resumable, SUBAGENT_CREATE, SUBAGENT_ENV_REQUIRED, SUBAGENT_MESSAGE,
    SUBAGENTS_STATE_KEY, Side, SubagentTool,
};

/// One instance as the session state keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Instance {
    /// The resumable sub-agent it is an instance of (its name in the run).
    pub(super) agent: String,
    /// Its thread.
    messages: Vec<Message>,
}

/// The instances of one resumable sub-agent in one run: starting one, messaging one, resuming
/// one that paused, and whether there is room for another.
///
/// A tool only so that it can travel in a toolset (see [`PrepareTools`] on
/// [`SubagentTool`]): it is never offered. The lifecycle tools call it with their own call's
/// input and context, whose tool name says what the call is: `subagent_create` starts an
/// instance, `subagent_message` messages one.
///
/// [`PrepareTools`]: toolsmith_core::PrepareTools
pub(super) struct AgentInstances {
    /// The sub-agent's spec as the run's toolset held it: its name there, its description.
    spec: ToolSpec,
    /// Its runtime metadata there.
    meta: ToolMeta,
    sub: SubagentTool,
    /// Instance name → its lock: messages to a busy instance wait their turn.
    busy: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl AgentInstances {
    /// The instances of the resumable sub-agent `sub`, which the run's toolset holds as `entry`.
    pub(super) fn new(entry: &SharedTool, sub: SubagentTool) -> Self {
        AgentInstances {
            spec: entry.spec().clone(),
            meta: entry.meta().clone(),
            sub,
            busy: Mutex::default(),
        }
    }

    fn name(&self) -> &str {
        self.spec.name()
    }

    fn resumable(&self) -> &Resumable {
        self.sub
            .config()
            .resumable
            .as_ref()
            .expect("only resumable sub-agents have instances")
    }

    /// Starts an instance: checks the name, the limit and the scoped variables.
    async fn create(&self, input: &Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let agent_name = self.name();
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
        let resumable = self.resumable();
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
        env_required(&self.sub, agent_name, name, input, cx)?;
        let first = side_message(resumable.receives_messages, text(input)?);
        self.converse(name, vec![first], input, cx).await
    }

    /// Sends an existing instance a message.
    async fn message(&self, input: &Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = instance_name(input)?;
        let instances = instances(cx.state());
        let Some(instance) = instances.get(name) else {
            return Err(not_found(name, &instances));
        };
        let mut messages = instance.messages.clone();
        messages.push(side_message(
            self.resumable().receives_messages,
            text(input)?,
        ));
        self.converse(name, messages, input, cx).await
    }

    /// Runs the instance on `messages` (or resumes its paused run), one message at a time per
    /// instance, and keeps its thread.
    async fn converse(
        &self,
        name: &str,
        messages: Vec<Message>,
        input: &Value,
        cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let lock = {
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            busy.entry(name.to_string()).or_default().clone()
        };
        let _turn = lock.lock().await;
        let mut child = child_input(cx, messages, vec![format!("name:{name}")]);
        child.variables = scoped_values(self.sub.config(), cx);
        child.defaults = self.sub.defaults.clone();
        let output = match run_child(self.sub.agent(), child, cx, input, "Sub-agent").await? {
            ChildEnd::Done(output) => output,
            ChildEnd::Paused(pause) => return Err(pause),
        };
        let instance = Instance {
            agent: self.name().to_string(),
            messages: output.messages.clone(),
        };
        save(cx.state(), name, &instance);
        if self.resumable().parent_communication == ParentCommunication::Explicit {
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
impl Tool for AgentInstances {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn kind(&self) -> &ToolKind {
        &ToolKind::Agent
    }

    /// Whether the sub-agent has room for another instance (below its `maxInstances`).
    fn offered(&self, scope: &RunScope) -> bool {
        let instances = instances(&scope.state);
        self.resumable().max_instances.is_none_or(|max| {
            instances
                .values()
                .filter(|i| i.agent == self.name())
                .count()
                < max as usize
        })
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(resume) = cx.resume() {
            // A paused instance: its thread is in the saved run.
            let name = instance_name(&input)?;
            let messages = resume.run.messages.clone();
            return self.converse(name, messages, &input, cx).await;
        }
        if cx.tool_name() == SUBAGENT_CREATE {
            self.create(&input, cx).await
        } else {
            self.message(&input, cx).await
        }
    }
}

/// The instances in the session state.
pub(super) fn instances(state: &SessionState) -> HashMap<String, Instance> {
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

/// The instance name of a lifecycle tool's input.
pub(super) fn instance_name(input: &Value) -> Result<&str, ToolError> {
    match input.get("name").and_then(Value::as_str).map(str::trim) {
        Some(name) if !name.is_empty() => Ok(name),
        _ => Err(ToolError::new(
            "INVALID_INPUT",
            "A sub-agent instance needs a non-empty \"name\".",
        )),
    }
}

/// `INSTANCE_NOT_FOUND` for a message to `name`, listing the instances there are.
pub(super) fn not_found(name: &str, instances: &HashMap<String, Instance>) -> ToolError {
    let mut names: Vec<&str> = instances.keys().map(String::as_str).collect();
    names.sort_unstable();
    ToolError::new(
        "INSTANCE_NOT_FOUND",
        format!(
            "No sub-agent instance is named \"{name}\". {} Start one with {SUBAGENT_CREATE}.",
            if names.is_empty() {
                "None has been started.".to_string()
            } else {
                format!("Instances: {}.", names.join(", "))
            }
        ),
    )
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

/// The parent's message as the receiving side sees it (per `receives_messages`).
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
                    "type": if decl.kind == VariableKind::Secret { "secret" } else { "text" },
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
