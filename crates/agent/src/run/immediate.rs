//! Seed 004's `immediate` sub-agents: started as the run begins, before the first model step.

use serde_json::{Map, Value};
use toolsmith_core::{Message, ModelToolCall, Part, Role, ToolCallPart, Toolset, Variables};

use super::Run;
use crate::prepare::prepare;
use crate::subagents::{SUBAGENT_CREATE, SubagentConfig, SubagentTool};
use crate::{RunErrorKind, StepResult};

/// The calls that start the immediate sub-agents of `tools` on a thread that has no model
/// turn yet. The task is the `descriptionEnv` variable's value, else the thread's last user
/// message; the instance name the `nameEnv` variable's. Those two are the only variables a
/// model may see: `scopedEnv` values go to the child's tools alone (copied by the tool).
pub(super) fn immediate_calls(
    tools: &Toolset,
    messages: &[Message],
    variables: &Variables,
) -> Vec<ModelToolCall> {
    if messages.iter().any(|m| m.role == Role::Assistant) {
        return Vec::new();
    }
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(Message::text)
        .unwrap_or_default();
    tools
        .iter()
        .filter_map(|tool| {
            let sub = tool.as_any()?.downcast_ref::<SubagentTool>()?;
            let config = sub.config();
            if !config.immediate.is_on() {
                return None;
            }
            let env = config.immediate.env();
            let from = |name: Option<&String>| Some(variables.get(name?)?.to_string());
            let task =
                from(env.and_then(|e| e.description_env.as_ref())).unwrap_or(last_user.clone());
            let name = from(env.and_then(|e| e.name_env.as_ref()));
            let tool_name = tool.spec().name();
            let (target, input) = call_input(config, tool_name, task, name);
            Some(ModelToolCall::new(
                format!("immediate_{tool_name}"),
                target,
                Value::Object(input).to_string(),
            ))
        })
        .collect()
}

/// The tool to call and its input: the sub-agent itself, or `subagent_create` for a resumable
/// one (named after the tool when `nameEnv` gives no name).
fn call_input(
    config: &SubagentConfig,
    tool_name: &str,
    task: String,
    name: Option<String>,
) -> (String, Map<String, Value>) {
    let mut input = Map::new();
    if config.resumable.is_some() {
        input.insert("agent".into(), tool_name.into());
        input.insert(
            "name".into(),
            name.unwrap_or_else(|| tool_name.to_string()).into(),
        );
        input.insert("message".into(), task.into());
        return (SUBAGENT_CREATE.to_string(), input);
    }
    input.insert(config.task_property().into(), task.into());
    if let (Some(property), Some(name)) = (&config.init_agent_name_property, name) {
        input.insert(property.clone(), name.into());
    }
    (tool_name.to_string(), input)
}

impl Run {
    /// Runs the immediate calls as a turn of their own: an assistant message with the calls,
    /// then their results, under the usual policy (approval included) before the first step.
    pub(super) async fn start_immediate(
        &mut self,
        calls: Vec<ModelToolCall>,
    ) -> Result<(), RunErrorKind> {
        let single = self
            .tools
            .get(SUBAGENT_CREATE)
            .is_some_and(|t| t.spec().input_schema()["properties"].get("agent").is_none());
        let prepared: Vec<_> = calls
            .into_iter()
            .map(|mut call| {
                if single {
                    // One resumable agent: subagent_create takes no `agent`.
                    if let Ok(Value::Object(mut input)) = serde_json::from_str(&call.input) {
                        input.remove("agent");
                        call.input = Value::Object(input).to_string();
                    }
                }
                prepare(&call, &self.tools)
            })
            .collect();
        let parts = prepared
            .iter()
            .map(|call| {
                Part::ToolCall(ToolCallPart {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    input: call.input.clone(),
                    provider_executed: false,
                    provider_metadata: Default::default(),
                })
            })
            .collect();
        self.request
            .messages
            .push(Message::new(Role::Assistant, parts));
        let mut result = StepResult::default();
        self.execute(0, prepared, &mut result).await?;
        self.usage += self.scope.usage.take();
        Ok(())
    }
}
