//! What a run needs before its first step: its variables, and the error of a run that could
//! not start.

use std::collections::{HashMap, HashSet};

use toolsmith_core::{Message, SharedTool, ToolError, Toolset, VariableCell, Variables};

use crate::agent::AgentInner;
use crate::{RunError, RunErrorKind, RunOutput};

/// The error of a run that could not start: its thread as given.
pub(super) fn not_started(message: String, run_id: String, messages: Vec<Message>) -> RunError {
    RunError {
        kind: RunErrorKind::Config(message),
        output: Box::new(RunOutput {
            run_id,
            input_len: messages.len(),
            messages,
            ..Default::default()
        }),
    }
}

/// The run's variable cell: the variables resolved, a child of the parent run's cell for a
/// sub-agent (so the parent's later `set_variable`s reach it, but for the scoped names).
pub(super) fn variable_cell(
    agent: &AgentInner,
    inherited: Option<&VariableCell>,
    own: &HashMap<String, String>,
    tools: &Toolset,
) -> VariableCell {
    let Some(parent) = inherited else {
        return VariableCell::new(resolve_variables(agent, None, own, tools));
    };
    let variables = resolve_variables(agent, Some(&parent.current()), own, tools);
    parent.child(variables, scoped_names(agent, tools))
}

/// The names the agent's tools (and the agent) declare `scoped`.
fn scoped_names(agent: &AgentInner, tools: &Toolset) -> HashSet<String> {
    tools
        .iter()
        .flat_map(|t| t.meta().variables.iter())
        .chain(&agent.declared)
        .filter(|d| d.scoped)
        .map(|d| d.name.clone())
        .collect()
}

/// The run's variables (seed 004's precedence): the agent's, then those inherited from a parent
/// run (as the parent thread's, minus the names the tools declare `scoped`), then the run's
/// own. Secret: what the tools declare so, and what the parent knew to be secret.
fn resolve_variables(
    agent: &AgentInner,
    inherited: Option<&Variables>,
    own: &HashMap<String, String>,
    tools: &Toolset,
) -> Variables {
    let declared = || {
        tools
            .iter()
            .flat_map(|t| t.meta().variables.iter())
            .chain(&agent.declared)
    };
    let agent = &agent.variables;
    let Some(parent) = inherited else {
        return Variables::resolve([agent, own], declared());
    };
    let scoped: HashSet<&str> = declared()
        .filter(|d| d.scoped)
        .map(|d| d.name.as_str())
        .collect();
    let from_parent: HashMap<String, String> = parent
        .iter()
        .filter(|(name, _)| !scoped.contains(name))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut variables = Variables::resolve([agent, &from_parent, own], declared());
    variables.mark_secret(parent.secret_names());
    variables
}

/// `VARIABLES_REQUIRED` when `tool` declares required variables that have no value: the call
/// stops before it runs (seed 004: execution cannot continue until they resolve).
pub(super) fn missing_variables(tool: &SharedTool, variables: &Variables) -> Option<ToolError> {
    let missing = variables.missing(&tool.meta().variables);
    if missing.is_empty() {
        return None;
    }
    Some(
        ToolError::new(
            "VARIABLES_REQUIRED",
            format!(
                "Tool \"{}\" needs the variable{} {}, which {} not set.",
                tool.spec().name(),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" },
            ),
        )
        .with_details(serde_json::json!({ "missing": missing })),
    )
}
