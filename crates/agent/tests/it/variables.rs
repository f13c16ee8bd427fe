//! Variables and secrets: precedence, required variables, and a secret that never reaches a
//! model request, a stream part, the thread, the output or a log line.

use crate::common::*;
use serde_json::json;
use toolsmith_agent::RunInput;
use toolsmith_core::{ModelOutput, Tool, ToolError, ToolMeta, VariableDecl, VariableKind, from_fn};
use toolsmith_providers::{ScriptedCall, Turn};

const SECRET: &str = "sk-live-0123456789abcdef";

fn decl(name: &str, kind: VariableKind, required: bool) -> VariableDecl {
    VariableDecl {
        name: name.into(),
        kind,
        required,
        scoped: false,
        description: format!("{name}, for the test."),
    }
}

/// A tool that reads its variables and leaks its secret every way it can: in its value, in what
/// the model sees, and in an error's message, details and operator detail.
fn leaky(fail: bool) -> impl Tool {
    from_fn(
        "leaky",
        "Calls the service.",
        move |_: Args, cx| async move {
            let key = cx.variable("API_KEY").unwrap_or("none").to_string();
            let region = cx.variable("REGION").unwrap_or("none").to_string();
            if fail {
                return Err(ToolError::new("SERVICE", format!("401 for key {key}"))
                    .with_details(json!({"key": key}))
                    .with_operator_detail(format!("Authorization: Bearer {key}")));
            }
            Ok::<_, ToolError>(json!({"used": key, "region": region, "nested": [{"k": key}]}))
        },
    )
    .with_meta(
        ToolMeta::new()
            .variable(decl("API_KEY", VariableKind::Secret, true))
            .variable(decl("REGION", VariableKind::Text, false)),
    )
}

#[tokio::test]
async fn a_secret_reaches_the_tool_and_nothing_else() {
    let (logs, _guard) = Logs::capture();

    for fail in [false, true] {
        let model = recording([
            Turn::tool_calls([ScriptedCall::new("leaky", json!({})).with_id("c")]),
            Turn::text("done"),
        ]);
        let agent = builder(&model)
            .tool(leaky(fail))
            .variable("REGION", "eu-west")
            .build();
        let input = RunInput::from("call the service")
            .with_variable("API_KEY", SECRET)
            .with_variable("REGION", "us-east");
        let (parts, out) = stream_run(&agent, input).await;
        let out = out.unwrap();

        let everything = format!(
            "{}\n{}\n{}\n{:?}",
            serde_json::to_string(&parts).unwrap(),
            serde_json::to_string(&out.messages).unwrap(),
            serde_json::to_string(
                &model
                    .requests()
                    .iter()
                    .map(|r| &r.messages)
                    .collect::<Vec<_>>()
            )
            .unwrap(),
            out.steps,
        );
        assert!(!everything.contains(SECRET), "fail={fail}: {everything}");
        assert!(
            everything.contains("[secret]"),
            "fail={fail}: the tool did read it"
        );
        // A text variable is not masked, and the thread's value wins over the agent's.
        if !fail {
            assert!(everything.contains("us-east") && !everything.contains("eu-west"));
        }
    }
    let logs = logs.text();
    assert!(
        logs.contains("tool.call.failed"),
        "the failure was logged: {logs}"
    );
    assert!(!logs.contains(SECRET), "{logs}");
}

#[tokio::test]
async fn a_required_variable_without_a_value_stops_the_call_before_it_runs() {
    let runs = Counter::default();
    let counted = runs.clone();
    let tool = from_fn("deploy", "Deploy.", move |_: Args, _cx| {
        let runs = counted.clone();
        async move {
            runs.hit();
            Ok::<_, ToolError>("deployed")
        }
    })
    .with_meta(
        ToolMeta::new()
            .variable(decl("DEPLOY_TOKEN", VariableKind::Secret, true))
            .variable(decl("TARGET", VariableKind::Text, true))
            .variable(decl("NOTE", VariableKind::Text, false)),
    );
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("deploy", json!({})).with_id("d")]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(tool).build();
    let out = agent
        .run(RunInput::from("deploy").with_variable("TARGET", "prod"))
        .await
        .unwrap();
    assert_eq!(runs.get(), 0);
    assert_eq!(
        result_of(&out.messages, "d"),
        ModelOutput::error_text(
            "Tool \"deploy\" needs the variable DEPLOY_TOKEN, which is not set."
        )
    );
    let error = match &out.steps[0].tool_results[0].outcome {
        toolsmith_agent::CallOutcome::Error(e) => e.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(error.code(), "VARIABLES_REQUIRED");
    assert_eq!(error.details(), Some(&json!({"missing": ["DEPLOY_TOKEN"]})));
}

#[tokio::test]
async fn an_agent_level_declaration_masks_its_secret_and_a_missing_required_one_stops_the_run() {
    let echo = from_fn("echo", "Echoes the token.", |_: Args, cx| async move {
        Ok::<_, ToolError>(format!("token {}", cx.variable("TOKEN").unwrap_or("-")))
    });
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("echo", json!({})).with_id("e1")]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(echo)
        .declare_variable(decl("TOKEN", VariableKind::Secret, true))
        .build();

    let error = agent.run("go").await.unwrap_err();
    assert_eq!(error.code(), "CONFIG");
    assert!(error.to_string().contains("VARIABLES_REQUIRED"), "{error}");
    assert!(error.to_string().contains("TOKEN"), "{error}");
    assert_eq!(model.call_count(), 0);

    let out = agent
        .run(RunInput::from("go").with_variable("TOKEN", SECRET))
        .await
        .unwrap();
    assert_eq!(
        result_of(&out.messages, "e1"),
        ModelOutput::text("token [secret]")
    );
}

#[tokio::test]
async fn a_tool_event_and_a_printed_run_input_never_show_a_secret() {
    let input = RunInput::from("go").with_variable("API_KEY", SECRET);
    let printed = format!("{input:?}");
    assert!(
        printed.contains("API_KEY") && !printed.contains(SECRET),
        "{printed}"
    );

    let chatty = from_fn("chatty", "Reports progress.", |_: Args, cx| async move {
        let key = cx.variable("API_KEY").unwrap_or("-").to_string();
        cx.emit(format!("progress {key}"), json!({"using": key, "step": 1}));
        Ok::<_, ToolError>("ok")
    })
    .with_meta(ToolMeta::new().variable(decl("API_KEY", VariableKind::Secret, true)));
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("chatty", json!({}))]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(chatty).build();
    let (parts, out) = stream_run(&agent, input).await;
    out.unwrap();
    let data: Vec<&toolsmith_core::RunPart> = parts
        .iter()
        .filter(|p| matches!(p, toolsmith_core::RunPart::Data { .. }))
        .collect();
    assert_eq!(data.len(), 1);
    let text = serde_json::to_string(&data).unwrap();
    assert!(
        text.contains("[secret]") && !text.contains(SECRET),
        "{text}"
    );
}

#[tokio::test]
async fn a_variable_set_by_a_tool_reaches_later_calls_is_secret_by_default_and_is_reported() {
    let login = from_fn("login", "Logs in.", |_: Args, cx| async move {
        cx.set_variable("SESSION", "sess-0123456789", None);
        cx.set_variable("REGION", "eu", Some(VariableKind::Text));
        Ok::<_, ToolError>("logged in")
    });
    let whoami = from_fn("whoami", "Shows the session.", |_: Args, cx| async move {
        Ok::<_, ToolError>(format!(
            "session {} in {}",
            cx.variable("SESSION").unwrap_or("-"),
            cx.variable("REGION").unwrap_or("-")
        ))
    });
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("login", json!({})).with_id("l1")]),
        Turn::tool_calls([ScriptedCall::new("whoami", json!({})).with_id("w1")]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(login).tool(whoami).build();
    let out = agent.run("go").await.unwrap();

    assert_eq!(
        result_of(&out.messages, "w1"),
        ModelOutput::text("session [secret] in eu")
    );
    assert_eq!(out.variables_set.get("SESSION"), Some("sess-0123456789"));
    assert!(out.variables_set.is_secret("SESSION"));
    assert!(!out.variables_set.is_secret("REGION"));
    assert!(!format!("{out:?}").contains("sess-0123456789"));
}

#[tokio::test]
async fn a_variable_set_in_the_parent_reaches_a_running_sub_agent_unless_it_is_scoped() {
    use std::sync::Arc;
    use tokio::sync::watch;
    use toolsmith_agent::{ExecutionPolicy, SubagentTool};

    let (flag_set, go) = watch::channel(false);
    let flag_set = Arc::new(flag_set);
    // How many children are waiting: the flag is set only once both runs are under way.
    let started = Arc::new(watch::channel(0usize).0);
    let seen = Log::default();
    let child = |scoped: bool, id: &'static str| {
        let (go, started) = (go.clone(), started.clone());
        let wait = from_fn("wait", "Waits for the parent.", move |_: Args, _cx| {
            let mut go = go.clone();
            let started = started.clone();
            async move {
                started.send_modify(|n| *n += 1);
                go.wait_for(|set| *set).await.unwrap();
                Ok::<_, ToolError>("waited")
            }
        });
        let log = seen.clone();
        let read = from_fn("read_flag", "Reads FLAG.", move |_: Args, cx| {
            let log = log.clone();
            async move {
                log.push(format!("{id}: {}", cx.variable("FLAG").unwrap_or("-")));
                Ok::<_, ToolError>("read")
            }
        })
        .with_meta(ToolMeta::new().variable(VariableDecl {
            scoped,
            ..decl("FLAG", VariableKind::Text, false)
        }));
        builder(&recording([
            Turn::tool_calls([ScriptedCall::new("wait", json!({}))]),
            Turn::tool_calls([ScriptedCall::new("read_flag", json!({}))]),
            Turn::text("child done"),
        ]))
        .tool(wait)
        .tool(read)
        .build()
    };
    let open = child(false, "open");
    let sealed = child(true, "sealed");
    let set = from_fn("set_flag", "Sets FLAG.", move |_: Args, cx| {
        let flag_set = flag_set.clone();
        let mut waiting = started.subscribe();
        async move {
            // Both children run alongside (parallel calls); they read FLAG only after this.
            waiting.wait_for(|n| *n == 2).await.unwrap();
            cx.set_variable("FLAG", "on", Some(VariableKind::Text));
            flag_set.send_replace(true);
            Ok::<_, ToolError>("set")
        }
    });
    let parent = builder(&recording([
        Turn::tool_calls([
            ScriptedCall::new("open_child", json!({"prompt": "go"})),
            ScriptedCall::new("sealed_child", json!({"prompt": "go"})),
            ScriptedCall::new("set_flag", json!({})),
        ]),
        Turn::text("done"),
    ]))
    .tool(SubagentTool::new("open_child", "Open.", open))
    .tool(SubagentTool::new("sealed_child", "Sealed.", sealed))
    .tool(set)
    .execution(ExecutionPolicy::Parallel { max: 3 })
    .build();
    parent.run("go").await.unwrap();
    let mut entries = seen.entries();
    entries.sort();
    assert_eq!(entries, ["open: on", "sealed: -"]);
}

#[tokio::test]
async fn precedence_is_prompt_then_tool_then_agent_then_thread() {
    use toolsmith_agent::{PromptTool, SubpromptConfig};

    // (tool value, agent value, thread value) → what the tool inside the prompt reads.
    for (tool, agent, thread, expected) in [
        (None, None, None, "prompt"),
        (Some("tool"), None, None, "tool"),
        (Some("tool"), Some("agent"), None, "agent"),
        (Some("tool"), Some("agent"), Some("thread"), "thread"),
    ] {
        let mut meta = ToolMeta::new();
        if let Some(value) = tool {
            meta = meta.env("X", value);
        }
        let read = from_fn("read_x", "Reads X.", |_: Args, cx| async move {
            Ok::<_, ToolError>(cx.variable("X").unwrap_or("-").to_string())
        })
        .with_meta(meta);
        let mut inner = builder(&recording([
            Turn::tool_calls([ScriptedCall::new("read_x", json!({})).with_id("r1")]),
            Turn::text("read"),
        ]))
        .tool(read);
        if let Some(value) = agent {
            inner = inner.variable("X", value);
        }
        let prompt = PromptTool::new(
            "check",
            "Checks.",
            inner.build(),
            SubpromptConfig::default(),
        )
        .with_variable("X", "prompt");
        let parent = builder(&recording([
            Turn::tool_calls([ScriptedCall::new("check", json!({"prompt": "go"})).with_id("c1")]),
            Turn::text("done"),
        ]))
        .tool(prompt)
        .build();
        let mut input = RunInput::from("go");
        if let Some(value) = thread {
            input = input.with_variable("X", value);
        }
        let out = parent.run(input).await.unwrap();
        let shown = result_of(&out.messages, "c1").to_text();
        assert!(
            shown.starts_with(&format!("Tool call read_x({{}}) → {expected}\n")),
            "{tool:?} {agent:?} {thread:?}: {shown}"
        );
    }
}

#[tokio::test]
async fn a_tool_level_value_satisfies_a_required_variable() {
    let tool = from_fn("needs", "Needs REGION.", |_: Args, cx| async move {
        Ok::<_, ToolError>(cx.variable("REGION").unwrap_or("-").to_string())
    })
    .with_meta(
        ToolMeta::new()
            .variable(decl("REGION", VariableKind::Text, true))
            .env("REGION", "eu-west"),
    );
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("needs", json!({})).with_id("n1")]),
        Turn::text("done"),
    ]);
    let out = builder(&model).tool(tool).build().run("go").await.unwrap();
    assert_eq!(result_of(&out.messages, "n1"), ModelOutput::text("eu-west"));
}
