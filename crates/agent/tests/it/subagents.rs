//! Sub-agent tools: the forwarded stream, usage folding, nested approvals two levels down
//! (resumed from JSON in a fresh agent), client tools inside a child, cancellation, scoped
//! variables, non-blocking children and the configuration's input shaping.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_agent::{Agent, RunErrorKind, RunInput, RunOutput, SubagentConfig, SubagentTool};
use toolsmith_core::{
    Approval, ClientTool, Message, ModelOutput, NestedHop, Part, PauseKind, RunPart, Tool,
    ToolApprovalResponse, ToolError, ToolMeta, ToolResultPart, ToolSpec, Usage, VariableDecl,
    VariableKind, from_fn,
};
use toolsmith_providers::{ScriptedModel, Turn};

fn hop(id: &str, name: &str) -> NestedHop {
    NestedHop {
        tool_call_id: id.into(),
        tool_name: name.into(),
    }
}

/// A tool that needs approval and records what it was asked.
fn deploy(log: Log) -> impl Tool {
    from_fn("deploy", "Deploy a service.", move |args: Args, _cx| {
        let log = log.clone();
        async move {
            log.push(format!("deploy {}", Value::Object(args)));
            Ok::<_, ToolError>("deployed")
        }
    })
    .with_meta(ToolMeta::new().side_effect(true).approval(Approval::Always))
}

#[tokio::test]
async fn a_blocking_sub_agent_answers_the_call_and_its_parts_are_forwarded_with_the_path() {
    // The child searched the web twice (server tool uses fold in too).
    let child_usage = Usage {
        server_tool_uses: 2,
        ..Usage::new(30, 4)
    };
    let child_model = recording([Turn::text("Paris.").with_usage(child_usage)]);
    let child = builder(&child_model).build();
    let parent_model = recording([
        call("c1", "researcher", json!({"prompt": "Capital of France?"}))
            .with_usage(Usage::new(100, 10)),
        Turn::text("It is Paris.").with_usage(Usage::new(120, 5)),
    ]);
    let parent = builder(&parent_model)
        .tool(SubagentTool::new("researcher", "Looks things up.", child))
        .build();

    let (parts, out) = stream_run(&parent, "Where is the Louvre?").await;
    let out = out.unwrap();

    assert_eq!(out.text, "It is Paris.");
    assert_eq!(result_of(&out.messages, "c1"), ModelOutput::text("Paris."));
    // The child saw only its task.
    assert_eq!(
        child_model.requests()[0].messages,
        [Message::user("Capital of France?")]
    );
    // Every child part is in the parent's stream, nested under the call, between the call and
    // its result.
    let nested: Vec<&RunPart> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::Nested { path, part } => {
                assert_eq!(*path, [hop("c1", "researcher")]);
                Some(&**part)
            }
            _ => None,
        })
        .collect();
    assert!(matches!(nested.first(), Some(RunPart::Start { .. })));
    assert!(
        nested
            .iter()
            .any(|p| matches!(p, RunPart::TextDelta { text, .. } if text == "Paris."))
    );
    assert!(matches!(nested.last(), Some(RunPart::Finish { .. })));
    let types = part_types(&parts);
    let first_nested = types.iter().position(|t| t == "nested").unwrap();
    let result = types.iter().position(|t| t == "tool-result").unwrap();
    assert!(first_nested < result);
    // The child's usage folds into the run's, not into the step's.
    let total = Usage {
        server_tool_uses: 2,
        ..Usage::new(250, 19)
    };
    assert_eq!(out.usage, total);
    assert_eq!(out.steps[0].usage, Usage::new(100, 10));
    let Some(RunPart::Finish { usage, .. }) = parts.last() else {
        panic!("the stream ends with finish")
    };
    assert_eq!(*usage, total);
}

/// Three levels: `top` calls `lead` (c1), which calls `ops` (c2), whose `deploy` call (c3)
/// needs approval.
fn three_levels(log: &Log) -> (Agent, Arc<ScriptedModel>) {
    let ops_model = recording([
        call("c3", "deploy", json!({"service": "api"})),
        Turn::text("ops: deployed api"),
    ]);
    let ops = builder(&ops_model)
        .tool(deploy(log.clone()))
        .approval_key(key())
        .build();
    let lead = builder(&recording([
        call("c2", "ops", json!({"prompt": "deploy api"})),
        Turn::text("lead: ops says deployed"),
    ]))
    .tool(SubagentTool::new("ops", "Operations.", ops))
    .approval_key(key())
    .build();
    let top = builder(&recording([
        call("c1", "lead", json!({"prompt": "ship it"})),
        Turn::text("top: shipped"),
    ]))
    .tool(SubagentTool::new("lead", "The lead.", lead))
    .approval_key(key())
    .build();
    (top, ops_model)
}

#[tokio::test]
async fn an_approval_two_levels_down_surfaces_on_the_top_and_resumes_it_from_json() {
    let log = Log::default();
    let (top, _) = three_levels(&log);
    let (parts, paused) = stream_run(&top, "Ship the API.").await;
    let paused = paused.unwrap();

    // The top run is paused on the grandchild's call, with the path to it.
    assert!(log.entries().is_empty(), "nothing runs unapproved");
    assert_eq!(paused.pending.len(), 1);
    let pause = &paused.pending[0];
    assert_eq!(pause.kind, PauseKind::Approval);
    assert_eq!(
        (pause.tool_call_id.as_str(), pause.path.clone()),
        ("c3", vec!["c1".to_string(), "c2".to_string()])
    );
    let approval = pause.approval_id().unwrap().to_string();
    assert_eq!(
        approval,
        key().approval_id("c3", "deploy", &json!({"service": "api"}))
    );
    // The request was in the stream, two levels deep.
    assert!(parts.iter().any(|p| matches!(p,
        RunPart::Nested { path, part }
            if *path == [hop("c1", "lead"), hop("c2", "ops")]
            && matches!(&**part, RunPart::ToolApprovalRequest { approval_id, .. } if *approval_id == approval)
    )));
    // The thread records the child's paused run after the call, and the call has no result.
    let last = paused.messages.last().unwrap();
    assert!(matches!(last.content.last(), Some(Part::NestedRun(r)) if r.tool_call_id == "c1"));
    assert_thread_valid(&paused.messages, &["c1"]);

    // A new process: fresh agents with the same key, the thread loaded from JSON.
    let log2 = Log::default();
    let (top2, ops_model2) = {
        let (agent, model) = fresh_three_levels_after_pause(&log2);
        (agent, model)
    };
    let input = RunInput::from(stored(&paused.messages))
        .with_approval(ToolApprovalResponse::approve(&approval));
    let (parts, out) = stream_run(&top2, input).await;
    let out = out.unwrap();

    assert_eq!(log2.entries(), [r#"deploy {"service":"api"}"#]);
    assert_eq!(out.text, "top: shipped");
    assert!(out.pending.is_empty());
    assert_eq!(
        result_of(&out.messages, "c1"),
        ModelOutput::text("lead: ops says deployed")
    );
    assert_thread_valid(&out.messages, &[]);
    // The grandchild's model saw the deploy result.
    assert_eq!(
        request_results(&ops_model2.requests()[0]),
        [("c3".to_string(), ModelOutput::text("deployed"))]
    );
    assert!(parts.iter().any(|p| matches!(p,
        RunPart::Nested { path, part }
            if path.len() == 2 && matches!(&**part, RunPart::ToolResult { tool_call_id, .. } if tool_call_id == "c3")
    )));
}

/// The agents of [`three_levels`] in a new process: each model continues where the paused
/// run stopped (its next turn is the one after the call).
fn fresh_three_levels_after_pause(log: &Log) -> (Agent, Arc<ScriptedModel>) {
    let ops_model = recording([Turn::text("ops: deployed api")]);
    let ops = builder(&ops_model)
        .tool(deploy(log.clone()))
        .approval_key(key())
        .build();
    let lead = builder(&recording([Turn::text("lead: ops says deployed")]))
        .tool(SubagentTool::new("ops", "Operations.", ops))
        .approval_key(key())
        .build();
    let top = builder(&recording([Turn::text("top: shipped")]))
        .tool(SubagentTool::new("lead", "The lead.", lead))
        .approval_key(key())
        .build();
    (top, ops_model)
}

#[tokio::test]
async fn a_nested_denial_reaches_the_grandchild_model_and_a_forged_answer_is_rejected() {
    let log = Log::default();
    let (top, _) = three_levels(&log);
    let paused = top.run("Ship the API.").await.unwrap();
    let approval = paused.pending[0].approval_id().unwrap().to_string();

    // Made up: rejected before anything runs.
    let forged = RunInput::from(stored(&paused.messages)).with_approval(
        ToolApprovalResponse::approve("apr_00000000000000000000000000000000"),
    );
    let (top2, _) = fresh_three_levels_after_pause(&log);
    let error = top2.run(forged).await.unwrap_err();
    assert!(matches!(error.kind, RunErrorKind::Config(_)), "{error}");

    let (top3, ops_model) = fresh_three_levels_after_pause(&log);
    let denied = RunInput::from(stored(&paused.messages))
        .with_approval(ToolApprovalResponse::deny(&approval, "Freeze week"));
    let out = top3.run(denied).await.unwrap();
    assert!(log.entries().is_empty());
    assert_eq!(
        request_results(&ops_model.requests()[0]),
        [(
            "c3".to_string(),
            ModelOutput::ExecutionDenied {
                reason: Some("Freeze week".into())
            }
        )]
    );
    assert_eq!(out.text, "top: shipped");
}

#[tokio::test]
async fn an_unanswered_nested_approval_keeps_the_run_paused() {
    let log = Log::default();
    let (top, _) = three_levels(&log);
    let paused = top.run("Ship the API.").await.unwrap();
    let (top2, ops_model) = fresh_three_levels_after_pause(&log);
    let again = top2.run(stored(&paused.messages)).await.unwrap();
    assert_eq!(again.pending, paused.pending);
    assert_eq!(
        ops_model.call_count(),
        0,
        "no model runs while the call waits"
    );
    assert_thread_valid(&again.messages, &["c1"]);
}

#[tokio::test]
async fn a_client_tool_inside_a_sub_agent_is_answered_through_the_parent() {
    let ask = ClientTool::new(
        ToolSpec::new(
            "ask_user",
            json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        )
        .with_description("Ask the user."),
    );
    let child_model = recording([
        call("k1", "ask_user", json!({"q": "Which colour?"})),
        Turn::text("child: blue it is"),
    ]);
    let child = builder(&child_model).tool(ask).build();
    let parent = builder(&recording([
        call("p1", "helper", json!({"prompt": "pick a colour"})),
        Turn::text("parent: done"),
    ]))
    .tool(SubagentTool::new("helper", "Helps.", child))
    .build();

    let paused = parent.run("Paint it.").await.unwrap();
    assert_eq!(paused.pending.len(), 1);
    assert_eq!(paused.pending[0].kind, PauseKind::ClientTool);
    assert_eq!(paused.pending[0].path, ["p1"]);

    // An answer for a call that waits nowhere is rejected.
    let stray = RunInput::from(paused.messages.clone()).with_tool_result(ToolResultPart {
        tool_call_id: "nope".into(),
        tool_name: "ask_user".into(),
        output: ModelOutput::text("blue"),
        provider_executed: false,
        provider_metadata: Default::default(),
    });
    assert!(matches!(
        parent.run(stray).await.unwrap_err().kind,
        RunErrorKind::Config(_)
    ));

    let answer = RunInput::from(paused.messages).with_tool_result(ToolResultPart {
        tool_call_id: "k1".into(),
        tool_name: "ask_user".into(),
        output: ModelOutput::text("blue"),
        provider_executed: false,
        provider_metadata: Default::default(),
    });
    let out = parent.run(answer).await.unwrap();
    assert_eq!(out.text, "parent: done");
    assert_eq!(
        request_results(&child_model.requests()[1]),
        [("k1".to_string(), ModelOutput::text("blue"))]
    );
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_sub_agent() {
    let saw_cancel = Arc::new(Mutex::new(false));
    let flag = saw_cancel.clone();
    let slow = from_fn("slow", "Waits.", move |_: Args, cx| {
        let flag = flag.clone();
        async move {
            cx.cancellation().cancelled().await;
            *flag.lock().unwrap() = true;
            Ok::<_, ToolError>("stopped")
        }
    });
    let child = builder(&recording([
        call("s1", "slow", json!({})),
        Turn::text("never"),
    ]))
    .tool(slow)
    .build();
    let parent = builder(&recording([
        call("p1", "helper", json!({"prompt": "wait"})),
        Turn::text("never"),
    ]))
    .tool(SubagentTool::new("helper", "Helps.", child))
    .build();

    let token = toolsmith_core::CancellationToken::new();
    let run = parent.run(RunInput::from("go").with_cancellation(token.clone()));
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    };
    let (result, ()) = tokio::join!(run, cancel);
    assert!(matches!(result.unwrap_err().kind, RunErrorKind::Cancelled));
    assert!(
        *saw_cancel.lock().unwrap(),
        "the child's tool saw the cancellation"
    );
}

#[tokio::test]
async fn a_sub_agent_inherits_variables_except_scoped_ones_and_secrets_stay_masked() {
    let seen = Log::default();
    let log = seen.clone();
    let probe = from_fn("probe", "Reads variables.", move |_: Args, cx| {
        let log = log.clone();
        async move {
            log.push(format!(
                "REGION={:?} TOKEN={:?}",
                cx.variable("REGION"),
                cx.variable("TOKEN")
            ));
            Ok::<_, ToolError>(format!(
                "token is {}",
                cx.variable("API_KEY").unwrap_or("-")
            ))
        }
    })
    .with_meta(ToolMeta::new().variable(VariableDecl {
        name: "TOKEN".into(),
        kind: VariableKind::Text,
        required: false,
        scoped: true,
        description: "Scoped to this agent.".into(),
    }));
    let child_model = recording([call("x1", "probe", json!({})), Turn::text("child done")]);
    let child = builder(&child_model).tool(probe).build();
    let key_decl = VariableDecl {
        name: "API_KEY".into(),
        kind: VariableKind::Secret,
        required: false,
        scoped: false,
        description: "A key.".into(),
    };
    let needs_key = from_fn("noop", "Declares the key.", |_: Args, _cx| async {
        Ok::<_, ToolError>("ok")
    })
    .with_meta(ToolMeta::new().variable(key_decl));
    let parent = builder(&recording([
        call("p1", "helper", json!({"prompt": "probe"})),
        Turn::text("parent done"),
    ]))
    .tool(SubagentTool::new("helper", "Helps.", child))
    .tool(needs_key)
    .build();

    let input = RunInput::from("go")
        .with_variable("REGION", "eu")
        .with_variable("TOKEN", "parent-token")
        .with_variable("API_KEY", "sk-live-123456");
    let (parts, out) = stream_run(&parent, input).await;
    out.unwrap();
    assert_eq!(seen.entries(), [r#"REGION=Some("eu") TOKEN=None"#]);
    // The child's result that names the parent's secret is masked in the child's thread and
    // in every forwarded part.
    assert_eq!(
        request_results(&child_model.requests()[1]),
        [("x1".to_string(), ModelOutput::text("token is [secret]"))]
    );
    let all = serde_json::to_string(&parts).unwrap();
    assert!(!all.contains("sk-live-123456"));
}

#[tokio::test]
async fn a_non_blocking_sub_agent_acknowledges_at_once_and_its_result_is_queued_to_the_parent() {
    let child = builder(&recording([Turn::text("report: all green")
        .with_delay_ms(100)
        .with_usage(Usage::new(10, 2))]))
    .build();
    let parent_model = recording([
        call("p1", "auditor", json!({"prompt": "audit"})),
        Turn::text("Started the audit."),
        Turn::text("The audit says all green."),
    ]);
    let config = SubagentConfig {
        blocking: false,
        ..SubagentConfig::default()
    };
    let parent = builder(&parent_model)
        .tool(SubagentTool::with_config(
            "auditor", "Audits.", child, config,
        ))
        .build();

    let out = parent.run("Audit everything.").await.unwrap();

    let ack = result_of(&out.messages, "p1").to_text();
    assert!(
        ack.contains("started in the background") && ack.contains("p1"),
        "{ack}"
    );
    // The run did not end at "Started the audit.": it waited and went on with the result.
    assert_eq!(out.text, "The audit says all green.");
    let third = &parent_model.requests()[2];
    let injected = third.messages.last().unwrap();
    assert_eq!(
        injected.text(),
        "Async tool result injected into parent conversation.\nresultId: p1\ntoolName: \
         auditor\nstatus: completed\n\nInput:\n{\"prompt\":\"audit\"}\n\nResult:\nreport: all \
         green"
    );
    assert_eq!(out.usage.output.total, Some(2));
}

#[tokio::test]
async fn the_configuration_shapes_the_input_schema_the_task_and_the_name_tag() {
    let tags = Log::default();
    let log = tags.clone();
    let whoami = from_fn("whoami", "Reports the thread tags.", move |_: Args, cx| {
        let log = log.clone();
        async move {
            log.push(cx.metadata()["tags"].to_string());
            Ok::<_, ToolError>("noted")
        }
    });
    let child_model = recording([call("w1", "whoami", json!({})), Turn::text("hi")]);
    let child = builder(&child_model).tool(whoami).build();
    let config: SubagentConfig = serde_json::from_value(json!({
        "initUserMessageProperty": "task",
        "initAgentNameProperty": "name"
    }))
    .unwrap();
    let tool = SubagentTool::with_config("worker", "Works.", child, config);
    assert_eq!(
        **tool.spec().input_schema(),
        json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The task, with everything needed to do it: the sub-agent sees nothing else of this conversation."},
                "name": {"type": "string", "minLength": 1, "description": "A short name for this instance."}
            },
            "required": ["task", "name"],
            "additionalProperties": false
        })
    );
    let parent = builder(&recording([
        call("p1", "worker", json!({"task": "say hi", "name": "scout"})),
        call("p2", "worker", json!({"task": "say hi"})),
        Turn::text("done"),
    ]))
    .tool(tool)
    .build();
    let out = parent.run("go").await.unwrap();
    assert_eq!(
        child_model.requests()[0].messages,
        [Message::user("say hi")]
    );
    assert_eq!(tags.entries(), [r#"["name:scout"]"#]);
    // Without the required name, validation stops the call before a child starts.
    assert!(result_of(&out.messages, "p2").is_error());
    assert_eq!(child_model.call_count(), 2);
}

#[tokio::test]
async fn an_optional_sub_agent_is_offered_only_when_its_flag_is_on() {
    let config = SubagentConfig {
        optional: Some("RESEARCH".into()),
        ..SubagentConfig::default()
    };
    let make = || {
        let child = Agent::builder(ScriptedModel::new([Turn::text("x")])).build();
        SubagentTool::with_config("researcher", "Researches.", child, config.clone())
    };
    for (value, offered) in [("YES", true), ("1", true), ("True", true), ("no", false)] {
        let model = recording([Turn::text("ok")]);
        let parent = builder(&model).tool(make()).build();
        parent
            .run(RunInput::from("go").with_variable("RESEARCH", value))
            .await
            .unwrap();
        assert_eq!(
            declared(&model.requests()[0]).contains(&"researcher".to_string()),
            offered,
            "RESEARCH={value}"
        );
    }
    // A flag the agent sets (as a config's declared variable does) counts like the run's own.
    let model = recording([Turn::text("ok")]);
    let parent = builder(&model)
        .tool(make())
        .variable("RESEARCH", "yes")
        .build();
    parent.run("go").await.unwrap();
    assert!(declared(&model.requests()[0]).contains(&"researcher".to_string()));
}

#[tokio::test]
async fn a_failing_sub_agent_is_an_error_result_not_a_failed_parent() {
    let child = builder(&recording([Turn::error(
        toolsmith_providers::ScriptedError::new("overloaded"),
    )]))
    .build();
    let parent = builder(&recording([
        call("p1", "helper", json!({"prompt": "try"})),
        Turn::text("parent carries on"),
    ]))
    .tool(SubagentTool::new("helper", "Helps.", child))
    .build();
    let out: RunOutput = parent.run("go").await.unwrap();
    let result = result_of(&out.messages, "p1");
    assert!(result.is_error());
    assert!(
        result.to_text().starts_with("Sub-agent \"helper\" failed"),
        "{}",
        result.to_text()
    );
    assert_eq!(out.text, "parent carries on");
}

#[tokio::test]
async fn attachments_are_checked_copied_to_the_child_and_its_files_copied_back() {
    use toolsmith_agent::Attachments;

    let dir = tempfile::tempdir().unwrap();
    let store = Attachments::new(dir.path());
    let parent_folder = store.folder("thread-9");
    std::fs::create_dir_all(&parent_folder).unwrap();
    std::fs::write(parent_folder.join("chart.png"), [0x89, b'P', b'N', b'G']).unwrap();
    std::fs::write(parent_folder.join("notes.txt"), "q3 numbers").unwrap();

    // The child writes a file of its own and names it in its answer.
    let write = from_fn(
        "write_summary",
        "Writes a summary.",
        |_: Args, cx| async move {
            let store = cx.dep::<Attachments>().unwrap();
            let folder = store.folder(cx.run_id());
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("summary.txt"), "all good").unwrap();
            Ok::<_, ToolError>("written")
        },
    );
    let child_model = recording([
        call("w1", "write_summary", json!({})),
        Turn::text("Done, see /attachments/summary.txt."),
    ]);
    let child = builder(&child_model).tool(write).build();
    let config: SubagentConfig =
        serde_json::from_value(json!({"initAttachmentsProperty": "files"})).unwrap();
    let parent = builder(&recording([
        call(
            "p1",
            "analyst",
            json!({"prompt": "summarise", "files": ["/attachments/chart.png", "/attachments/notes.txt"]}),
        ),
        call(
            "p2",
            "analyst",
            json!({"prompt": "again", "files": ["/attachments/missing.csv"]}),
        ),
        Turn::text("done"),
    ]))
    .tool(SubagentTool::with_config("analyst", "Analyses.", child, config))
    .build();
    let out = run_with_attachments(&parent, &store, "thread-9", "run-9").await;

    // The child's first message: the task, the image as a file part, and the paths.
    let first = &child_model.requests()[0].messages[0];
    assert!(
        matches!(&first.content[1], Part::File { media_type, filename, .. }
        if media_type == "image/png" && filename.as_deref() == Some("/attachments/chart.png"))
    );
    assert!(
        first
            .text()
            .contains("Attachments: /attachments/chart.png, /attachments/notes.txt")
    );
    // The child's folder is its run's: `<parent run>/<call>`.
    let child_folder = store.folder("run-9/p1");
    assert_eq!(
        std::fs::read_to_string(child_folder.join("notes.txt")).unwrap(),
        "q3 numbers"
    );
    // The child's file is the parent's now, under the parent's path.
    assert_eq!(
        result_of(&out.messages, "p1"),
        ModelOutput::text("Done, see /attachments/summary.txt.")
    );
    assert_eq!(
        std::fs::read_to_string(parent_folder.join("summary.txt")).unwrap(),
        "all good"
    );
    // A missing file stops the call before the child starts.
    let missing = result_of(&out.messages, "p2");
    assert!(missing.is_error());
    assert!(
        missing
            .to_text()
            .contains("/attachments/missing.csv does not exist"),
        "{}",
        missing.to_text()
    );
    assert_eq!(child_model.call_count(), 2);
}

#[tokio::test]
async fn a_sub_agent_declares_its_own_arguments_and_passes_them_to_the_child() {
    let seen = Log::default();
    let meta = {
        let seen = seen.clone();
        from_fn("meta", "Reads the run's metadata.", move |_: Args, cx| {
            let seen = seen.clone();
            async move {
                seen.push(cx.metadata()["arguments"].to_string());
                Ok::<_, ToolError>("ok")
            }
        })
    };
    let child_model = recording([call("m1", "meta", json!({})), Turn::text("Done.")]);
    let child = builder(&child_model).tool(meta).build();
    let config: SubagentConfig = serde_json::from_value(json!({
        "initUserMessageProperty": "task",
        "inputSchema": {
            "type": "object",
            "properties": {
                "depth": {"type": "integer", "minimum": 1},
                "style": {"type": "string", "enum": ["brief", "full"]}
            },
            "required": ["depth"]
        }
    }))
    .unwrap();
    config.check_input_schema().unwrap();
    let tool = SubagentTool::with_config("researcher", "Researches.", child, config);
    let schema = tool.spec().input_schema();
    assert_eq!(schema["required"], json!(["task", "depth"]));
    assert_eq!(schema["additionalProperties"], json!(false));
    // The same undeclared argument, on a sub-agent without its own arguments: today's error.
    let plain = SubagentTool::with_config(
        "plain",
        "Plain.",
        builder(&recording([])).build(),
        serde_json::from_value(json!({"initUserMessageProperty": "task"})).unwrap(),
    );
    let parent = builder(&recording([
        call(
            "p1",
            "researcher",
            json!({"task": "Dig.", "depth": 2, "style": "brief"}),
        ),
        call(
            "p2",
            "researcher",
            json!({"task": "Dig.", "depth": 2, "colour": "red"}),
        ),
        call("p3", "plain", json!({"task": "Dig.", "colour": "red"})),
        call("p4", "researcher", json!({"task": "Dig.", "depth": 0})),
        Turn::text("done"),
    ]))
    .tool(tool)
    .tool(plain)
    .build();
    let out = parent.run("go").await.unwrap();

    // The child's first message: the task, then its arguments as compact JSON.
    assert_eq!(
        child_model.requests()[0].messages,
        [Message::user(
            "Dig.\n\nArguments: {\"depth\":2,\"style\":\"brief\"}"
        )]
    );
    // And the child run's metadata has them.
    assert_eq!(seen.entries(), [r#"{"depth":2,"style":"brief"}"#]);
    // An undeclared argument is rejected as before; a declared one is validated.
    let undeclared = result_of(&out.messages, "p2");
    assert!(undeclared.is_error());
    assert_eq!(
        undeclared.to_text(),
        result_of(&out.messages, "p3").to_text()
    );
    assert!(result_of(&out.messages, "p4").is_error());
    assert_eq!(child_model.call_count(), 2);
}
