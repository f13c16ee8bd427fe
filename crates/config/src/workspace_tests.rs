//! The `workspace` key: permission modes, read-only workspaces, the default tools.

use serde_json::{Value, json};
use toolsmith_core::{Approval, ToolError, Toolset, from_fn};

use crate::{AgentConfig, BUILTIN_TOOLS, BuildContext, ModelConfig, ParentAgent, WebhookPolicy};

/// Stand-ins for every built-in, none of them asking.
fn all() -> Toolset {
    let mut tools = Toolset::new();
    for name in BUILTIN_TOOLS {
        tools.add(from_fn(*name, "A built-in.", |_: Value, _cx| async move {
            Ok::<_, ToolError>("ok")
        }));
    }
    tools
}

fn config(value: Value) -> AgentConfig {
    AgentConfig::from_value(value).unwrap()
}

fn err(value: Value) -> String {
    AgentConfig::from_value(value).unwrap_err().to_string()
}

fn names(tools: &Toolset) -> Vec<&str> {
    tools.names().collect()
}

/// The names of the tools of `tools` that ask on every call.
fn asking(tools: &Toolset) -> Vec<&str> {
    tools
        .iter()
        .filter(|t| matches!(t.meta().approval, Approval::Always))
        .map(|t| t.spec().name())
        .collect()
}

#[test]
fn the_block_parses_with_its_defaults_and_refuses_bad_values() {
    let workspace = config(json!({"workspace": {}})).workspace.unwrap();
    assert_eq!(workspace, crate::WorkspaceConfig::default());
    assert_eq!(workspace.permission_mode, crate::PermissionMode::Ask);
    assert!(!workspace.read_only);
    assert_eq!(config(json!({})).workspace, None);
    let cases = [
        (
            json!({"workspace": true}),
            "config.workspace must be an object",
        ),
        (
            json!({"workspace": {"permissionMode": "auto"}}),
            "config.workspace.permissionMode must be \"ask\" or \"bypass\"",
        ),
        (
            json!({"workspace": {"readOnly": "yes"}}),
            "config.workspace.readOnly must be a boolean",
        ),
        (
            json!({"workspace": {"root": "/tmp"}}),
            "config.workspace.root is not a supported setting",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(err(value), message);
    }
}

#[test]
fn ask_mode_asks_before_write_edit_and_bash_only() {
    let tools = config(json!({"workspace": {"permissionMode": "ask"}}))
        .toolset(&all(), "openai")
        .unwrap();
    assert_eq!(asking(&tools), ["write", "edit", "bash"]);
    // The same with the mode left to its default, and for tools the config names.
    let tools = config(json!({"workspace": {}, "tools": {"read": {}, "grep": {}, "bash": {}}}))
        .toolset(&all(), "openai")
        .unwrap();
    assert_eq!(asking(&tools), ["bash"]);
}

#[test]
fn bypass_mode_asks_for_nothing_but_what_asks_on_its_own() {
    let tools = config(json!({"workspace": {"permissionMode": "bypass"}}))
        .toolset(&all(), "openai")
        .unwrap();
    assert!(asking(&tools).is_empty());
    // Fail closed: a tool's own `needsApproval: true` still asks.
    let tools = config(json!({"workspace": {"permissionMode": "bypass"},
                              "tools": {"write": {"needsApproval": true}, "bash": {}}}))
    .toolset(&all(), "openai")
    .unwrap();
    assert_eq!(asking(&tools), ["write"]);
    // A built-in whose caller made it ask keeps asking: bypass adds nothing, removes nothing.
    let given = all().map_meta("bash", |meta| meta.approval(Approval::Always));
    let tools = config(json!({"workspace": {"permissionMode": "bypass"}}))
        .toolset(&given, "openai")
        .unwrap();
    assert_eq!(asking(&tools), ["bash"]);
}

#[test]
fn a_config_without_tools_offers_the_workspace_tools_not_every_built_in() {
    let tools = config(json!({})).toolset(&all(), "openai").unwrap();
    assert_eq!(
        names(&tools),
        ["read", "write", "edit", "glob", "grep", "bash"]
    );
    let tools = config(json!({"workspace": {"readOnly": true}}))
        .toolset(&all(), "openai")
        .unwrap();
    assert_eq!(names(&tools), ["read", "glob"]);
    // The others are still there to name.
    let tools = config(json!({"tools": {"calculator": {}, "run_code": {}}}))
        .toolset(&all(), "openai")
        .unwrap();
    assert_eq!(names(&tools), ["calculator", "run_code"]);
}

#[test]
fn a_read_only_workspace_refuses_every_other_built_in_by_name() {
    for name in ["write", "edit", "grep", "bash", "run_code", "calculator"] {
        let value = json!({"workspace": {"readOnly": true}, "tools": {name: {}}});
        assert_eq!(
            err(value),
            format!("config.tools.{name} is not available in a read-only workspace")
        );
    }
    // read and glob are offered; a disabled entry names nothing.
    let read_only = config(json!({"workspace": {"readOnly": true},
                                  "tools": {"read": {}, "glob": {}, "write": {"enabled": false}}}));
    let tools = read_only.toolset(&all(), "openai").unwrap();
    assert_eq!(names(&tools), ["read", "glob"]);
    // Unknown names are refused as before, whatever the workspace.
    assert_eq!(
        err(json!({"workspace": {"readOnly": true}, "tools": {"shell": {}}})),
        "config.tools.shell is not a supported tool"
    );
}

#[test]
fn only_the_top_level_config_sets_the_workspace() {
    let message = err(
        json!({"subagents": [{"name": "helper", "description": "Helps.",
        "config": {"workspace": {"readOnly": false}}}]}),
    );
    assert_eq!(
        message,
        "config.subagents[0].config: config.workspace: only the top-level config sets the \
         workspace (sub-agents and prompts share their parent's)"
    );
}

#[tokio::test]
async fn sub_agents_and_prompts_share_the_workspace_s_offering() {
    use std::sync::Arc;
    use toolsmith_providers::ScriptedModel;

    let lookup = |_: &str| None;
    let resolve = |_: &ModelConfig| -> Result<_, String> { unreachable!() };
    let all = all();
    let cx = BuildContext {
        builtins: &all,
        resolve: &resolve,
        lookup: &lookup,
        webhooks: WebhookPolicy::any(),
        wrap: None,
        mcp: None,
        sandboxed: None,
    };
    let parent = ParentAgent {
        model: Arc::new(ScriptedModel::new([])),
        provider: "scripted".into(),
        approval: None,
    };
    let prompt = |tools: Value| {
        json!({"workspace": {"readOnly": true}, "tools": {"read": {}},
               "prompts": [{"name": "p", "description": "d", "instructions": "i", "tools": tools}]})
    };
    // The prompt's own `write` is not offered in its parent's read-only workspace.
    let top = config(prompt(json!({"write": {}})));
    let tools = top.toolset(&all, "scripted").unwrap();
    let message = top.agent_builder(tools, &cx, &parent).err().unwrap();
    assert_eq!(
        message.to_string(),
        "config.prompts[0] (p): config.tools.write is not available in this workspace"
    );
    let top = config(prompt(json!({"glob": {}})));
    let tools = top.toolset(&all, "scripted").unwrap();
    assert!(top.agent_builder(tools, &cx, &parent).is_ok());
}
