//! [`PromptTool`]: a prompt exposed as a tool, its result shaped by the Standard Agents spec's
//! `SubpromptConfig`.

use std::collections::HashMap;
use std::fmt::Write as _;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolsmith_core::{Tool, ToolContext, ToolError, ToolKind, ToolMeta, ToolOutput, ToolSpec};

use super::SubagentConfig;
use super::child_run::{ChildEnd, child_input, child_run_id, run_child};
use super::tool::{input_schema, pass_arguments, task_message};
use crate::attachments::{first_message, hand_back};
use crate::{Agent, CallOutcome, RunOutput};

/// The Standard Agents spec's `SubpromptConfig` without its `name`: what a prompt tool's result
/// carries, and which input properties start it. The JSON form uses the Standard Agents spec's
/// camelCase keys; unknown keys are rejected.
///
/// ```
/// use toolsmith_agent::SubpromptConfig;
///
/// let config: SubpromptConfig =
///     serde_json::from_str(r#"{"includeToolCalls": false, "initUserMessageProperty": "q"}"#)
///         .unwrap();
/// assert!(config.include_text_response && config.include_errors && !config.include_tool_calls);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubpromptConfig {
    /// The prompt's final text (default true).
    #[serde(default = "yes")]
    pub include_text_response: bool,
    /// Each tool call the prompt made, with its result (default true).
    #[serde(default = "yes")]
    pub include_tool_calls: bool,
    /// Tool errors and the prompt's own failure (default true). Off: failed calls are left
    /// out, and a failed prompt says only that it failed.
    #[serde(default = "yes")]
    pub include_errors: bool,
    /// The input property whose value is the prompt's user message (default `prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_user_message_property: Option<String>,
    /// The input property holding `/attachments/<file>` paths for the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_attachments_property: Option<String>,
    /// The tool's own arguments (`inputSchema`), merged with the init properties and passed
    /// on to the prompt as for a sub-agent ([`SubagentConfig::input_schema`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

fn yes() -> bool {
    true
}

impl Default for SubpromptConfig {
    fn default() -> Self {
        SubpromptConfig {
            include_text_response: true,
            include_tool_calls: true,
            include_errors: true,
            init_user_message_property: None,
            init_attachments_property: None,
            input_schema: None,
        }
    }
}

/// A prompt (an agent: instructions, model, tools) exposed as a tool. Each call runs it on the
/// task property's value alone, like a [`SubagentTool`](crate::SubagentTool) (forwarded
/// parts, folded usage, pauses that surface on the parent), and returns a result shaped by its
/// [`SubpromptConfig`]: the text, the tool calls with their results, the errors.
///
/// ```
/// use serde_json::json;
/// use toolsmith_agent::{Agent, PromptTool, SubpromptConfig};
/// use toolsmith_providers::{ScriptedModel, Turn};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let summarise = Agent::builder(ScriptedModel::new([Turn::text("Short.")]))
///     .instructions("Summarise the text in one word.")
///     .build();
/// let tool = PromptTool::new("summarise", "Summarises.", summarise, SubpromptConfig::default());
/// let parent = Agent::builder(ScriptedModel::new([
///     Turn::call("summarise", json!({"prompt": "A long text."})),
///     Turn::text("done"),
/// ]))
/// .tool(tool)
/// .build();
/// let out = parent.run("go").await.unwrap();
/// assert_eq!(out.steps[0].tool_results[0].output_value(), Some(&json!("Short.")));
/// # });
/// ```
pub struct PromptTool {
    spec: ToolSpec,
    /// The prompt's effect class, from its agent's tools.
    meta: ToolMeta,
    agent: Agent,
    config: SubpromptConfig,
    /// The task and attachment properties, in the sub-agent form the shared code reads.
    shape: SubagentConfig,
    /// Prompt-level variable values for the prompt's runs.
    defaults: HashMap<String, String>,
}

impl PromptTool {
    /// The prompt `agent` as the tool `name`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        agent: Agent,
        config: SubpromptConfig,
    ) -> Self {
        let shape = SubagentConfig {
            init_user_message_property: config.init_user_message_property.clone(),
            init_attachments_property: config.init_attachments_property.clone(),
            input_schema: config.input_schema.clone(),
            ..SubagentConfig::default()
        };
        PromptTool {
            spec: ToolSpec::new(name.into(), input_schema(&shape, false))
                .with_description(description),
            meta: agent.effect_meta(),
            agent,
            config,
            shape,
            defaults: HashMap::new(),
        }
    }

    /// A prompt-level variable value (the lowest precedence: the prompt agent's, the
    /// parent's variables and the thread's win over it).
    pub fn with_variable(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.defaults.insert(name.into(), value.into());
        self
    }

    /// The configuration.
    pub fn config(&self) -> &SubpromptConfig {
        &self.config
    }

    /// The result the model sees: what the include flags let through.
    fn shape(&self, output: &RunOutput) -> String {
        let mut text = String::new();
        if self.config.include_tool_calls {
            for result in output.steps.iter().flat_map(|s| &s.tool_results) {
                let shown = match &result.outcome {
                    CallOutcome::Output(out) => out.model.to_text(),
                    CallOutcome::Error(e) if self.config.include_errors => {
                        format!("error: {}", e.message())
                    }
                    _ => continue,
                };
                let _ = writeln!(
                    text,
                    "Tool call {}({}) → {shown}",
                    result.tool_name, result.input
                );
            }
        }
        if self.config.include_text_response && !output.text.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&output.text);
        }
        text
    }
}

#[async_trait]
impl Tool for PromptTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn kind(&self) -> &ToolKind {
        &ToolKind::Prompt
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let key = child_run_id(cx);
        let first = if cx.resume().is_some() {
            Vec::new()
        } else {
            let task = task_message(&self.shape, &input)?;
            let files = self.shape.init_attachments_property.as_deref();
            vec![first_message(task, files, &input, cx, &key)?]
        };
        let mut child = child_input(cx, first, Vec::new());
        pass_arguments(&mut child, &self.shape, &input);
        child.defaults = self.defaults.clone();
        match run_child(&self.agent, child, cx, &input, "Prompt").await {
            Ok(ChildEnd::Done(output)) => {
                Ok(ToolOutput::text(hand_back(self.shape(&output), cx, &key)))
            }
            Ok(ChildEnd::Paused(pause)) => Err(pause),
            Err(error) if self.config.include_errors => Err(error),
            Err(error) => Err(ToolError::new(
                error.code().to_string(),
                format!("Prompt \"{}\" failed.", cx.tool_name()),
            )),
        }
    }
}
