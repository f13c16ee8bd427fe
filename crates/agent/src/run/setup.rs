//! What a run needs before its first step: its variables, and the error of a run that could
//! not start.

use std::collections::{HashMap, HashSet};

use toolsmith_core::{
    Message, ModelRequest, SharedTool, ToolError, Toolset, VariableCell, Variables,
};

use crate::agent::AgentInner;
use crate::{ExecutionPolicy, RunError, RunErrorKind, RunOutput};

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

/// Where a run's variable values come from, besides its agent.
pub(super) struct Sources<'a> {
    /// Prompt-level values: a sub-agent's or prompt tool's own (the lowest precedence).
    pub(super) defaults: &'a HashMap<String, String>,
    /// The parent run's variables (a sub-agent's run).
    pub(super) inherited: Option<&'a VariableCell>,
    /// The run's own (the thread's): the highest precedence.
    pub(super) own: &'a HashMap<String, String>,
}

/// The run's variable cell: the variables resolved, a child of the parent run's cell for a
/// sub-agent (so the parent's later `set_variable`s reach it, but for the scoped names).
pub(super) fn variable_cell(
    agent: &AgentInner,
    sources: &Sources<'_>,
    tools: &Toolset,
) -> VariableCell {
    let variables = resolve_variables(agent, sources, tools);
    match sources.inherited {
        Some(parent) => parent.child(variables, scoped_names(agent, tools)),
        None => VariableCell::new(variables),
    }
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

/// The run's variables, in the Standard Agents spec's precedence, lowest first: the prompt's (a
/// sub-agent's or prompt tool's own values), the agent's, those inherited from a parent run (as the
/// parent thread's, minus the names the tools declare `scoped`), then the run's own. (Tool-level
/// values sit between the prompt's and the agent's, per call: `ToolContext::with_defaults`.)
/// Secret: what the tools and the agent declare so, and what the parent knew to be secret.
fn resolve_variables(agent: &AgentInner, sources: &Sources<'_>, tools: &Toolset) -> Variables {
    let declared = || {
        tools
            .iter()
            .flat_map(|t| t.meta().variables.iter())
            .chain(&agent.declared)
    };
    let prompt_only = || {
        sources.defaults.keys().map(String::as_str).filter(|name| {
            !agent.variables.contains_key(*name)
                && !sources.own.contains_key(*name)
                && sources
                    .inherited
                    .is_none_or(|p| p.current().get(name).is_none())
        })
    };
    let Some(parent) = sources.inherited.map(VariableCell::current) else {
        let mut variables = Variables::resolve(
            [sources.defaults, &agent.variables, sources.own],
            declared(),
        );
        variables.mark_prompt_level(prompt_only());
        return variables;
    };
    let scoped = scoped_names(agent, tools);
    let from_parent: HashMap<String, String> = parent
        .iter()
        .filter(|(name, _)| !scoped.contains(*name))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut variables = Variables::resolve(
        [
            sources.defaults,
            &agent.variables,
            &from_parent,
            sources.own,
        ],
        declared(),
    );
    variables.mark_secret(parent.secret_names());
    variables.mark_prompt_level(prompt_only());
    variables
}

/// `VARIABLES_REQUIRED` when `tool` declares required variables that have no value: the call
/// stops before it runs (as in the Standard Agents spec: execution cannot continue until they
/// resolve).
pub(super) fn missing_variables(tool: &SharedTool, variables: &Variables) -> Option<ToolError> {
    let env = &tool.meta().env;
    let mut missing = variables.missing(&tool.meta().variables);
    // The tool's own values count.
    missing.retain(|name| !env.iter().any(|(n, v)| n == name && !v.is_empty()));
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

/// Sets `request`'s `parallel_tool_calls` for the tools it offers: the agent's, when its builder
/// set one; else, as in the Standard Agents spec (`parallelToolCalls` defaults to false), `false`
/// when the calls run one at a time and tools are offered, marked as a default; else none (the
/// provider's default).
pub(super) fn parallel_tool_calls(request: &mut ModelRequest, agent: &AgentInner) {
    let default = match (agent.parallel_tool_calls, agent.policy) {
        (Some(_), _) => None,
        (None, ExecutionPolicy::Sequential) if !request.tools.is_empty() => Some(false),
        (None, _) => None,
    };
    request.parallel_tool_calls = agent.parallel_tool_calls.or(default);
    request.parallel_tool_calls_defaulted = default.is_some();
}

/// The tools the run declares: all of them, or those the agent's router picks for the run's
/// query (the last user message), with the tools of calls the run resumes, the sub-agent
/// control tools and the artifact tools kept; and the router's tokens.
pub(super) async fn declared(
    agent: &AgentInner,
    tools: &Toolset,
    messages: &[Message],
    resumed: impl Iterator<Item = String>,
) -> (Toolset, toolsmith_core::Usage) {
    let Some(router) = &agent.router else {
        return (tools.clone(), toolsmith_core::Usage::default());
    };
    let query = messages
        .iter()
        .rev()
        .find(|m| m.role == toolsmith_core::Role::User)
        .map(Message::text)
        .unwrap_or_default();
    let mut keep: HashSet<String> = resumed.collect();
    keep.extend(
        [
            crate::SUBAGENT_CREATE,
            crate::SUBAGENT_MESSAGE,
            crate::GET_ARTIFACT,
            crate::LIST_ARTIFACTS,
        ]
        .map(str::to_string),
    );
    router.route(tools, &query, &keep).await
}
