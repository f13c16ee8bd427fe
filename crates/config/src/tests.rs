//! The config's parsing rules.

use serde_json::json;
use toolsmith_core::{ToolError, ToolKind, from_fn};

use super::*;

fn builtins() -> Toolset {
    let read = from_fn("read", "Read.", |_: Value, _cx| async move {
        Ok::<_, ToolError>("x")
    });
    Toolset::new().with(read)
}

fn parse(value: Value) -> Result<AgentConfig, ConfigError> {
    AgentConfig::from_value(value)
}

#[test]
fn seed_messages_for_bad_entries() {
    let cases = [
        (json!({"tools": []}), "config.tools must be an object"),
        (
            json!({"tools": {"read": true}}),
            "config.tools.read must be an object",
        ),
        (
            json!({"tools": {"tavily": {}}}),
            "config.tools.tavily is not a supported tool",
        ),
        (
            json!({"tools": {"tavilySearch": {"maxResults": 50}}}),
            "config.tools.tavilySearch.maxResults must be an integer from 1 to 20",
        ),
        (
            json!({"tools": {"lookup": {"type": "plugin"}}}),
            "config.tools.lookup.type must be \"webhook\" (the only kind of tool a config defines)",
        ),
        (
            json!({"tools": {"read": {"needsApproval": 1}}}),
            "config.tools.read.needsApproval must be a boolean",
        ),
        (
            json!({"approval": {"policy": "some"}}),
            "config.approval.policy must be \"none\", \"all\" or a list of tool names",
        ),
        (
            json!({"approval": {"timeoutAction": "ignore"}}),
            "config.approval.timeoutAction must be \"deny\", \"approve\" or \"error\", got \"ignore\"",
        ),
        (
            json!({"approval": {"onApproval": "x"}}),
            "config.approval.onApproval is not a supported setting",
        ),
        (
            json!({"tools": {"read": {"execution": "later"}}}),
            "config.tools.read.execution must be \"same-invocation\" or \"external-dispatch\"",
        ),
        (
            json!({"tools": {"read": {"depth": 2}}}),
            "config.tools.read.depth is not a supported option (built-in tools take none)",
        ),
        (
            json!({"model": "gpt"}),
            "config.model must have the form PROVIDER:MODEL, got \"gpt\"",
        ),
        (
            json!({"maxSteps": 0}),
            "config.maxSteps must be a positive integer",
        ),
        (
            json!({"temperature": 1}),
            "config.temperature is not a supported setting",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(parse(value).unwrap_err().to_string(), message);
    }
}

#[test]
fn google_search_needs_a_google_model() {
    let config = parse(json!({"model": "openai:gpt-4.1", "tools": {"googleSearch": {}}})).unwrap();
    assert_eq!(
        config
            .toolset(&builtins(), "openai")
            .unwrap_err()
            .to_string(),
        "config.tools.googleSearch requires config.model.provider to be google"
    );
    let tools = config.toolset(&builtins(), "google").unwrap();
    let ToolKind::Provider(tool) = tools.get("google_search").unwrap().kind() else {
        panic!("not a provider tool")
    };
    assert_eq!(tool.id, "google.google_search");
}

#[test]
fn openai_web_search_takes_its_options_and_needs_a_responses_model() {
    let config = parse(json!({
        "model": "openai-responses:gpt-5",
        "tools": {
            "openaiWebSearch": {
                "search_context_size": "low",
                "filters": {"allowed_domains": ["example.com"]},
                "future": true
            }
        }
    }))
    .unwrap();
    assert_eq!(
        config
            .toolset(&builtins(), "anthropic")
            .unwrap_err()
            .to_string(),
        "config.tools.openaiWebSearch requires config.model.provider to be openai-responses"
    );
    let tools = config.toolset(&builtins(), "openai-responses").unwrap();
    let ToolKind::Provider(tool) = tools.get("web_search").unwrap().kind() else {
        panic!("not a provider tool")
    };
    assert_eq!(
        tool.args,
        json!({
            "type": "web_search",
            "search_context_size": "low",
            "filters": {"allowed_domains": ["example.com"]},
            "future": true
        })
    );
}

#[test]
fn enabled_rules_control_keys_and_pass_through() {
    let config = parse(json!({
        "model": {"provider": "anthropic", "name": "claude-sonnet-4-5", "baseUrl": "http://x"},
        "tools": {
            "read": {"enabled": false},
            "anthropicWebSearch": {
                "enabled": true, "needsApproval": true, "execution": "same-invocation",
                "max_uses": 2, "future": [1]
            }
        }
    }))
    .unwrap();
    assert_eq!(
        config.model.as_ref().unwrap().spec(),
        "anthropic:claude-sonnet-4-5"
    );
    let tools = config.toolset(&builtins(), "anthropic").unwrap();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["web_search"]);
    let search = tools.get("web_search").unwrap();
    assert!(matches!(search.meta().approval, Approval::Always));
    let ToolKind::Provider(tool) = search.kind() else {
        panic!()
    };
    assert_eq!(
        tool.args,
        json!({"type": "web_search_20260318", "name": "web_search", "max_uses": 2, "future": [1]})
    );
    // No `tools` key: the workspace tools of the built-ins given (`read` here).
    let all = parse(json!({}))
        .unwrap()
        .toolset(&builtins(), "openai")
        .unwrap();
    assert_eq!(all.len(), 1);
}

#[test]
fn the_approval_block() {
    let config = parse(json!({
        "approval": {"policy": ["write", "bash"], "timeout": 1500, "timeoutAction": "throw"}
    }))
    .unwrap();
    assert_eq!(
        config.approval,
        Some(ApprovalConfig {
            policy: ApprovalPolicy::Tools(vec!["write".into(), "bash".into()]),
            timeout: Duration::from_millis(1500),
            timeout_action: TimeoutAction::Error,
        })
    );
    let all = parse(json!({"approval": {"policy": "all"}})).unwrap();
    assert_eq!(all.approval.unwrap().policy, ApprovalPolicy::All);
    assert_eq!(parse(json!({})).unwrap().approval, None);
    // RadarOS's defaults: no policy, five minutes, then deny.
    assert_eq!(
        parse(json!({"approval": {}})).unwrap().approval,
        Some(ApprovalConfig {
            policy: ApprovalPolicy::None,
            timeout: Duration::from_secs(300),
            timeout_action: TimeoutAction::Deny,
        })
    );
}

#[test]
fn client_tools_are_declared_by_their_spec() {
    let config = parse(json!({
        "clientTools": [{"name": "ask_user", "description": "Ask the user.",
                         "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]
    }))
    .unwrap();
    let tools = config.toolset(&builtins(), "openai").unwrap();
    let ask = tools.get("ask_user").unwrap();
    assert!(matches!(ask.kind(), ToolKind::Client));
    assert_eq!(ask.spec().description(), "Ask the user.");
    for (bad, message) in [
        (
            json!({"clientTools": [{"name": ""}]}),
            "config.clientTools[0].name must be a non-empty string",
        ),
        (
            json!({"clientTools": [{"name": "a"}, {"name": "a"}]}),
            "config.clientTools[1]: the client tool \"a\" is declared twice",
        ),
        (
            json!({"clientTools": [{"name": "a", "run": true}]}),
            "config.clientTools[0].run is not a supported setting",
        ),
        (
            json!({"clientTools": [{"name": "a", "inputSchema": "x"}]}),
            "config.clientTools[0].inputSchema must be a JSON Schema object",
        ),
    ] {
        assert_eq!(parse(bad).unwrap_err().to_string(), message);
    }
    let clash = parse(json!({"clientTools": [{"name": "read"}]})).unwrap();
    assert_eq!(
        clash
            .toolset(&builtins(), "openai")
            .unwrap_err()
            .to_string(),
        "config.clientTools: \"read\" is already the name of a tool"
    );
}

#[test]
fn subagents_prompts_and_variables_parse_with_their_seed_fields() {
    let config = parse(json!({
        "subagents": [{
            "name": "researcher",
            "description": "Looks things up.",
            "config": {"instructions": "Research.", "model": "anthropic:claude-x", "tools": {"read": {}}},
            "blocking": false,
            "initAgentNameProperty": "name",
            "resumable": {"receives_messages": "side_a", "maxInstances": 2},
            "needsApproval": true
        }],
        "prompts": [{
            "name": "summarise",
            "description": "Summarises.",
            "instructions": "One word.",
            "includeErrors": false
        }],
        "variables": [
            {"name": "REGION", "type": "text", "value": "eu", "description": "Where."},
            {"name": "API_KEY", "required": true, "scoped": true}
        ]
    }))
    .unwrap();
    let sub = &config.subagents[0];
    assert_eq!(sub.name, "researcher");
    assert!(sub.needs_approval && !sub.tool.blocking);
    assert_eq!(sub.tool.resumable.as_ref().unwrap().max_instances, Some(2));
    assert_eq!(
        sub.agent.model.as_ref().unwrap().spec(),
        "anthropic:claude-x"
    );
    assert_eq!(sub.agent.instructions.as_deref(), Some("Research."));
    let prompt = &config.prompts[0];
    assert!(!prompt.tool.include_errors && prompt.tool.include_text_response);
    assert_eq!(prompt.agent.instructions.as_deref(), Some("One word."));
    assert_eq!(config.variables[0].value.as_deref(), Some("eu"));
    let key = &config.variables[1].decl;
    assert!(key.required && key.scoped);
    assert_eq!(
        key.kind,
        toolsmith_core::VariableKind::Secret,
        "secret is the default type"
    );
}

#[test]
fn composite_entries_with_bad_fields_are_rejected_naming_them() {
    for (value, message) in [
        (
            json!({"subagents": [{"name": "r", "description": "d", "config": {}, "resumable": true}]}),
            "config.subagents[0]: resumable is false or an object",
        ),
        (
            json!({"subagents": [{"name": "r", "description": "d", "config": {}, "resumable": {}}]}),
            "config.subagents[0]: resumable is false or an object {\"receives_messages\": \"side_a\" | \"side_b\", \"maxInstances\"?, \"parentCommunication\"?}: missing field `receives_messages`",
        ),
        (
            json!({"subagents": [{"name": "r", "description": "d"}]}),
            "config.subagents[0].config is required",
        ),
        (
            json!({"subagents": [{"name": "bad name", "description": "d", "config": {}}]}),
            "config.subagents[0].name must be a tool name",
        ),
        (
            json!({"subagents": [{"name": "r", "config": {}}]}),
            "config.subagents[0].description must be a non-empty string",
        ),
        (
            json!({"prompts": [{"name": "p", "description": "d", "instructions": "x", "includeText": true}]}),
            "config.prompts[0]: config.includeText is not a supported setting",
        ),
        (
            json!({"variables": [{"name": "A"}, {"name": "A"}]}),
            "config.variables[1]: \"A\" is declared twice",
        ),
        (
            json!({"variables": [{"name": "A", "type": "number"}]}),
            "config.variables[0].type must be \"text\" or \"secret\"",
        ),
    ] {
        let error = parse(value).unwrap_err().to_string();
        assert!(error.contains(message), "{error}");
    }
}

#[test]
fn a_config_file_naming_itself_as_a_sub_agent_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loop.json");
    std::fs::write(
        &path,
        json!({"subagents": [{"name": "again", "description": "d", "config": "loop.json"}]})
            .to_string(),
    )
    .unwrap();
    let error = AgentConfig::from_file(&path).unwrap_err().to_string();
    assert!(error.contains("nest more than 8 deep"), "{error}");
}

#[test]
fn env_gives_tool_and_prompt_level_values() {
    let config = parse(json!({
        "tools": {"read": {"env": {"REGION": "eu"}}},
        "prompts": [{"name": "p", "description": "d", "instructions": "x", "env": {"TONE": "dry"}}]
    }))
    .unwrap();
    assert_eq!(
        config.tools.as_ref().unwrap()[0].env,
        [("REGION".to_string(), "eu".to_string())]
    );
    assert_eq!(
        config.prompts[0].env,
        [("TONE".to_string(), "dry".to_string())]
    );
    let tools = config.toolset(&builtins(), "openai").unwrap();
    assert_eq!(
        tools.get("read").unwrap().meta().env,
        [("REGION".to_string(), "eu".to_string())]
    );
    let error = parse(json!({"tools": {"read": {"env": {"N": 1}}}})).unwrap_err();
    assert_eq!(
        error.to_string(),
        "config.tools.read.env.N must be a string"
    );
}

#[test]
fn the_execution_policy() {
    use toolsmith_agent::ExecutionPolicy;
    for (value, expected) in [
        (json!("sequential"), ExecutionPolicy::Sequential),
        (json!("parallel"), ExecutionPolicy::Parallel { max: 5 }),
        (
            json!({"mode": "parallel", "max": 2}),
            ExecutionPolicy::Parallel { max: 2 },
        ),
    ] {
        assert_eq!(
            parse(json!({"execution": value})).unwrap().execution,
            Some(expected)
        );
    }
    for (value, message) in [
        (json!("fast"), "config.execution must be"),
        (
            json!({"mode": "parallel", "max": 0}),
            "config.execution.max must be a positive integer",
        ),
        (
            json!({"mode": "parallel", "width": 2}),
            "config.execution.width is not a supported setting",
        ),
    ] {
        let error = parse(json!({"execution": value})).unwrap_err().to_string();
        assert!(error.starts_with(message), "{error}");
    }
}

#[tokio::test]
async fn parallel_tool_calls_reaches_the_request() {
    use std::sync::Arc;
    use toolsmith_providers::{ScriptedModel, Turn};

    // What the model is told, with the config's `parallelToolCalls` (and `execution`).
    async fn sent(config: Value) -> Option<bool> {
        let config = parse(config).unwrap();
        let model = Arc::new(ScriptedModel::new([Turn::text("ok")]).recording());
        let lookup = |_: &str| None;
        let resolve = |_: &ModelConfig| -> Result<_, String> { unreachable!() };
        let cx = BuildContext {
            builtins: &Toolset::new(),
            resolve: &resolve,
            lookup: &lookup,
            webhooks: WebhookPolicy::any(),
            wrap: None,
            mcp: None,
            sandboxed: None,
        };
        let parent = ParentAgent {
            model: model.clone(),
            provider: "scripted".into(),
            approval: None,
        };
        let agent = config.agent_builder(builtins(), &cx, &parent).unwrap();
        agent.build().run("hi").await.unwrap();
        model.requests()[0].parallel_tool_calls
    }

    assert_eq!(sent(json!({})).await, Some(false));
    assert_eq!(sent(json!({"parallelToolCalls": true})).await, Some(true));
    assert_eq!(sent(json!({"execution": "parallel"})).await, None);
    assert_eq!(
        sent(json!({"execution": "parallel", "parallelToolCalls": false})).await,
        Some(false)
    );
    assert_eq!(
        parse(json!({"parallelToolCalls": "no"}))
            .unwrap_err()
            .to_string(),
        "config.parallelToolCalls must be a boolean"
    );
}

#[test]
fn the_model_object_takes_stream() {
    let model = |stream: Value| {
        parse(json!({"model": {"provider": "openai-compatible", "name": "m", "stream": stream}}))
            .map(|config| config.model.unwrap().stream)
    };
    assert_eq!(model(json!(false)), Ok(Some(false)));
    assert_eq!(model(json!(true)), Ok(Some(true)));
    assert_eq!(model(Value::Null), Ok(None));
    assert_eq!(
        model(json!("no")).unwrap_err().to_string(),
        "config.model.stream must be a boolean"
    );
    let plain = parse(json!({"model": {"provider": "openai", "name": "m"}})).unwrap();
    assert_eq!(plain.model.unwrap().stream, None);
    let spec = parse(json!({"model": "openai:m"})).unwrap();
    assert_eq!(spec.model.unwrap().stream, None);
}

#[test]
fn sub_agents_and_prompts_declare_their_own_arguments() {
    let schema = json!({"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"]});
    let config = parse(json!({
        "subagents": [{"name": "r", "description": "d", "config": {},
                       "initUserMessageProperty": "task", "inputSchema": schema}],
        "prompts": [{"name": "p", "description": "d", "instructions": "x", "inputSchema": schema}]
    }))
    .unwrap();
    assert_eq!(
        config.subagents[0].tool.input_schema.as_ref(),
        Some(&schema)
    );
    assert_eq!(config.prompts[0].tool.input_schema.as_ref(), Some(&schema));
    for (value, message) in [
        (
            json!({"subagents": [{"name": "r", "description": "d", "config": {}, "initUserMessageProperty": "task",
                                  "inputSchema": {"properties": {"task": {"type": "string"}}}}]}),
            "config.subagents[0].inputSchema.properties.task clashes with initUserMessageProperty \"task\"",
        ),
        (
            json!({"subagents": [{"name": "r", "description": "d", "config": {}, "initAgentNameProperty": "name",
                                  "inputSchema": {"properties": {"name": {}}}}]}),
            "config.subagents[0].inputSchema.properties.name clashes with initAgentNameProperty \"name\"",
        ),
        (
            json!({"prompts": [{"name": "p", "description": "d", "instructions": "x",
                                "inputSchema": {"properties": {"prompt": {}}}}]}),
            "config.prompts[0].inputSchema.properties.prompt clashes with initUserMessageProperty \"prompt\"",
        ),
        (
            json!({"prompts": [{"name": "p", "description": "d", "instructions": "x", "initAttachmentsProperty": "files",
                                "inputSchema": {"properties": {"files": {}}}}]}),
            "config.prompts[0].inputSchema.properties.files clashes with initAttachmentsProperty \"files\"",
        ),
        (
            json!({"subagents": [{"name": "r", "description": "d", "config": {}, "inputSchema": {"type": "string"}}]}),
            "config.subagents[0].inputSchema.type must be \"object\"",
        ),
        (
            json!({"subagents": [{"name": "r", "description": "d", "config": {}, "inputSchema": []}]}),
            "config.subagents[0].inputSchema must be a JSON Schema object",
        ),
        (
            json!({"prompts": [{"name": "p", "description": "d", "instructions": "x",
                                "inputSchema": {"properties": {}, "required": ["k"]}}]}),
            "config.prompts[0].inputSchema.required names \"k\", which is not in inputSchema.properties",
        ),
    ] {
        assert_eq!(parse(value).unwrap_err().to_string(), message);
    }
    let error = parse(
        json!({"prompts": [{"name": "p", "description": "d", "instructions": "x",
        "inputSchema": {"properties": {"k": {"type": "nonsense"}}}}]}),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("config.prompts[0].inputSchema: "),
        "{error}"
    );
}

#[test]
fn provider_callables_are_aliases_of_the_provider_tools() {
    for (alias, provider, wrong, id) in [
        (
            "provider:googleSearch",
            "google",
            "openai",
            "google.google_search",
        ),
        (
            "provider:anthropicWebSearch",
            "anthropic",
            "google",
            "anthropic.web_search",
        ),
        (
            "provider:openaiWebSearch",
            "openai-responses",
            "anthropic",
            "openai.web_search",
        ),
    ] {
        let config = parse(json!({"tools": {alias: {}}})).unwrap();
        let tools = config.toolset(&builtins(), provider).unwrap();
        let plain = &alias["provider:".len()..];
        let same = parse(json!({"tools": {plain: {}}})).unwrap();
        let expected = same.toolset(&builtins(), provider).unwrap();
        assert_eq!(
            tools.names().collect::<Vec<_>>(),
            expected.names().collect::<Vec<_>>()
        );
        let name = tools.names().next().unwrap().to_string();
        let ToolKind::Provider(tool) = tools.get(&name).unwrap().kind() else {
            panic!("not a provider tool")
        };
        assert!(
            tool.id.starts_with(id.split('.').next().unwrap()),
            "{}",
            tool.id
        );
        // The same check, the same text, as the plain entry.
        assert_eq!(
            config.toolset(&builtins(), wrong).unwrap_err(),
            same.toolset(&builtins(), wrong).unwrap_err()
        );
    }
    // Options reach the provider as for the plain entry.
    let config = parse(json!({"tools": {"provider:anthropicWebSearch": {"max_uses": 3}}})).unwrap();
    let tools = config.toolset(&builtins(), "anthropic").unwrap();
    let ToolKind::Provider(tool) = tools.get("web_search").unwrap().kind() else {
        panic!("not a provider tool")
    };
    assert_eq!(tool.args["max_uses"], json!(3));
    assert_eq!(
        parse(json!({"tools": {"provider:googleSearch": {}}}))
            .unwrap()
            .toolset(&builtins(), "openai")
            .unwrap_err()
            .to_string(),
        "config.tools.googleSearch requires config.model.provider to be google"
    );
    assert_eq!(
        parse(json!({"tools": {"provider:bing": {}}}))
            .unwrap_err()
            .to_string(),
        "config.tools.provider:bing is not a supported provider tool (known: \
         provider:anthropicWebSearch, provider:openaiWebSearch, provider:googleSearch)"
    );
    assert_eq!(
        parse(json!({"tools": {"googleSearch": {}, "provider:googleSearch": {}}}))
            .unwrap_err()
            .to_string(),
        "config.tools.provider:googleSearch and config.tools.googleSearch name the same tool"
    );
}

#[test]
fn a_prompt_s_tools_take_provider_callables_with_the_same_checks() {
    let config = parse(json!({"prompts": [
        {"name": "p", "description": "d", "instructions": "x",
         "tools": {"provider:googleSearch": {}}},
        {"name": "q", "description": "d", "instructions": "x", "model": "google:gemini-x",
         "tools": {"provider:googleSearch": {}}}
    ]}))
    .unwrap();
    // The prompt's tools are checked against its model's provider (its own or its parent's).
    assert_eq!(
        config.prompts[0]
            .agent
            .toolset(&builtins(), "anthropic")
            .unwrap_err()
            .to_string(),
        "config.tools.googleSearch requires config.model.provider to be google"
    );
    let tools = config.prompts[1]
        .agent
        .toolset(&builtins(), "google")
        .unwrap();
    assert!(tools.get("google_search").is_some());
    assert_eq!(
        parse(
            json!({"prompts": [{"name": "p", "description": "d", "instructions": "x",
                                  "tools": {"provider:nope": {}}}]})
        )
        .unwrap_err()
        .to_string(),
        "config.prompts[0]: config.tools.provider:nope is not a supported provider tool (known: \
         provider:anthropicWebSearch, provider:openaiWebSearch, provider:googleSearch)"
    );
}
