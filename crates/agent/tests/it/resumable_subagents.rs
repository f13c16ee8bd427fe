//! Resumable sub-agents (`subagent_create`, `subagent_message`, `maxInstances`,
//! `parentCommunication`, `subagent_env_required`) and immediate sub-agents.

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_agent::{
    RunInput, SUBAGENT_CREATE, SUBAGENT_ENV_REQUIRED, SUBAGENT_MESSAGE, SUBAGENTS_STATE_KEY,
    SubagentConfig, SubagentTool,
};
use toolsmith_core::{
    Message, ModelOutput, Role, ToolError, ToolMeta, VariableDecl, VariableKind, from_fn,
};
use toolsmith_providers::Turn;

fn resumable(extra: Value) -> SubagentConfig {
    let mut resumable = json!({"receives_messages": "side_a"});
    resumable
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(json!({ "resumable": resumable })).unwrap()
}

/// `receives_messages: side_b`: the parent's messages reach the instance as the assistant's
/// (as in the Standard Agents spec), the first and every later one.
#[tokio::test]
async fn side_b_instances_receive_the_parents_messages_as_the_assistants() {
    let child_model = recording([Turn::text("first"), Turn::text("second")]);
    let child = builder(&child_model).build();
    let parent_model = recording([
        call(
            "a",
            SUBAGENT_CREATE,
            json!({"name": "b", "message": "opening"}),
        ),
        call(
            "b",
            SUBAGENT_MESSAGE,
            json!({"name": "b", "message": "again"}),
        ),
        Turn::text("done"),
    ]);
    let config: SubagentConfig =
        serde_json::from_value(json!({"resumable": {"receives_messages": "side_b"}})).unwrap();
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "other_side",
            "The other side.",
            child,
            config,
        ))
        .build();
    let out = parent.run("go").await.unwrap();
    assert_eq!(result_of(&out.messages, "b"), ModelOutput::text("second"));
    let requests = child_model.requests();
    assert_eq!(
        plain(&requests[0].messages),
        [Message::assistant("opening")]
    );
    assert_eq!(
        plain(&requests[1].messages),
        [
            Message::assistant("opening"),
            Message::assistant("first"),
            Message::assistant("again")
        ]
    );
}

#[tokio::test]
async fn an_instance_remembers_earlier_messages_and_lifecycle_tools_replace_the_agent() {
    let child_model = recording([Turn::text("noted: blue"), Turn::text("you said blue")]);
    let child = builder(&child_model).build();
    let parent_model = recording([
        call(
            "a",
            SUBAGENT_CREATE,
            json!({"name": "memo", "message": "remember blue"}),
        ),
        call(
            "b",
            SUBAGENT_MESSAGE,
            json!({"name": "memo", "message": "what did I say?"}),
        ),
        call(
            "c",
            SUBAGENT_MESSAGE,
            json!({"name": "nobody", "message": "hi"}),
        ),
        Turn::text("done"),
    ]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "memo_keeper",
            "Keeps notes.",
            child,
            resumable(json!({})),
        ))
        .build();

    let state = toolsmith_core::SessionState::default();
    let out = parent
        .run(RunInput::from("go").with_state(state.clone()))
        .await
        .unwrap();

    assert_eq!(
        declared(&parent_model.requests()[0]),
        [SUBAGENT_CREATE, SUBAGENT_MESSAGE]
    );
    assert_eq!(
        result_of(&out.messages, "a"),
        ModelOutput::text("noted: blue")
    );
    assert_eq!(
        result_of(&out.messages, "b"),
        ModelOutput::text("you said blue")
    );
    // The second message reached the instance after its first exchange.
    assert_eq!(
        plain(&child_model.requests()[1].messages),
        [
            Message::user("remember blue"),
            Message::assistant("noted: blue"),
            Message::user("what did I say?")
        ]
    );
    let unknown = result_of(&out.messages, "c");
    assert!(unknown.is_error());
    assert!(
        unknown.to_text().contains("Instances: memo."),
        "{}",
        unknown.to_text()
    );
    // The instance's thread is kept in the session state.
    let kept = &state.get("subagents").unwrap()["instances"]["memo"];
    assert_eq!(kept["agent"], "memo_keeper");
    assert_eq!(kept["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn at_max_instances_subagent_create_is_hidden_and_refused() {
    let child = builder(&recording([Turn::text("one"), Turn::text("two")])).build();
    let parent_model = recording([
        call(
            "a",
            SUBAGENT_CREATE,
            json!({"name": "first", "message": "hi"}),
        ),
        // The model calls it anyway.
        call(
            "b",
            SUBAGENT_CREATE,
            json!({"name": "second", "message": "hi"}),
        ),
        call("c", SUBAGENT_CREATE, json!({"name": "  ", "message": "hi"})),
        Turn::text("done"),
    ]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "helper",
            "Helps.",
            child,
            resumable(json!({"maxInstances": 1})),
        ))
        .build();
    let out = parent.run("go").await.unwrap();

    let requests = parent_model.requests();
    assert_eq!(declared(&requests[0]), [SUBAGENT_CREATE, SUBAGENT_MESSAGE]);
    assert_eq!(declared(&requests[1]), [SUBAGENT_MESSAGE]);
    let refused = result_of(&out.messages, "b").to_text();
    assert!(refused.contains("maximum of 1 instances"), "{refused}");
    let unnamed = result_of(&out.messages, "c").to_text();
    assert!(unnamed.contains("non-empty \"name\""), "{unnamed}");
}

#[tokio::test]
async fn missing_required_scoped_variables_give_subagent_env_required() {
    let probe = from_fn("probe", "Uses a token.", |_: Args, _cx| async {
        Ok::<_, ToolError>("ok")
    })
    .with_meta(ToolMeta::new().variable(VariableDecl {
        name: "CHILD_TOKEN".into(),
        kind: VariableKind::Secret,
        required: true,
        scoped: true,
        description: "The child's own token.".into(),
    }));
    let child_model = recording([Turn::text("never")]);
    let child = builder(&child_model).tool(probe).build();
    let parent = builder(&recording([
        call(
            "a",
            SUBAGENT_CREATE,
            json!({"name": "scout", "message": "go"}),
        ),
        Turn::text("done"),
    ]))
    .tool(SubagentTool::with_config(
        "helper",
        "Helps.",
        child,
        resumable(json!({})),
    ))
    .build();
    let state = toolsmith_core::SessionState::default();
    // The parent's value does not count: the variable is scoped.
    let input = RunInput::from("go")
        .with_state(state.clone())
        .with_thread_id("th_1")
        .with_variable("CHILD_TOKEN", "parent-value-1234");
    let (parts, out) = stream_run(&parent, input).await;
    out.unwrap();

    assert_eq!(child_model.call_count(), 0, "the child never starts");
    let error = parts
        .iter()
        .find_map(|p| match p {
            toolsmith_core::RunPart::ToolError { error, .. } => Some(error.clone()),
            _ => None,
        })
        .expect("a tool error");
    assert_eq!(error.code, SUBAGENT_ENV_REQUIRED);
    let details = error.details.unwrap();
    let request = details["requestId"].as_str().unwrap();
    assert!(request.starts_with("req_"));
    assert_eq!(
        details["endpoints"]["post"],
        format!("/threads/th_1/variables/{request}")
    );
    assert_eq!(details["variables"][0]["name"], "CHILD_TOKEN");
    assert_eq!(details["variables"][0]["type"], "secret");
    assert!(
        !serde_json::to_string(&parts)
            .unwrap()
            .contains("parent-value-1234")
    );
    let deferred = &state.get("subagents").unwrap()["deferred"][request];
    assert_eq!(deferred["name"], "scout");
}

#[tokio::test]
async fn an_explicit_instance_reaches_the_parent_only_through_notify_parent() {
    let report = from_fn("report", "Tells the parent.", |_: Args, cx| async move {
        cx.notify_parent("found the bug in parser.rs");
        Ok::<_, ToolError>("sent")
    });
    let child = builder(&recording([
        call("r1", "report", json!({})),
        Turn::text("private musings"),
    ]))
    .tool(report)
    .build();
    let parent_model = recording([
        call(
            "a",
            SUBAGENT_CREATE,
            json!({"name": "scout", "message": "find the bug"}),
        ),
        Turn::text("thanks"),
    ]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "helper",
            "Helps.",
            child,
            resumable(json!({"parentCommunication": "explicit"})),
        ))
        .build();
    let out = parent.run("go").await.unwrap();

    let ack = result_of(&out.messages, "a").to_text();
    assert!(ack.starts_with("Message delivered to \"scout\""), "{ack}");
    let second = &parent_model.requests()[1];
    let notified = second.messages.last().unwrap();
    assert_eq!(notified.role, Role::User);
    assert!(
        notified.text().ends_with(":\nfound the bug in parser.rs"),
        "{}",
        notified.text()
    );
    assert!(
        notified
            .text()
            .starts_with("Message from sub-agent \"scout\"")
    );
    assert!(
        !serde_json::to_string(&second.messages)
            .unwrap()
            .contains("private musings")
    );
}

/// Several resumable sub-agents share one `subagent_create` (which then asks which `agent`) and
/// one `subagent_message`; each call reaches the agent it is for, and an immediate one among
/// them starts its instance naming itself.
#[tokio::test]
async fn resumable_sub_agents_share_the_lifecycle_tools() {
    let alpha_model = recording([Turn::text("alpha awake"), Turn::text("alpha again")]);
    let beta_model = recording([Turn::text("beta here")]);
    let immediate: SubagentConfig = serde_json::from_value(json!({
        "immediate": true,
        "resumable": {"receives_messages": "side_a"}
    }))
    .unwrap();
    let parent_model = recording([
        call(
            "a",
            SUBAGENT_CREATE,
            json!({"agent": "beta", "name": "b1", "message": "hello beta"}),
        ),
        call(
            "b",
            SUBAGENT_MESSAGE,
            json!({"name": "alpha", "message": "and again"}),
        ),
        Turn::text("done"),
    ]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "alpha",
            "Watches.",
            builder(&alpha_model).build(),
            immediate,
        ))
        .tool(SubagentTool::with_config(
            "beta",
            "Answers.",
            builder(&beta_model).build(),
            resumable(json!({})),
        ))
        .build();
    let state = toolsmith_core::SessionState::default();
    let input = RunInput::from("start watching").with_state(state.clone());
    let out = parent.run(input).await.unwrap();

    let first = &parent_model.requests()[0];
    assert_eq!(declared(first), [SUBAGENT_CREATE, SUBAGENT_MESSAGE]);
    let create = &first.tools.entries()[0];
    assert_eq!(
        create.input_schema["properties"]["agent"]["enum"],
        json!(["alpha", "beta"])
    );
    assert!(
        create
            .description
            .contains("Sub-agents: alpha (Watches.); beta (Answers.)."),
        "{}",
        create.description
    );
    // The immediate one started its instance, named after itself, before the first step.
    let started = first.messages[1].tool_calls().next().unwrap().clone();
    assert_eq!(started.tool_name, SUBAGENT_CREATE);
    assert_eq!(
        started.input,
        json!({"agent": "alpha", "name": "alpha", "message": "start watching"})
    );
    assert_eq!(
        request_results(first),
        [("immediate_alpha".to_string(), text("alpha awake"))]
    );
    assert_eq!(result_of(&out.messages, "a"), text("beta here"));
    assert_eq!(result_of(&out.messages, "b"), text("alpha again"));
    assert_eq!(
        plain(&alpha_model.requests()[1].messages),
        [
            Message::user("start watching"),
            Message::assistant("alpha awake"),
            Message::user("and again")
        ]
    );
    let instances = &state.get(SUBAGENTS_STATE_KEY).unwrap()["instances"];
    assert_eq!(instances["alpha"]["agent"], "alpha");
    assert_eq!(instances["b1"]["agent"], "beta");
}

/// An immediate resumable sub-agent, the only resumable one, is started through
/// `subagent_create` with the input that tool's schema has for a single agent (no `agent`).
#[tokio::test]
async fn an_immediate_resumable_sub_agent_alone_starts_its_instance() {
    let child_model = recording([Turn::text("watching")]);
    let child = builder(&child_model).build();
    let config: SubagentConfig = serde_json::from_value(json!({
        "immediate": true,
        "resumable": {"receives_messages": "side_a"}
    }))
    .unwrap();
    let parent_model = recording([Turn::text("ready")]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "watcher", "Watches.", child, config,
        ))
        .build();
    let out = parent.run("watch the deploys").await.unwrap();
    assert_eq!(
        request_results(&parent_model.requests()[0]),
        [(
            "immediate_watcher".to_string(),
            ModelOutput::text("watching")
        )]
    );
    assert_eq!(
        child_model.requests()[0].messages,
        [Message::user("watch the deploys")]
    );
    assert_eq!(out.text, "ready");
}

/// `immediate: true`: started before the first step with the thread's last user message as its
/// task; its result is in the parent's first request.
#[tokio::test]
async fn an_immediate_true_sub_agent_starts_with_the_users_message() {
    let child_model = recording([Turn::text("indexed")]);
    let child = builder(&child_model).build();
    let config: SubagentConfig = serde_json::from_value(json!({"immediate": true})).unwrap();
    let parent_model = recording([Turn::text("ready")]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "indexer", "Indexes.", child, config,
        ))
        .build();
    let out = parent.run("index the repo").await.unwrap();
    assert_eq!(
        child_model.requests()[0].messages,
        [Message::user("index the repo")]
    );
    assert_eq!(
        request_results(&parent_model.requests()[0]),
        [(
            "immediate_indexer".to_string(),
            ModelOutput::text("indexed")
        )]
    );
    assert_eq!(out.text, "ready");
}

#[tokio::test]
async fn an_immediate_sub_agent_runs_before_the_first_step_and_scoped_env_stays_runtime_only() {
    let seen = Log::default();
    let log = seen.clone();
    let probe = from_fn("probe", "Reads the token.", move |_: Args, cx| {
        let log = log.clone();
        async move {
            log.push(cx.variable("DEPLOY_TOKEN").unwrap_or("-").to_string());
            Ok::<_, ToolError>("checked")
        }
    });
    let child_model = recording([call("p1", "probe", json!({})), Turn::text("watching")]);
    let child = builder(&child_model).tool(probe).build();
    let config: SubagentConfig = serde_json::from_value(json!({
        "immediate": {"nameEnv": "WATCHER", "descriptionEnv": "WATCH_TASK", "scopedEnv": ["DEPLOY_TOKEN"]},
        "initAgentNameProperty": "name"
    }))
    .unwrap();
    let parent_model = recording([Turn::text("ready"), Turn::text("again")]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "watcher", "Watches.", child, config,
        ))
        .build();
    let input = RunInput::from("hello")
        .with_variable("WATCHER", "night-watch")
        .with_variable("WATCH_TASK", "watch the deploys")
        .with_variable("DEPLOY_TOKEN", "tok-very-secret-99");
    let out = parent.run(input).await.unwrap();

    assert_eq!(seen.entries(), ["tok-very-secret-99"]);
    assert_eq!(
        child_model.requests()[0].messages,
        [Message::user("watch the deploys")]
    );
    // The parent's first request already has the sub-agent's call and result.
    let first = &parent_model.requests()[0];
    let call = first.messages[1].tool_calls().next().unwrap().clone();
    assert_eq!(call.tool_name, "watcher");
    assert_eq!(
        call.input,
        json!({"prompt": "watch the deploys", "name": "night-watch"})
    );
    assert_eq!(
        request_results(first),
        [(
            "immediate_watcher".to_string(),
            ModelOutput::text("watching")
        )]
    );
    for request in parent_model
        .requests()
        .iter()
        .chain(&child_model.requests())
    {
        let body = serde_json::to_string(&request.messages).unwrap();
        assert!(!body.contains("tok-very-secret-99"), "{body}");
    }
    assert_eq!(out.text, "ready");
    // A thread that already has model turns does not start it again.
    let mut thread = out.messages;
    thread.push(Message::user("and now?"));
    let again = parent.run(thread).await.unwrap();
    assert_eq!(again.text, "again");
    assert_eq!(child_model.call_count(), 2);
}
