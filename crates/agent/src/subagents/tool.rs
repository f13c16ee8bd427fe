//! [`SubagentTool`]: an agent exposed as a tool (the Deuz SDK's `agentTool`, the Standard
//! Agents spec's sub-agents).

use std::collections::HashMap;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolsmith_core::{
    Message, PrepareTools, StartCalls, Tool, ToolContext, ToolError, ToolKind, ToolMeta,
    ToolOutput, ToolSpec,
};

use super::SubagentConfig;
use super::child_run::{ChildEnd, child_input, child_run_id, run_child};
use crate::attachments::{first_message, hand_back};
use crate::{Agent, RunOutput};

/// An agent exposed as a tool: each call runs the agent's whole loop one level down.
///
/// - Its parts are forwarded into the parent's stream as `nested` parts with the path of
///   sub-agent calls they came through.
/// - Approvals (and client tools) inside it pause the parent: they surface in the parent's
///   [`RunOutput::pending`] with the call's id at the head of their path, and answering them
///   on the parent ([`RunInput::with_approval`](crate::RunInput::with_approval)) resumes the
///   child, however deep.
/// - Its usage, server tool uses included, folds into the parent's; cancelling the parent
///   cancels it; it inherits the parent's variables but those its tools declare `scoped`.
/// - [`SubagentConfig`] shapes it: the task property, a `name:<value>` tag, `blocking: false`
///   (the result is queued to the parent later), the `optional` flag.
///
/// ```
/// use serde_json::json;
/// use toolsmith_agent::{Agent, SubagentTool};
/// use toolsmith_providers::{ScriptedModel, Turn};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let researcher = Agent::builder(ScriptedModel::new([Turn::text("Paris.")])).build();
/// let parent = Agent::builder(ScriptedModel::new([
///     Turn::call("researcher", json!({"prompt": "Capital of France?"})),
///     Turn::text("It is Paris."),
/// ]))
/// .tool(SubagentTool::new("researcher", "Looks things up.", researcher))
/// .build();
/// let out = parent.run("Where is the Louvre?").await.unwrap();
/// assert_eq!(out.steps[0].tool_results[0].output_value(), Some(&json!("Paris.")));
/// # });
/// ```
#[derive(Clone)]
pub struct SubagentTool {
    spec: ToolSpec,
    meta: ToolMeta,
    agent: Agent,
    config: SubagentConfig,
    /// Prompt-level variable values for the child's runs.
    pub(super) defaults: HashMap<String, String>,
}

impl SubagentTool {
    /// The agent as a tool with the default configuration: a blocking call whose input is
    /// `{"prompt": string}`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, agent: Agent) -> Self {
        SubagentTool::with_config(name, description, agent, SubagentConfig::default())
    }

    /// The agent as a tool configured by `config`.
    pub fn with_config(
        name: impl Into<String>,
        description: impl Into<String>,
        agent: Agent,
        config: SubagentConfig,
    ) -> Self {
        let spec =
            ToolSpec::new(name.into(), input_schema(&config, true)).with_description(description);
        let mut meta = agent.effect_meta();
        if let Some(flag) = &config.optional {
            meta = meta.optional(flag.clone());
        }
        SubagentTool {
            spec,
            meta,
            agent,
            config,
            defaults: HashMap::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SubagentConfig {
        &self.config
    }

    /// The agent it runs.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// What the model is told it does.
    pub fn description(&self) -> &str {
        self.spec.description()
    }

    /// A prompt-level variable value for the child's runs (the lowest precedence: the
    /// child's agent, the parent's variables and the thread's win over it).
    pub fn with_variable(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.defaults.insert(name.into(), value.into());
        self
    }

    /// Replaces the runtime metadata (approval, timeout…); the `optional` flag is kept.
    pub fn with_meta(mut self, meta: ToolMeta) -> Self {
        let optional = self.meta.optional.take();
        self.meta = meta;
        self.meta.optional = self.meta.optional.take().or(optional);
        self
    }
}

/// The input schema of a sub-agent (or prompt) tool: the task property as a required string,
/// then the name and attachments properties when configured, then the tool's own arguments
/// (`inputSchema`'s properties and required names; an own property named like an init
/// property gives way to it). No other property is accepted.
pub(super) fn input_schema(config: &SubagentConfig, with_name: bool) -> Value {
    let task = config.task_property();
    let mut properties = Map::new();
    let mut required = vec![Value::from(task)];
    properties.insert(
        task.to_string(),
        json!({
            "type": "string",
            "description": "The task, with everything needed to do it: the sub-agent sees \
                            nothing else of this conversation."
        }),
    );
    if let Some(name) = config
        .init_agent_name_property
        .as_deref()
        .filter(|_| with_name)
    {
        properties.insert(
            name.to_string(),
            json!({"type": "string", "minLength": 1, "description": "A short name for this instance."}),
        );
        required.push(name.into());
    }
    if let Some(files) = &config.init_attachments_property {
        properties.insert(
            files.clone(),
            json!({
                "type": "array",
                "items": {"type": "string"},
                "description": "Files to hand over, as /attachments/<file> paths."
            }),
        );
    }
    if let Some(own) = &config.input_schema {
        if let Some(Value::Object(declared)) = own.get("properties") {
            for (name, schema) in declared {
                if !properties.contains_key(name) {
                    properties.insert(name.clone(), schema.clone());
                }
            }
        }
        if let Some(Value::Array(names)) = own.get("required") {
            for name in names {
                if !required.contains(name) {
                    required.push(name.clone());
                }
            }
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// The tool's own arguments in a call's input (those `inputSchema` declares), in the schema's
/// order; `None` when the call gives none.
pub(super) fn own_arguments(config: &SubagentConfig, input: &Value) -> Option<Map<String, Value>> {
    let init = config.init_properties();
    let arguments: Map<String, Value> = config
        .own_arguments()
        .into_iter()
        .filter(|name| !init.iter().any(|(_, i)| i == name))
        .filter_map(|name| Some((name.to_string(), input.get(name)?.clone())))
        .collect();
    (!arguments.is_empty()).then_some(arguments)
}

/// Sets the child run's `arguments` metadata to the call's own arguments (removing a value
/// inherited from the parent's metadata).
pub(super) fn pass_arguments(child: &mut crate::RunInput, config: &SubagentConfig, input: &Value) {
    child.metadata.remove("arguments");
    if let Some(arguments) = own_arguments(config, input) {
        child
            .metadata
            .insert("arguments".into(), Value::Object(arguments));
    }
}

/// The child's first user message: the task property's value, then, when the call gives the
/// tool's own arguments, a line `Arguments: {…}` with them as compact JSON.
pub(super) fn task_message(config: &SubagentConfig, input: &Value) -> Result<Message, ToolError> {
    let property = config.task_property();
    match input.get(property).and_then(Value::as_str) {
        Some(task) if !task.trim().is_empty() => {
            Ok(Message::user(match own_arguments(config, input) {
                Some(arguments) => format!("{task}\n\nArguments: {}", Value::Object(arguments)),
                None => task.to_string(),
            }))
        }
        _ => Err(ToolError::new(
            "INVALID_INPUT",
            format!("The sub-agent needs its task as a non-empty string in \"{property}\"."),
        )),
    }
}

/// The child thread's tags: `name:<value>` from the name property.
pub(super) fn name_tags(config: &SubagentConfig, input: &Value) -> Vec<String> {
    config
        .init_agent_name_property
        .as_deref()
        .and_then(|p| input.get(p))
        .and_then(Value::as_str)
        .map(|name| vec![format!("name:{name}")])
        .unwrap_or_default()
}

/// The per-instance variables copied into the child (`immediate.scopedEnv`): the
/// parent's values of those names. Runtime-only: they reach the child's tools, never a model.
pub(super) fn scoped_values(config: &SubagentConfig, cx: &ToolContext) -> HashMap<String, String> {
    config
        .immediate
        .env()
        .map(|env| env.scoped_env.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|name| Some((name.clone(), cx.variable(name)?.to_string())))
        .collect()
}

/// What the model sees of a finished child: its last text.
pub(super) fn answer(tool_name: &str, output: &RunOutput) -> String {
    if output.text.trim().is_empty() {
        format!("Sub-agent \"{tool_name}\" finished without an answer.")
    } else {
        output.text.clone()
    }
}

#[async_trait]
impl Tool for SubagentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn kind(&self) -> &ToolKind {
        &ToolKind::Agent
    }

    /// A resumable sub-agent stands in for itself with the lifecycle tools.
    fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
        self.config
            .resumable
            .is_some()
            .then_some(self as &dyn PrepareTools)
    }

    /// An immediate sub-agent starts as the run begins.
    fn start_calls(&self) -> Option<&dyn StartCalls> {
        self.config
            .immediate
            .is_on()
            .then_some(self as &dyn StartCalls)
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = child_run_id(cx);
        let first = if cx.resume().is_some() {
            Vec::new()
        } else {
            let task = task_message(&self.config, &input)?;
            let files = self.config.init_attachments_property.as_deref();
            vec![first_message(task, files, &input, cx, &key)?]
        };
        let mut child = child_input(cx, first, name_tags(&self.config, &input));
        pass_arguments(&mut child, &self.config, &input);
        child.variables = scoped_values(&self.config, cx);
        child.defaults = self.defaults.clone();
        if !self.config.blocking {
            return Ok(super::background::spawn(
                self.agent.clone(),
                child,
                cx,
                input,
            ));
        }
        match run_child(&self.agent, child, cx, &input, "Sub-agent").await? {
            ChildEnd::Done(output) => Ok(ToolOutput::text(hand_back(
                answer(cx.tool_name(), &output),
                cx,
                &key,
            ))),
            ChildEnd::Paused(pause) => Err(pause),
        }
    }
}
