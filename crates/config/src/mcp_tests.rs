//! The `mcpServers` rules and `mcp:` entries.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolsmith_core::{SharedTool, ToolError, Toolset, from_fn};

use crate::{
    AgentConfig, McpSelection, McpServers, McpTools, McpTransport, ToolNames, WebhookPolicy,
};

fn servers(value: Value) -> Result<McpServers, String> {
    McpServers::from_json(&json!({"mcpServers": value}).to_string()).map_err(|e| e.to_string())
}

#[test]
fn every_bad_entry_is_named_by_its_path() {
    let cases = [
        (json!([]), "mcpServers must be an object"),
        (
            json!({"a b": {"command": "x"}}),
            "mcpServers.a b: a server's name is 1 to 32",
        ),
        (json!({"fs": "npx"}), "mcpServers.fs must be an object"),
        (
            json!({"fs": {}}),
            "mcpServers.fs: \"command\" (a stdio server) or \"url\"",
        ),
        (
            json!({"fs": {"command": "x", "url": "http://h/mcp"}}),
            "mcpServers.fs: give either \"command\"",
        ),
        (
            json!({"fs": {"command": " "}}),
            "mcpServers.fs.command must not be empty",
        ),
        (
            json!({"fs": {"command": "x", "args": "-v"}}),
            "mcpServers.fs.args must be an array of strings",
        ),
        (
            json!({"fs": {"command": "x", "env": {"A": 1}}}),
            "mcpServers.fs.env.A must be a string",
        ),
        (
            json!({"fs": {"command": "x", "autoApprove": []}}),
            "mcpServers.fs.autoApprove is not a supported setting",
        ),
        (
            json!({"fs": {"command": "x", "type": "http"}}),
            "mcpServers.fs.type is \"http\" but the entry has a \"command\"",
        ),
        (
            json!({"r": {"url": "http://h/sse", "type": "sse"}}),
            "mcpServers.r.type: the legacy SSE transport is not supported",
        ),
        (
            json!({"r": {"url": "ftp://h/mcp"}}),
            "mcpServers.r.url must be an http or https URL",
        ),
        (
            json!({"r": {"url": "http://h/mcp", "headers": {"Accept": "x"}}}),
            "mcpServers.r.headers.Accept is set by the MCP transport itself",
        ),
        (
            json!({"r": {"url": "http://h/mcp", "headers": {"X-A": "a\nb"}}}),
            "mcpServers.r.headers.X-A is not a valid header",
        ),
        (
            json!({"r": {"url": "http://h/mcp", "cwd": "/"}}),
            "mcpServers.r.cwd is a setting of stdio servers",
        ),
        (
            json!({"fs": {"command": "x", "timeoutMs": 0}}),
            "mcpServers.fs.timeoutMs must be an integer from 1 to 3600000",
        ),
        (
            json!({"fs": {"command": "x", "startupTimeoutMs": 3_600_001}}),
            "mcpServers.fs.startupTimeoutMs must be an integer from 1 to 3600000",
        ),
        (
            json!({"fs": {"command": "x", "readOnly": "all"}}),
            "mcpServers.fs.readOnly must be true, false or an array of tool names",
        ),
        (
            json!({"fs": {"command": "x", "allow": [1]}}),
            "mcpServers.fs.allow must be an array of tool names",
        ),
        (
            json!({"fs": {"command": "x", "prefix": "a.b"}}),
            "mcpServers.fs.prefix is at most 32 of",
        ),
        (
            json!({"fs": {"command": "x", "sandbox": {}}}),
            "mcpServers.fs.sandbox.root must be a directory's path",
        ),
        (
            json!({"fs": {"command": "x", "sandbox": {"root": "/", "net": true}}}),
            "mcpServers.fs.sandbox.net is not a supported setting",
        ),
        (
            json!({"fs": {"command": "x", "disabled": "yes"}}),
            "mcpServers.fs.disabled must be a boolean",
        ),
    ];
    for (value, expected) in cases {
        let err = servers(value.clone()).unwrap_err();
        assert!(err.starts_with(expected), "{value}: {err}");
    }
}

#[test]
fn a_claude_desktop_file_is_read_as_it_is() {
    let parsed = servers(json!({
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
               "env": {"TOKEN": "s3cret"}},
        "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer s3cret"}},
        "off": {"command": "x", "disabled": true},
    }))
    .unwrap();
    let names: Vec<&str> = parsed.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["fs", "remote"]);
    let fs = &parsed.entries()[0];
    assert_eq!(fs.prefix, "fs");
    assert_eq!(fs.timeout, crate::DEFAULT_MCP_TIMEOUT);
    assert_eq!(fs.read_only, ToolNames::None);
    assert!(matches!(&fs.transport, McpTransport::Stdio { args, .. } if args.len() == 3));
    // Values of variables and headers may be secrets: Debug names them only.
    let debug = format!("{parsed:?}");
    assert!(
        debug.contains("TOKEN") && debug.contains("Authorization"),
        "{debug}"
    );
    assert!(!debug.contains("s3cret"), "{debug}");
}

#[test]
fn paths_are_relative_to_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mcp.json");
    let entry = json!({"command": "x", "cwd": "work", "sandbox": {"root": "box", "read": ["lib"]}});
    std::fs::write(
        &file,
        json!({"mcpServers": {"s": entry}, "globalShortcut": "x"}).to_string(),
    )
    .unwrap();
    let parsed = McpServers::from_file(&file).unwrap();
    let McpTransport::Stdio { cwd, sandbox, .. } = &parsed.entries()[0].transport else {
        panic!()
    };
    assert_eq!(cwd.as_deref(), Some(dir.path().join("work").as_path()));
    let sandbox = sandbox.as_ref().unwrap();
    assert_eq!(sandbox.root, dir.path().join("box"));
    assert_eq!(sandbox.read, [dir.path().join("lib")]);
    assert!(!sandbox.network);
}

/// Connected servers that hand out a tool named after the selection, and remember what they
/// were asked.
#[derive(Default)]
struct Fake(Mutex<Vec<McpSelection>>);

impl McpTools for Fake {
    fn tools(&self, selection: &McpSelection) -> Option<SharedTool> {
        if selection.server == "absent" {
            return None;
        }
        self.0.lock().unwrap().push(selection.clone());
        let tool = from_fn(
            format!("mcp:{}", selection.server),
            "x",
            |_: Value, _cx| async { Ok::<_, ToolError>("x") },
        );
        Some(Arc::new(tool))
    }
}

#[test]
fn mcp_entries_pick_tools_and_approvals() {
    let config = AgentConfig::from_value(json!({
        "tools": {
            "mcp:fs/read_file": {},
            "mcp:fs/write_file": {"needsApproval": true},
            "mcp:git": {"needsApproval": true},
            "mcp:off": {"enabled": false},
        },
        "mcpServers": {"fs": {"command": "x"}, "git": {"command": "y"}, "off": {"command": "z"}},
    }))
    .unwrap();
    let fake = Fake::default();
    let tools = config
        .toolset_with(&Toolset::new(), "openai", WebhookPolicy::any(), Some(&fake))
        .unwrap();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["mcp:fs", "mcp:git"]);
    let asked = fake.0.lock().unwrap().clone();
    assert_eq!(
        asked[0],
        McpSelection {
            server: "fs".into(),
            only: Some(vec!["read_file".into(), "write_file".into()]),
            needs_approval: ToolNames::Some(vec!["write_file".into()]),
        }
    );
    assert_eq!(asked[1].only, None);
    assert_eq!(asked[1].needs_approval, ToolNames::All);
    // A disabled entry's server is not used, so not connected.
    let used = config.mcp_servers_used().unwrap();
    let names: Vec<&str> = used.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["fs", "git"]);
}

#[test]
fn without_a_tools_key_every_declared_server_is_offered_whole() {
    let config = AgentConfig::from_value(json!({"mcpServers": {"fs": {"command": "x"}}})).unwrap();
    let fake = Fake::default();
    let tools = config
        .toolset_with(&Toolset::new(), "openai", WebhookPolicy::any(), Some(&fake))
        .unwrap();
    assert!(tools.contains("mcp:fs"));
    assert_eq!(fake.0.lock().unwrap()[0].only, None);
}

#[test]
fn mcp_entries_are_checked() {
    let cases = [
        (
            json!({"tools": {"mcp:": {}}}),
            "config.tools.mcp:: an MCP entry is",
        ),
        (
            json!({"tools": {"mcp:fs/": {}}}),
            "config.tools.mcp:fs/: an MCP entry is",
        ),
        (
            json!({"tools": {"mcp:fs": {"timeout": 1}}}),
            "config.tools.mcp:fs: timeout is not a supported option of an MCP entry",
        ),
        (
            json!({"tools": {"mcp:fs": {"async": true}}}),
            "config.tools.mcp:fs: env, variables, async, cache or resultLimit is not a supported option",
        ),
        (
            json!({"mcpServers": {"fs": {}}}),
            "config.mcpServers.fs: \"command\"",
        ),
    ];
    for (value, expected) in cases {
        let err = AgentConfig::from_value(value.clone())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(expected), "{value}: {err}");
    }
    // Naming a server nobody connected, or having servers and no connector.
    let config = AgentConfig::from_value(json!({"tools": {"mcp:absent": {}}})).unwrap();
    let err = config
        .toolset_with(
            &Toolset::new(),
            "openai",
            WebhookPolicy::any(),
            Some(&Fake::default()),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("config.tools.mcp:absent: no MCP server \"absent\" is connected"),
        "{err}"
    );
    let err = config.toolset(&Toolset::new(), "openai").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("config.mcpServers: MCP servers are connected by"),
        "{err}"
    );
}

#[test]
fn nested_configs_declaring_a_server_differently_are_refused() {
    let config = AgentConfig::from_value(json!({
        "mcpServers": {"fs": {"command": "a"}},
        "prompts": [{"name": "p", "description": "d", "instructions": "i",
                     "mcpServers": {"fs": {"command": "b"}}}],
    }))
    .unwrap();
    let err = config.mcp_servers_used().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the MCP server \"fs\" is declared twice, differently"
    );
}

#[test]
fn a_prompt_s_tools_take_mcp_entries() {
    use crate::{BuildContext, ModelConfig, ParentAgent};
    use toolsmith_providers::ScriptedModel;

    let config = AgentConfig::from_value(json!({
        "mcpServers": {"git": {"command": "git-mcp"}},
        "prompts": [{"name": "p", "description": "d", "instructions": "i",
                     "tools": {"mcp:git/git_status": {}, "mcp:fs": {"needsApproval": true}}}],
    }))
    .unwrap();
    let fake = Fake::default();
    let lookup = |_: &str| None;
    let resolve = |_: &ModelConfig| -> Result<_, String> { unreachable!() };
    let cx = BuildContext {
        builtins: &Toolset::new(),
        resolve: &resolve,
        lookup: &lookup,
        webhooks: WebhookPolicy::any(),
        wrap: None,
        mcp: Some(&fake),
        sandboxed: None,
    };
    let parent = ParentAgent {
        model: Arc::new(ScriptedModel::new([])),
        provider: "openai".into(),
        approval: None,
    };
    let tools = config.composite_tools(&cx, &parent).unwrap();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["p"]);
    let asked = fake.0.lock().unwrap().clone();
    assert_eq!(
        asked.iter().map(|s| s.server.as_str()).collect::<Vec<_>>(),
        ["git", "fs"]
    );
    assert_eq!(asked[0].only, Some(vec!["git_status".to_string()]));
    assert_eq!(asked[1].needs_approval, ToolNames::All);
    // A bad reference is refused in a prompt's tools as in the agent's, naming the prompt.
    let err = AgentConfig::from_value(json!({
        "prompts": [{"name": "p", "description": "d", "instructions": "i",
                     "tools": {"mcp:": {}}}],
    }))
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("config.prompts[0]: config.tools.mcp:"),
        "{err}"
    );
}
