//! Answering approvals and resuming: approve, deny, edit, forge, replay, resume in another
//! process, the agent's policy, "always" answers and timeouts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_agent::{
    Agent, ApprovalKey, ApprovalPolicy, RunErrorKind, RunInput, RunOutput, TimeoutAction,
};
use toolsmith_core::{
    Approval, Message, Part, PauseKind, RunPart, Tool, ToolApprovalResponse, ToolError, ToolKind,
    ToolMeta, from_fn,
};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pay {
    #[schemars(range(max = 1000))]
    amount: u64,
}

/// A transfer tool that needs approval and records the amounts it moved.
fn transfer(moved: Arc<Mutex<Vec<Value>>>) -> impl Tool {
    from_fn("transfer", "Move money.", move |args: Pay, _cx| {
        let moved = moved.clone();
        async move {
            moved.lock().unwrap().push(json!(args.amount));
            Ok::<_, ToolError>("moved")
        }
    })
    .with_meta(ToolMeta::new().side_effect(true).approval(Approval::Always))
}

struct Bank {
    model: Arc<ScriptedModel>,
    moved: Arc<Mutex<Vec<Value>>>,
    agent: Agent,
}

/// An agent whose model asks for `calls`, then answers "done".
fn bank(calls: Vec<ScriptedCall>) -> Bank {
    let moved = Arc::new(Mutex::new(Vec::new()));
    let model = recording([Turn::tool_calls(calls), Turn::text("done")]);
    let agent = builder(&model)
        .tool(transfer(moved.clone()))
        .approval_key(key())
        .build();
    Bank {
        model,
        moved,
        agent,
    }
}

fn pay(id: &str, amount: u64) -> ScriptedCall {
    ScriptedCall::new("transfer", json!({ "amount": amount })).with_id(id)
}

/// The approval id a pause carries.
fn approval_id(out: &RunOutput, call: &str) -> String {
    let pause = out
        .pending
        .iter()
        .find(|p| p.tool_call_id == call)
        .expect("the call waits");
    assert_eq!(pause.kind, PauseKind::Approval);
    pause.approval_id().expect("an approval id").to_string()
}

/// The thread through JSON, as a store would keep it.
#[tokio::test]
async fn an_approved_call_runs_on_resume_and_the_model_sees_its_result() {
    let bank = bank(vec![pay("t1", 5)]);
    let paused = bank.agent.run("pay 5").await.unwrap();
    let id = approval_id(&paused, "t1");
    assert_eq!(
        id,
        key().approval_id("t1", "transfer", &json!({"amount": 5}))
    );
    // The pause is data in the thread: the request follows the call.
    let last = paused.messages.last().unwrap();
    assert!(
        matches!(last.content.last(), Some(Part::ToolApprovalRequest(r)) if r.approval_id == id)
    );
    assert_eq!(bank.model.call_count(), 1);

    let input =
        RunInput::from(stored(&paused.messages)).with_approval(ToolApprovalResponse::approve(&id));
    let (parts, out) = stream_run(&bank.agent, input).await;
    let out = out.unwrap();

    assert_eq!(*bank.moved.lock().unwrap(), [json!(5)]);
    assert_eq!(out.text, "done");
    assert!(out.pending.is_empty());
    assert_eq!(result_of(&out.messages, "t1"), text("moved"));
    assert_thread_valid(&out.messages, &[]);
    assert!(part_types(&parts).contains(&"tool-result".to_string()));
    // The model's second request carries the result, and never an approval part.
    let request = &bank.model.requests()[1];
    assert_eq!(
        request_results(request),
        [("t1".to_string(), text("moved"))]
    );
}

#[tokio::test]
async fn a_denial_tells_the_model_the_reason_and_the_tool_never_runs() {
    let bank = bank(vec![pay("a", 5), pay("b", 7)]);
    let paused = bank.agent.run("pay").await.unwrap();
    let (a, b) = (approval_id(&paused, "a"), approval_id(&paused, "b"));

    let input = RunInput::from(paused.messages)
        .with_approval(ToolApprovalResponse::deny(&a, "Not this month"))
        .with_approval(ToolApprovalResponse {
            reason: None,
            ..ToolApprovalResponse::deny(&b, "")
        });
    let (parts, out) = stream_run(&bank.agent, input).await;
    let out = out.unwrap();

    assert!(bank.moved.lock().unwrap().is_empty());
    assert_eq!(result_of(&out.messages, "a"), denied("Not this month"));
    assert_eq!(
        result_of(&out.messages, "b"),
        denied("Tool call denied by human reviewer")
    );
    let denied: Vec<Value> = parts
        .iter()
        .filter(|p| matches!(p, RunPart::ToolOutputDenied { .. }))
        .map(|p| serde_json::to_value(p).unwrap())
        .collect();
    assert_eq!(
        denied,
        [
            json!({"type": "tool-output-denied", "toolCallId": "a", "toolName": "transfer", "reason": "Not this month"}),
            json!({"type": "tool-output-denied", "toolCallId": "b", "toolName": "transfer", "reason": "Tool call denied by human reviewer"}),
        ]
    );
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn edited_arguments_are_validated_again() {
    let bank = bank(vec![pay("ok", 5), pay("bad", 6)]);
    let paused = bank.agent.run("pay").await.unwrap();
    let (ok, bad) = (approval_id(&paused, "ok"), approval_id(&paused, "bad"));

    let input = RunInput::from(paused.messages)
        .with_approval(ToolApprovalResponse::approve(&ok).with_input(json!({"amount": 4})))
        .with_approval(ToolApprovalResponse::approve(&bad).with_input(json!({"amount": 5000})));
    let out = bank.agent.run(input).await.unwrap();

    assert_eq!(
        *bank.moved.lock().unwrap(),
        [json!(4)],
        "only the valid edit ran"
    );
    let ModelOutputText(message) = error_message(&result_of(&out.messages, "bad"));
    assert!(
        message.starts_with("Invalid arguments: /amount: 5000 is greater than"),
        "{message}"
    );
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn a_forged_or_replayed_answer_fails_the_run_before_anything_runs() {
    let bank = bank(vec![pay("t1", 5)]);
    let paused = bank.agent.run("pay").await.unwrap();
    let id = approval_id(&paused, "t1");

    // An id made up by the client, or made with another key.
    for forged in [
        "apr_00000000000000000000000000000000".to_string(),
        ApprovalKey::new([1u8; 32]).approval_id("t1", "transfer", &json!({"amount": 5})),
    ] {
        let input = RunInput::from(paused.messages.clone())
            .with_approval(ToolApprovalResponse::approve(&forged));
        let error = bank.agent.run(input).await.unwrap_err();
        let RunErrorKind::Config(message) = &error.kind else {
            panic!("{error:?}")
        };
        assert!(
            message.contains("answers no approval waiting in this thread"),
            "{message}"
        );
        assert!(
            error.output.pending.is_empty() || error.output.messages.len() == paused.messages.len()
        );
    }
    assert!(bank.moved.lock().unwrap().is_empty());

    // Answered once: the same answer again matches nothing.
    let done = bank
        .agent
        .run(
            RunInput::from(paused.messages.clone())
                .with_approval(ToolApprovalResponse::approve(&id)),
        )
        .await
        .unwrap();
    let replay = RunInput::from(done.messages).with_approval(ToolApprovalResponse::approve(&id));
    let error = bank.agent.run(replay).await.unwrap_err();
    assert!(matches!(error.kind, RunErrorKind::Config(_)));
    assert_eq!(bank.moved.lock().unwrap().len(), 1, "ran once");
}

#[tokio::test]
async fn an_altered_thread_fails_closed() {
    let bank = bank(vec![pay("t1", 5)]);
    let paused = bank.agent.run("pay").await.unwrap();
    let id = approval_id(&paused, "t1");
    // The client raises the amount in the stored thread and approves the old request.
    let mut thread = serde_json::to_value(&paused.messages).unwrap().to_string();
    thread = thread.replace(r#"{"amount":5}"#, r#"{"amount":900}"#);
    let thread: Vec<Message> = serde_json::from_str(&thread).unwrap();

    let error = bank
        .agent
        .run(RunInput::from(thread.clone()).with_approval(ToolApprovalResponse::approve(&id)))
        .await
        .unwrap_err();
    assert!(matches!(error.kind, RunErrorKind::Config(_)));
    // Without an answer, the request no longer verifies: the call fails, never runs.
    let out = bank.agent.run(RunInput::from(thread)).await.unwrap();
    let ModelOutputText(message) = error_message(&result_of(&out.messages, "t1"));
    assert!(message.contains("does not match the call"), "{message}");
    assert!(bank.moved.lock().unwrap().is_empty());
}

#[tokio::test]
async fn another_process_with_the_same_key_resumes_the_thread() {
    let bank = bank(vec![pay("t1", 5)]);
    let paused = bank.agent.run("pay").await.unwrap();
    let id = approval_id(&paused, "t1");
    let json = serde_json::to_string(&paused.messages).unwrap();

    // A new agent, as another process would build it, with the stored key.
    let moved = Arc::new(Mutex::new(Vec::new()));
    let model = recording([Turn::text("done")]);
    let agent = builder(&model)
        .tool(transfer(moved.clone()))
        .approval_key(key())
        .build();
    let thread: Vec<Message> = serde_json::from_str(&json).unwrap();
    let out = agent
        .run(RunInput::from(thread).with_approval(ToolApprovalResponse::approve(&id)))
        .await
        .unwrap();
    assert_eq!(*moved.lock().unwrap(), [json!(5)]);
    assert_eq!(out.text, "done");
}

#[tokio::test]
async fn mixed_step_executed_client_and_approval_calls_resume_in_call_order() {
    let runs = Counter::default();
    let moved = Arc::new(Mutex::new(Vec::new()));
    let model = recording([
        Turn::tool_calls([
            pay("pay", 5),
            ScriptedCall::new("ask_user", json!({"question": "which account?"})).with_id("ask"),
            ScriptedCall::new("other", json!({})).with_id("run"),
        ]),
        Turn::text("done"),
    ]);
    let ask_user = from_fn("ask_user", "Ask the user.", |_: Args, _cx| async {
        Ok::<_, ToolError>("never run here")
    })
    .with_kind(ToolKind::Client);
    let agent = builder(&model)
        .tool(transfer(moved.clone()))
        .tool(ask_user)
        .tool(ok_tool("other", runs.clone()))
        .approval_key(key())
        .build();

    let paused = agent.run("go").await.unwrap();
    assert_eq!(runs.get(), 1, "the executed call ran");
    let kinds: Vec<PauseKind> = paused.pending.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, [PauseKind::Approval, PauseKind::ClientTool]);
    let id = approval_id(&paused, "pay");

    // Only the client's result: the approval still waits, and the model is not called.
    let mut thread = paused.messages.clone();
    thread.push(Message::tool_results(vec![client_result("ask", "savings")]));
    let half = agent.run(RunInput::from(thread)).await.unwrap();
    assert_eq!(model.call_count(), 1);
    let waiting: Vec<&str> = half
        .pending
        .iter()
        .map(|p| p.tool_call_id.as_str())
        .collect();
    assert_eq!(waiting, ["pay"]);
    assert_thread_valid(&half.messages, &["pay"]);

    // Then the approval: every result in call order, and the model goes on.
    let out = agent
        .run(RunInput::from(half.messages).with_approval(ToolApprovalResponse::approve(&id)))
        .await
        .unwrap();
    assert_eq!(model.call_count(), 2);
    let order: Vec<String> = results(&out.messages)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(order, ["pay", "ask", "run"]);
    assert_eq!(result_of(&out.messages, "ask"), text("savings"));
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn always_approves_the_tool_for_the_rest_of_the_thread() {
    let moved = Arc::new(Mutex::new(Vec::new()));
    let model = recording([
        Turn::tool_calls([pay("first", 1)]),
        Turn::tool_calls([pay("second", 2)]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(transfer(moved.clone()))
        .approval_key(key())
        .build();
    let paused = agent.run("pay twice").await.unwrap();
    let id = approval_id(&paused, "first");
    let out = agent
        .run(
            RunInput::from(stored(&paused.messages))
                .with_approval(ToolApprovalResponse::approve(&id).always()),
        )
        .await
        .unwrap();
    assert!(out.pending.is_empty(), "the second call did not ask");
    assert_eq!(*moved.lock().unwrap(), [json!(1), json!(2)]);
    assert_eq!(out.text, "done");
}

#[tokio::test]
async fn the_agent_policy_adds_approval_and_never_lowers_a_tools_own() {
    let runs = Counter::default();
    let calls = || {
        recording([
            Turn::tool_calls([ScriptedCall::new("other", json!({})).with_id("o")]),
            Turn::text("done"),
        ])
    };
    for (policy, waits) in [
        (ApprovalPolicy::All, true),
        (ApprovalPolicy::Tools(vec!["other".into()]), true),
        (ApprovalPolicy::Tools(vec!["else".into()]), false),
        (ApprovalPolicy::None, false),
    ] {
        let agent = builder(&calls())
            .tool(ok_tool("other", runs.clone()))
            .approval_policy(policy.clone())
            .build();
        let out = agent.run("go").await.unwrap();
        assert_eq!(!out.pending.is_empty(), waits, "{policy:?}");
    }
    // A tool that asks itself is asked for under the policy `None` too.
    let bank = bank(vec![pay("t", 1)]);
    let out = bank.agent.run("pay").await.unwrap();
    assert_eq!(out.pending.len(), 1);
}

#[tokio::test]
async fn a_tools_own_setting_overrides_the_agent_policy() {
    let calls = || {
        recording([
            Turn::tool_calls([ScriptedCall::new("other", json!({})).with_id("o")]),
            Turn::text("done"),
        ])
    };
    let small = || Approval::when(|_, _| Ok(false));
    for policy in [
        ApprovalPolicy::All,
        ApprovalPolicy::Tools(vec!["other".into()]),
    ] {
        for (approval, waits) in [
            (Approval::Never, false),
            (small(), false),
            (Approval::when(|_, _| Err(ToolError::msg("unclear"))), true),
            (Approval::Policy, true),
        ] {
            let label = format!("{policy:?} {approval:?}");
            let tool = from_fn("other", "The other tool.", |_: Value, _cx| async {
                Ok::<_, ToolError>("other ok")
            })
            .with_meta(ToolMeta::new().approval(approval));
            let agent = builder(&calls())
                .tool(tool)
                .approval_policy(policy.clone())
                .build();
            let out = agent.run("go").await.unwrap();
            assert_eq!(!out.pending.is_empty(), waits, "{label}");
            assert_eq!(out.text, if waits { "" } else { "done" }, "{label}");
        }
    }
}

#[tokio::test]
async fn an_unanswered_approval_past_its_timeout_follows_the_timeout_action() {
    for (action, expected) in [
        (TimeoutAction::Deny, denied("Approval timed out")),
        (TimeoutAction::Approve, text("moved")),
        (
            TimeoutAction::Error,
            error_text("Approval timed out (configured to throw)"),
        ),
    ] {
        let moved = Arc::new(Mutex::new(Vec::new()));
        let model = recording([Turn::tool_calls([pay("t", 3)]), Turn::text("done")]);
        let agent = builder(&model)
            .tool(transfer(moved.clone()))
            .approval_key(key())
            .approval_timeout(Duration::from_millis(20), action)
            .build();
        let paused = agent.run("pay").await.unwrap();
        // Not yet timed out: still waiting.
        let again = agent
            .run(RunInput::from(paused.messages.clone()))
            .await
            .unwrap();
        assert_eq!(again.pending.len(), 1, "{action:?}");
        tokio::time::sleep(Duration::from_millis(30)).await;
        let out = agent.run(RunInput::from(paused.messages)).await.unwrap();
        assert_eq!(result_of(&out.messages, "t"), expected);
        let ran = action == TimeoutAction::Approve;
        assert_eq!(moved.lock().unwrap().len(), usize::from(ran));
    }
}

/// A denial's recorded output.
fn denied(reason: &str) -> toolsmith_core::ModelOutput {
    toolsmith_core::ModelOutput::ExecutionDenied {
        reason: Some(reason.into()),
    }
}

/// A client tool's result message part.
fn client_result(id: &str, value: &str) -> toolsmith_core::ToolResultPart {
    toolsmith_core::ToolResultPart {
        tool_call_id: id.into(),
        tool_name: "ask_user".into(),
        output: text(value),
        provider_executed: false,
        provider_metadata: Default::default(),
    }
}

struct ModelOutputText(String);

/// The text of an error result.
fn error_message(output: &toolsmith_core::ModelOutput) -> ModelOutputText {
    let value = serde_json::to_value(output).unwrap();
    ModelOutputText(value["value"].as_str().unwrap_or_default().to_string())
}
