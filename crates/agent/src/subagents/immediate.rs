//! The Standard Agents spec's `immediate` sub-agents: started as the run begins, before the first
//! model step, through the run's start calls ([`StartCalls`]).

use serde_json::{Map, Value};
use toolsmith_core::{Message, ModelToolCall, Role, SharedTool, StartCalls, Toolset, Variables};

use super::instances::asks_for_agent;
use super::{SUBAGENT_CREATE, SubagentConfig, SubagentTool};

/// An immediate sub-agent's start (offered through [`Tool::start_calls`] when
/// [`SubagentConfig::immediate`] is on): one call on a thread that has no model turn yet, with
/// the id `immediate_<tool>`. The task is the `descriptionEnv` variable's value, else the
/// thread's last user message; the instance name the `nameEnv` variable's. Those two are the
/// only variables a model may see: `scopedEnv` values go to the child's tools alone (copied by
/// the tool when the call runs).
///
/// [`Tool::start_calls`]: toolsmith_core::Tool::start_calls
impl StartCalls for SubagentTool {
    fn calls(
        &self,
        entry: &SharedTool,
        tools: &Toolset,
        messages: &[Message],
        variables: &Variables,
    ) -> Vec<ModelToolCall> {
        if messages.iter().any(|m| m.role == Role::Assistant) {
            return Vec::new();
        }
        let env = self.config().immediate.env();
        let from = |name: Option<&String>| Some(variables.get(name?)?.to_string());
        let task = from(env.and_then(|e| e.description_env.as_ref())).unwrap_or_else(|| {
            messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(Message::text)
                .unwrap_or_default()
        });
        let name = from(env.and_then(|e| e.name_env.as_ref()));
        let tool_name = entry.spec().name();
        let (target, input) = call_input(self.config(), tool_name, task, name, tools);
        vec![ModelToolCall::new(
            format!("immediate_{tool_name}"),
            target,
            Value::Object(input).to_string(),
        )]
    }
}

/// The tool to call and its input: the sub-agent itself, or `subagent_create` for a resumable
/// one (named after the tool when `nameEnv` gives no name; `agent` only when that tool asks
/// which agent, with several resumable sub-agents).
fn call_input(
    config: &SubagentConfig,
    tool_name: &str,
    task: String,
    name: Option<String>,
    tools: &Toolset,
) -> (String, Map<String, Value>) {
    let mut input = Map::new();
    if config.resumable.is_some() {
        if asks_for_agent(tools) {
            input.insert("agent".into(), tool_name.into());
        }
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
