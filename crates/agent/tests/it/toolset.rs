//! The toolset of a run: changes between runs, per-run resolvers and optional tools.

use std::sync::{Arc, OnceLock};

use crate::common::*;
use serde_json::json;
use toolsmith_agent::{Agent, RunErrorKind, RunInput};
use toolsmith_core::{RunScope, ToolError, ToolMeta, Toolset, from_fn};
use toolsmith_providers::{ScriptedModel, Turn};

fn answering(answer: &'static str, name: &'static str) -> impl toolsmith_core::Tool {
    answering_with(answer, name, ToolMeta::new())
}

fn answering_with(
    answer: &'static str,
    name: &'static str,
    meta: ToolMeta,
) -> impl toolsmith_core::Tool {
    from_fn(name, "Answers.", move |_: Args, _cx| async move {
        Ok::<_, ToolError>(answer)
    })
    .with_meta(meta)
}

/// A model that calls `name` once, then answers.
fn calls_then_answers(name: &'static str) -> Arc<ScriptedModel> {
    Arc::new(
        ScriptedModel::respond(move |req| {
            if req
                .messages
                .last()
                .is_some_and(|m| m.role == toolsmith_core::Role::User)
            {
                Turn::call(name, json!({}))
            } else {
                Turn::text("done")
            }
        })
        .recording(),
    )
}

#[tokio::test]
async fn add_remove_and_replace_change_later_runs() {
    let model = calls_then_answers("a");
    let agent = builder(&model).tool(answering("a v1", "a")).build();

    assert!(agent.add_tool(answering("b v1", "b")).is_none());
    assert_eq!(agent.list_tools(), ["a", "b"]);
    let out = agent.run("one").await.unwrap();
    assert_eq!(declared(&model.requests()[0]), ["a", "b"]);
    assert_eq!(result_of(&out.messages, "call_0_0"), text("a v1"));

    assert!(agent.replace_tool(answering("a v2", "a")));
    assert!(!agent.replace_tool(answering("zzz", "zzz")));
    assert!(agent.remove_tool("b"));
    assert!(!agent.remove_tool("b"));
    assert_eq!(agent.list_tools(), ["a"]);
    let out = agent.run("two").await.unwrap();
    assert_eq!(declared(&model.requests()[2]), ["a"]);
    assert_eq!(result_of(&out.messages, "call_2_0"), text("a v2"));

    // Adding under an existing name replaces in place and hands back the old tool.
    let old = agent.add_tool(answering("a v3", "a")).expect("a was there");
    assert_eq!(old.spec().name(), "a");
    assert_eq!(agent.list_tools(), ["a"]);
}

#[tokio::test]
async fn a_running_run_keeps_the_toolset_it_started_with() {
    let handle: Arc<OnceLock<Agent>> = Arc::default();
    let inner = handle.clone();
    let vanish = from_fn("vanish", "Removes itself.", move |_: Args, _cx| {
        let inner = inner.clone();
        async move {
            let removed = inner.get().unwrap().remove_tool("vanish");
            Ok::<_, ToolError>(format!("removed={removed}"))
        }
    });
    let model = recording([
        Turn::call("vanish", json!({})),
        Turn::call("vanish", json!({})),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(vanish).build();
    handle.set(agent.clone()).unwrap();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(result_of(&out.messages, "call_0_0"), text("removed=true"));
    assert_eq!(result_of(&out.messages, "call_1_0"), text("removed=false"));
    assert_eq!(declared(&model.requests()[2]), ["vanish"]);
    assert!(agent.list_tools().is_empty());
}

#[tokio::test]
async fn resolver_adds_per_run_tools_and_static_tools_win() {
    let resolutions = Counter::default();
    let counted = resolutions.clone();
    let model = recording([
        Turn::tool_calls([
            toolsmith_providers::ScriptedCall::new("lookup", json!({})).with_id("c1"),
            toolsmith_providers::ScriptedCall::new("whoami", json!({})).with_id("c2"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(answering("static lookup", "lookup"))
        .resolver(move |scope: &RunScope| -> Result<Toolset, ToolError> {
            counted.hit();
            let run_id = scope.run_id.to_string();
            let whoami = from_fn("whoami", "Who am I.", move |_: Args, _cx| {
                let run_id = run_id.clone();
                async move { Ok::<_, ToolError>(format!("run {run_id}")) }
            });
            Ok(Toolset::new()
                .with(answering("resolved lookup", "lookup"))
                .with(whoami))
        })
        .build();

    let out = agent
        .run(RunInput::from("hi").with_run_id("r7"))
        .await
        .unwrap();

    assert_eq!(resolutions.get(), 1);
    assert_eq!(declared(&model.requests()[0]), ["lookup", "whoami"]);
    assert_eq!(result_of(&out.messages, "c1"), text("static lookup"));
    assert_eq!(result_of(&out.messages, "c2"), text("run r7"));
    // Resolved tools belong to the run, not the agent.
    assert_eq!(agent.list_tools(), ["lookup"]);
}

#[tokio::test]
async fn resolver_failure_is_a_config_error() {
    let model = recording([Turn::text("never")]);
    let agent = builder(&model)
        .resolver(|_: &RunScope| -> Result<Toolset, ToolError> { Err(ToolError::msg("no tenant")) })
        .build();

    let (parts, result) = stream_run(&agent, "hi").await;
    let err = result.unwrap_err();

    assert_eq!(
        err.kind,
        RunErrorKind::Config("The tool resolver failed: no tenant".into())
    );
    assert_eq!(err.code(), "CONFIG");
    assert_eq!(model.call_count(), 0);
    assert_eq!(part_types(&parts), ["start", "error"]);
}

#[tokio::test]
async fn optional_tool_is_offered_only_when_its_flag_is_on() {
    let model = Arc::new(ScriptedModel::respond(|_| Turn::text("ok")).recording());
    let agent = builder(&model)
        .tool(answering("always", "base"))
        .tool(answering_with(
            "beta",
            "beta",
            ToolMeta::new().optional("BETA"),
        ))
        .build();
    let values = [
        None,
        Some("no"),
        Some("0"),
        Some("yes"),
        Some("1"),
        Some("TRUE"),
        Some(" true "),
    ];

    for value in values {
        let mut input = RunInput::from("hi");
        if let Some(value) = value {
            input = input.with_variable("BETA", value);
        }
        agent.run(input).await.unwrap();
    }

    let offered: Vec<String> = model
        .requests()
        .iter()
        .map(|r| declared(r).join(","))
        .collect();
    let (without, with) = ("base", "base,beta");
    assert_eq!(offered, [without, without, without, with, with, with, with]);
}

#[tokio::test]
async fn an_optional_tool_that_is_off_is_an_unknown_tool() {
    let model = recording([Turn::call("beta", json!({})), Turn::text("done")]);
    let agent = builder(&model)
        .tool(answering("always", "base"))
        .tool(answering_with(
            "beta",
            "beta",
            ToolMeta::new().optional("BETA"),
        ))
        .build();

    let out = agent.run("hi").await.unwrap();

    assert_eq!(
        result_of(&out.messages, "call_0_0"),
        error_text(r#"Tool "beta" not found. Available tools: base."#)
    );
}

#[tokio::test]
async fn builder_tools_keep_the_first_on_a_clash_and_set_tools_replaces_all() {
    let model = recording([Turn::call("a", json!({})), Turn::text("done")]);
    let agent = builder(&model)
        .tool(answering("a first", "a"))
        .tools(
            Toolset::new()
                .with(answering("a second", "a"))
                .with(answering("b", "b")),
        )
        .build();

    assert_eq!(agent.list_tools(), ["a", "b"]);
    let out = agent.run("hi").await.unwrap();
    assert_eq!(result_of(&out.messages, "call_0_0"), text("a first"));

    agent.set_tools(Toolset::new().with(answering("c", "c")));
    assert_eq!(agent.list_tools(), ["c"]);
}

#[tokio::test]
async fn requests_carry_the_agents_tool_choice_parallel_flag_and_settings() {
    let model = recording([Turn::text("ok")]);
    let settings = toolsmith_core::CallSettings {
        temperature: Some(0.5),
        max_output_tokens: Some(64),
        ..Default::default()
    };
    let choice = toolsmith_core::ToolChoice::Tool {
        tool_name: "a".into(),
    };
    let agent = builder(&model)
        .tool(answering("a", "a"))
        .tool_choice(choice.clone())
        .parallel_tool_calls(false)
        .settings(settings.clone())
        .build();

    agent.run("hi").await.unwrap();

    let request = &model.requests()[0];
    assert_eq!(request.tool_choice, choice);
    assert_eq!(request.parallel_tool_calls, Some(false));
    assert_eq!(request.settings, settings);
}

#[tokio::test]
async fn parallel_calls_are_off_by_default_when_calls_run_one_at_a_time() {
    use toolsmith_agent::ExecutionPolicy;

    // Sequential (the default), tools offered: false, marked as a default.
    let model = recording([Turn::text("ok")]);
    builder(&model)
        .tool(answering("a", "a"))
        .build()
        .run("hi")
        .await
        .unwrap();
    let request = &model.requests()[0];
    assert_eq!(request.parallel_tool_calls, Some(false));
    assert!(request.parallel_tool_calls_defaulted);

    // No tools offered: nothing to say.
    let model = recording([Turn::text("ok")]);
    builder(&model).build().run("hi").await.unwrap();
    assert_eq!(model.requests()[0].parallel_tool_calls, None);

    // Parallel execution: the provider's default.
    let model = recording([Turn::text("ok")]);
    builder(&model)
        .tool(answering("a", "a"))
        .execution(ExecutionPolicy::parallel())
        .build()
        .run("hi")
        .await
        .unwrap();
    assert_eq!(model.requests()[0].parallel_tool_calls, None);

    // The builder's word wins either way, and is no default.
    for policy in [ExecutionPolicy::Sequential, ExecutionPolicy::parallel()] {
        let model = recording([Turn::text("ok")]);
        builder(&model)
            .tool(answering("a", "a"))
            .execution(policy)
            .parallel_tool_calls(true)
            .build()
            .run("hi")
            .await
            .unwrap();
        let request = &model.requests()[0];
        assert_eq!(request.parallel_tool_calls, Some(true));
        assert!(!request.parallel_tool_calls_defaulted);
    }
}
