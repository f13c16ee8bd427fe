//! How the loop treats each tool call: lookup, parsing, validation, tool errors, kinds, panics,
//! the call context, strict mode and provider metadata.

use std::sync::{Arc, Mutex};

use crate::common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_agent::{CallOutcome, RunErrorKind, RunInput};
use toolsmith_core::{
    Dependencies, Message, ModelOutput, Pause, PauseKind, ProviderTool, RunPart, SessionState,
    ToolError, ToolKind, ToolResultPart, UnifiedFinishReason, from_fn,
};
use toolsmith_providers::{ScriptedCall, Turn};

#[derive(Deserialize, JsonSchema)]
struct Get {
    id: i64,
}

fn get_tool(runs: Counter) -> impl toolsmith_core::Tool {
    from_fn("get", "Get a record.", move |args: Get, _cx| {
        let runs = runs.clone();
        async move {
            runs.hit();
            Ok::<_, ToolError>(format!("record {}", args.id))
        }
    })
}

#[tokio::test]
async fn unknown_tool_gets_an_error_listing_the_tools_in_toolset_order() {
    let model = recording([Turn::call("nope", json!({})), Turn::text("done")]);
    let agent = builder(&model)
        .tool(ok_tool("zeta", Counter::default()))
        .tool(ok_tool("alpha", Counter::default()))
        .build();

    let out = agent.run("hi").await.unwrap();

    let expected = r#"Tool "nope" not found. Available tools: zeta, alpha."#;
    let error = out.steps[0].tool_results[0].error().unwrap();
    assert_eq!(error.message(), expected);
    assert_eq!(error.code(), "UNKNOWN_TOOL");
    // The loop went on, and the model saw the error.
    assert_eq!(out.steps.len(), 2);
    assert_eq!(out.text, "done");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        request_results(&requests[1]),
        [("call_0_0".to_string(), error_text(expected))]
    );
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn unknown_tool_with_an_empty_toolset_says_no_tools_are_available() {
    let model = recording([Turn::call("nope", json!({})), Turn::text("done")]);
    let agent = builder(&model).build();

    let out = agent.run("hi").await.unwrap();

    let expected = r#"Tool "nope" not found. No tools are available."#;
    assert_eq!(result_of(&out.messages, "call_0_0"), error_text(expected));
    assert_eq!(
        request_results(&model.requests()[1]),
        [("call_0_0".to_string(), error_text(expected))]
    );
    assert_eq!(out.text, "done");
}

#[tokio::test]
async fn empty_argument_text_runs_the_tool_with_an_empty_object() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = seen.clone();
    let tool = from_fn("probe", "Probe.", move |args: Args, _cx| {
        let recorder = recorder.clone();
        async move {
            recorder.lock().unwrap().push(Value::Object(args));
            Ok::<_, ToolError>("probed")
        }
    });
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::raw("probe", ""),
            ScriptedCall::raw("probe", "  "),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(tool).build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(*seen.lock().unwrap(), [json!({}), json!({})]);
    assert_eq!(out.steps[0].tool_results[0].input, json!({}));
    assert_eq!(result_of(&out.messages, "call_0_0"), text("probed"));
    assert_eq!(result_of(&out.messages, "call_0_1"), text("probed"));
}

#[tokio::test]
async fn unparseable_json_is_invalid_arguments_and_the_tool_never_runs() {
    let runs = Counter::default();
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::raw("get", r#"{"id": 1"#).with_id("bad"),
            ScriptedCall::new("get", json!({"id": 2})).with_id("good"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(get_tool(runs.clone())).build();

    let (parts, out) = stream_run(&agent, "hi").await;
    let out = out.unwrap();

    // Only the valid call ran.
    assert_eq!(runs.get(), 1);
    let bad = out.steps[0].tool_results[0].error().unwrap();
    assert_eq!(bad.code(), "INVALID_INPUT");
    assert!(
        bad.message()
            .starts_with("Invalid arguments: the input is not valid JSON ("),
        "{}",
        bad.message()
    );
    assert_eq!(result_of(&out.messages, "good"), text("record 2"));
    assert_eq!(
        result_of(&out.messages, "bad"),
        ModelOutput::error_text(bad.message())
    );
    // The assistant message records the invalid input as `{}`.
    let inputs: Vec<Value> = out.messages[1]
        .tool_calls()
        .map(|c| c.input.clone())
        .collect();
    assert_eq!(inputs, [json!({}), json!({"id": 2})]);
    // The `tool-call` parts say which call was invalid.
    let flags: Vec<(String, bool)> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::ToolCall {
                tool_call_id,
                invalid,
                ..
            } => Some((tool_call_id.clone(), *invalid)),
            _ => None,
        })
        .collect();
    assert_eq!(flags, [("bad".into(), true), ("good".into(), false)]);
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn schema_violation_carries_the_validator_message_and_other_calls_still_run() {
    let runs = Counter::default();
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("get", json!({"id": "x"})).with_id("typed"),
            ScriptedCall::new("get", json!({})).with_id("missing"),
            ScriptedCall::new("get", json!({"id": 3})).with_id("good"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(get_tool(runs.clone())).build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(runs.get(), 1);
    assert_eq!(
        result_of(&out.messages, "typed"),
        error_text(r#"Invalid arguments: /id: "x" is not of type "integer""#)
    );
    assert_eq!(
        result_of(&out.messages, "missing"),
        error_text(r#"Invalid arguments: "id" is a required property"#)
    );
    assert_eq!(result_of(&out.messages, "good"), text("record 3"));
    let recorded: Vec<Value> = out.messages[1]
        .tool_calls()
        .map(|c| c.input.clone())
        .collect();
    assert_eq!(recorded, [json!({}), json!({}), json!({"id": 3})]);
    assert_eq!(out.steps[0].tool_results[0].input, json!({}));
}

#[tokio::test]
async fn tool_error_becomes_an_error_result_and_the_loop_goes_on() {
    let tool = from_fn("flaky", "Fails.", |_: Args, _cx| async {
        Err::<String, _>(ToolError::new("X_CODE", "boom"))
    });
    let model = recording([Turn::call("flaky", json!({})), Turn::text("recovered")]);
    let agent = builder(&model).tool(tool).build();

    let (parts, out) = stream_run(&agent, "hi").await;
    let out = out.unwrap();

    assert_eq!(result_of(&out.messages, "call_0_0"), error_text("boom"));
    let error = parts
        .iter()
        .find_map(|p| match p {
            RunPart::ToolError { error, .. } => Some(error.clone()),
            _ => None,
        })
        .expect("a tool-error part");
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("X_CODE", "boom")
    );
    assert_eq!(out.text, "recovered");
    assert_eq!(
        request_results(&model.requests()[1]),
        [("call_0_0".to_string(), error_text("boom"))]
    );
}

#[tokio::test]
async fn fatal_tool_error_fails_the_run_and_answers_every_call() {
    let after = Counter::default();
    let before = Counter::default();
    let fatal = from_fn("fatal", "Fails fatally.", |_: Args, _cx| async {
        Err::<String, _>(ToolError::new("DISK_GONE", "the disk is gone").fatal())
    });
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("before", json!({})).with_id("c1"),
            ScriptedCall::new("fatal", json!({})).with_id("c2"),
            ScriptedCall::new("after", json!({})).with_id("c3"),
            ScriptedCall::new("after", json!({})).with_id("c4"),
        ]),
        Turn::text("never"),
    ]);
    let agent = builder(&model)
        .tool(ok_tool("before", before.clone()))
        .tool(fatal)
        .tool(ok_tool("after", after.clone()))
        .build();

    let (parts, result) = stream_run(&agent, "hi").await;
    let err = result.unwrap_err();

    match &err.kind {
        RunErrorKind::Tool(e) => {
            assert_eq!(e.code(), "DISK_GONE");
            assert!(e.is_fatal());
        }
        other => panic!("expected a tool error, got {other:?}"),
    }
    assert_eq!(err.code(), "DISK_GONE");
    assert_eq!(
        err.to_string(),
        r#"tool "fatal" failed fatally: the disk is gone"#
    );
    assert_eq!((before.get(), after.get()), (1, 0));
    assert_eq!(model.call_count(), 1);
    let types = part_types(&parts);
    assert_eq!(types.last().map(String::as_str), Some("error"));
    assert!(!types.contains(&"finish".to_string()));
    match parts.last().unwrap() {
        RunPart::Error { error } => assert_eq!(error.code, "DISK_GONE"),
        other => panic!("expected an error part, got {other:?}"),
    }

    let messages = &err.output.messages;
    assert_thread_valid(messages, &[]);
    let not_run = "Not executed: the run stopped after a fatal error in another tool call.";
    assert_eq!(
        results(messages),
        [
            ("c1".to_string(), text("before ok")),
            ("c2".to_string(), error_text("the disk is gone")),
            ("c3".to_string(), error_text(not_run)),
            ("c4".to_string(), error_text(not_run)),
        ]
    );
    let codes: Vec<&str> = err.output.steps[0]
        .tool_results
        .iter()
        .map(|r| r.error().map_or("ok", |e| e.code()))
        .collect();
    assert_eq!(codes, ["ok", "DISK_GONE", "NOT_EXECUTED", "NOT_EXECUTED"]);
}

#[tokio::test]
async fn provider_tool_called_as_a_local_call_has_no_server_side_executor() {
    let runs = Counter::default();
    let counted = runs.clone();
    let search = from_fn("web_search", "Search the web.", move |_: Args, _cx| {
        let counted = counted.clone();
        async move {
            counted.hit();
            Ok::<_, ToolError>("local")
        }
    })
    .with_kind(ToolKind::Provider(ProviderTool {
        id: "openai.web_search".into(),
        args: json!({}),
    }));
    let model = recording([
        Turn::call("web_search", json!({"q": "x"})),
        Turn::text("ok"),
    ]);
    let agent = builder(&model).tool(search).build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(runs.get(), 0);
    assert_eq!(
        result_of(&out.messages, "call_0_0"),
        error_text("No server-side executor.")
    );
    assert_eq!(out.text, "ok");
}

#[tokio::test]
async fn client_tool_pauses_the_run_and_resuming_with_its_result_finishes() {
    let client_runs = Counter::default();
    let lookups = Counter::default();
    let counted = client_runs.clone();
    let ask = from_fn("ask_user", "Ask the user.", move |_: Args, _cx| {
        let counted = counted.clone();
        async move {
            counted.hit();
            Ok::<_, ToolError>("must not run here")
        }
    })
    .with_kind(ToolKind::Client);
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("ask_user", json!({"question": "colour?"})).with_id("c1"),
            ScriptedCall::new("lookup", json!({})).with_id("c2"),
        ]),
        Turn::text("Blue it is."),
    ]);
    let agent = builder(&model)
        .tool(ask)
        .tool(ok_tool("lookup", lookups.clone()))
        .build();

    let out = agent.run("Pick a colour").await.unwrap();

    assert!(out.is_paused());
    assert_eq!(
        out.pending,
        [Pause::new(
            PauseKind::ClientTool,
            "c1",
            "ask_user",
            json!({"question": "colour?"})
        )]
    );
    assert!(matches!(
        out.steps[0].tool_results[0].outcome,
        CallOutcome::Paused(_)
    ));
    assert_eq!(out.steps.len(), 1);
    assert_eq!(model.call_count(), 1);
    assert_eq!((client_runs.get(), lookups.get()), (0, 1));
    assert_eq!(
        results(&out.messages),
        [("c2".to_string(), text("lookup ok"))]
    );
    assert_thread_valid(&out.messages, &["c1"]);

    // Resume: the stored thread plus the client's answer.
    let mut thread = out.messages.clone();
    thread.push(Message::tool_results(vec![ToolResultPart {
        tool_call_id: "c1".into(),
        tool_name: "ask_user".into(),
        output: ModelOutput::text("blue"),
        provider_executed: false,
        provider_metadata: Default::default(),
    }]));
    let resumed = agent.run(thread).await.unwrap();

    assert_eq!(resumed.text, "Blue it is.");
    assert!(resumed.pending.is_empty());
    assert_eq!((client_runs.get(), lookups.get()), (0, 1));
    // The answers reach the model in call order, in one tool message.
    assert_eq!(
        request_results(&model.requests()[1]),
        [
            ("c1".to_string(), text("blue")),
            ("c2".to_string(), text("lookup ok")),
        ]
    );
    assert_thread_valid(&resumed.messages, &[]);
}

/// The caller may answer a client tool with an error: the model gets it as the call's error
/// result (through `RunInput::with_tool_result`, the other way in).
#[tokio::test]
async fn a_client_tool_answered_with_an_error_gives_the_model_that_error() {
    let ask = from_fn("ask_user", "Ask the user.", |_: Args, _cx| async {
        Ok::<_, ToolError>("must not run here")
    })
    .with_kind(ToolKind::Client);
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("ask_user", json!({})).with_id("c1")]),
        Turn::text("Understood."),
    ]);
    let agent = builder(&model).tool(ask).build();
    let paused = agent.run("Pick a colour").await.unwrap();
    assert_eq!(paused.pending.len(), 1);

    let answer = ToolResultPart {
        tool_call_id: "c1".into(),
        tool_name: "ask_user".into(),
        output: ModelOutput::error_text("The user closed the dialog."),
        provider_executed: false,
        provider_metadata: Default::default(),
    };
    let resumed = agent
        .run(RunInput::from(paused.messages).with_tool_result(answer))
        .await
        .unwrap();
    assert_eq!(resumed.text, "Understood.");
    let sent = request_results(&model.requests()[1]);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].1.is_error());
    assert_eq!(sent[0].1.to_text(), "The user closed the dialog.");
    assert_thread_valid(&resumed.messages, &[]);
}

#[tokio::test]
async fn panicking_tool_becomes_tool_panicked_and_the_run_goes_on() {
    let tool = from_fn("boom", "Panics.", |args: Args, _cx| async move {
        if args.is_empty() {
            panic!("secret internal state");
        }
        Ok::<_, ToolError>("unreachable")
    });
    let model = recording([Turn::call("boom", json!({})), Turn::text("still here")]);
    let agent = builder(&model).tool(tool).build();

    let out = agent.run("hi").await.unwrap();

    let error = out.steps[0].tool_results[0].error().unwrap();
    assert_eq!(error.code(), "TOOL_PANICKED");
    assert_eq!(
        result_of(&out.messages, "call_0_0"),
        error_text(r#"Tool "boom" failed unexpectedly (it panicked)."#)
    );
    // The panic payload stays out of the model's view.
    assert_eq!(error.operator_detail(), Some("secret internal state"));
    assert_eq!(out.text, "still here");
}

#[tokio::test]
async fn stop_finish_reason_with_tool_calls_still_executes_them() {
    let runs = Counter::default();
    let model = recording([
        Turn::call("lookup", json!({})).with_finish(UnifiedFinishReason::Stop),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(ok_tool("lookup", runs.clone()))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(runs.get(), 1);
    assert_eq!(out.steps.len(), 2);
    assert_eq!(
        out.steps[0].finish_reason.unified,
        UnifiedFinishReason::Stop
    );
    assert_eq!(result_of(&out.messages, "call_0_0"), text("lookup ok"));
}

struct Db(&'static str);

#[derive(Deserialize, JsonSchema)]
struct Remember {
    value: String,
}

#[tokio::test]
async fn tool_context_carries_key_step_state_metadata_and_deps() {
    let log = Log::default();
    let remember_log = log.clone();
    let remember = from_fn("remember", "Remember.", move |args: Remember, cx| {
        let log = remember_log.clone();
        async move {
            log.push(format!(
                "remember key={} step={} id={}",
                cx.idempotency_key(),
                cx.step(),
                cx.tool_call_id()
            ));
            cx.state().set("remembered", Value::String(args.value));
            Ok::<_, ToolError>(())
        }
    });
    let recall_log = log.clone();
    let recall = from_fn("recall", "Recall.", move |_: Args, cx| {
        let log = recall_log.clone();
        async move {
            log.push(format!(
                "recall key={} step={} run={} state={} tenant={} db={}",
                cx.idempotency_key(),
                cx.step(),
                cx.run_id(),
                cx.state().get("remembered").unwrap_or_default(),
                cx.metadata()["tenant"],
                cx.dep::<Db>().map_or("none", |db| db.0),
            ));
            Ok::<_, ToolError>(())
        }
    });
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("remember", json!({"value": "v1"})).with_id("c1")]),
        Turn::tool_calls([ScriptedCall::new("recall", json!({})).with_id("c2")]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(remember).tool(recall).build();
    let mut deps = Dependencies::new();
    deps.insert(Db("sqlite"));
    let state = SessionState::default();
    let input = RunInput::from("x")
        .with_run_id("r1")
        .with_metadata(json!({"tenant": "acme"}).as_object().unwrap().clone())
        .with_deps(deps)
        .with_state(state.clone());

    let out = agent.run(input).await.unwrap();

    assert_eq!(out.run_id, "r1");
    assert_eq!(
        log.entries(),
        [
            "remember key=r1:c1 step=0 id=c1",
            r#"recall key=r1:c2 step=1 run=r1 state="v1" tenant="acme" db=sqlite"#,
        ]
    );
    // The caller's state handle sees what the tools wrote.
    assert_eq!(state.get("remembered"), Some(json!("v1")));
}

#[derive(Deserialize, JsonSchema)]
struct Search {
    q: String,
    #[serde(default)]
    limit: u32,
}

fn search_tool(strict: bool, seen: Log) -> impl toolsmith_core::Tool {
    from_fn("search", "Search.", move |args: Search, _cx| {
        let seen = seen.clone();
        async move {
            seen.push(format!("{} limit={}", args.q, args.limit));
            Ok::<_, ToolError>("found")
        }
    })
    .map_spec(move |s| s.with_strict(strict))
}

#[tokio::test]
async fn strict_tool_receiving_null_for_an_optional_property_runs_without_it() {
    let seen = Log::default();
    let model = recording([
        Turn::call("search", json!({"q": "rust", "limit": null})),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(search_tool(true, seen.clone()))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(seen.entries(), ["rust limit=0"]);
    assert_eq!(out.steps[0].tool_results[0].input, json!({"q": "rust"}));
    let recorded: Vec<Value> = out.messages[1]
        .tool_calls()
        .map(|c| c.input.clone())
        .collect();
    assert_eq!(recorded, [json!({"q": "rust"})]);
    assert_eq!(result_of(&out.messages, "call_0_0"), text("found"));
}

#[tokio::test]
async fn non_strict_tool_receiving_null_for_an_optional_property_is_invalid() {
    let seen = Log::default();
    let model = recording([
        Turn::call("search", json!({"q": "rust", "limit": null})),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(search_tool(false, seen.clone()))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert!(seen.entries().is_empty());
    let ModelOutput::ErrorText { value } = result_of(&out.messages, "call_0_0") else {
        panic!("expected an error result");
    };
    assert!(
        value.starts_with("Invalid arguments: /limit: null"),
        "{value}"
    );
}
