//! Callback approval mode (RadarOS's `onApproval`): with a handler set, a call that needs
//! approval does not pause the run; the handler decides in the step, racing the approval
//! timeout and the run's cancellation, and approval fails closed. (Event mode: `approvals.rs`,
//! `approval_resume.rs`.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;
use toolsmith_agent::{
    APPROVAL_DENIED, ApprovalDecision, ApprovalPolicy, ApprovalRequest, Committed, ExecutionPolicy,
    HANDLER_FAILED, LogBatch, RunErrorKind, RunInput, RunLog, RunLogError, RunOutput, Settled,
    TimeoutAction,
};
use toolsmith_core::{
    Approval, CancellationToken, Message, ModelOutput, Part, Role, RunPart, ToolApprovalResponse,
    ToolError, ToolMeta, async_trait, from_fn,
};
use toolsmith_providers::{ScriptedCall, Turn};

use crate::common::*;

/// A tool that always needs approval, logs `ran <name> <amount>` and answers `moved`.
fn transfer(log: Log) -> impl toolsmith_core::Tool {
    from_fn("transfer", "Move money.", move |args: Args, _cx| {
        let log = log.clone();
        async move {
            log.push(format!("ran transfer {}", args["amount"]));
            Ok::<_, ToolError>("moved")
        }
    })
    .with_meta(ToolMeta::new().side_effect(true).approval(Approval::Always))
}

/// The requests a handler was asked, in order.
#[derive(Clone, Default)]
struct Asked(Arc<Mutex<Vec<ApprovalRequest>>>);

impl Asked {
    fn push(&self, request: &ApprovalRequest) {
        self.0.lock().unwrap().push(request.clone());
    }

    fn all(&self) -> Vec<ApprovalRequest> {
        self.0.lock().unwrap().clone()
    }
}

/// The answers a thread records, in order.
fn answers(messages: &[Message]) -> Vec<ToolApprovalResponse> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            Part::ToolApprovalResponse(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

fn denied(reason: &str) -> ModelOutput {
    ModelOutput::ExecutionDenied {
        reason: Some(reason.into()),
    }
}

/// A step that calls `transfer` with `amount` as call `id`, then a closing text.
fn pay(id: &str, amount: i64) -> Arc<toolsmith_providers::ScriptedModel> {
    recording([
        call(id, "transfer", json!({"amount": amount})),
        Turn::text("done"),
    ])
}

#[tokio::test]
async fn an_approved_call_runs_without_a_pause_and_the_handler_sees_the_request() {
    let (log, asked) = (Log::default(), Asked::default());
    let model = pay("t1", 5);
    let agent = builder(&model)
        .name("banker")
        .tool(transfer(log.clone()))
        .approval_key(key())
        .on_approval({
            let asked = asked.clone();
            move |request: ApprovalRequest| {
                asked.push(&request);
                async { Ok(ApprovalDecision::approve().with_reason("Looks fine")) }
            }
        })
        .build();

    let (parts, result) = stream_run(&agent, RunInput::from("pay").with_run_id("run-1")).await;
    let out = result.unwrap();

    assert!(!out.is_paused(), "callback mode never pauses");
    assert_eq!(out.text, "done");
    assert_eq!(log.entries(), ["ran transfer 5"]);
    assert_eq!(result_of(&out.messages, "t1"), text("moved"));
    let id = key().approval_id("t1", "transfer", &json!({"amount": 5}));
    let request = &asked.all()[0];
    assert_eq!(asked.all().len(), 1);
    assert_eq!(request.approval_id, id);
    assert_eq!(request.tool_call_id, "t1");
    assert_eq!(request.tool_name, "transfer");
    assert_eq!(request.input, json!({"amount": 5}));
    assert_eq!(request.run_id, "run-1");
    assert_eq!(request.agent_name.as_deref(), Some("banker"));
    // The observer sees the request, then the result.
    let types = part_types(&parts);
    let at = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(at("tool-approval-request") < at("tool-result"), "{types:?}");
    // The thread keeps the request and the handler's answer, as a resumed run would.
    let answer = ToolApprovalResponse {
        reason: Some("Looks fine".into()),
        ..ToolApprovalResponse::approve(&id)
    };
    assert_eq!(answers(&out.messages), [answer]);
    assert!(out.messages[1].content.iter().any(
        |p| matches!(p, Part::ToolApprovalRequest(r) if r.approval_id == id && r.requested_at.is_some())
    ));
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_sees_the_reason() {
    let log = Log::default();
    let model = pay("t1", 500);
    let agent = builder(&model)
        .tool(transfer(log.clone()))
        .on_approval(|_: ApprovalRequest| async {
            Ok(ApprovalDecision::deny().with_reason("Over the limit"))
        })
        .build();

    let (parts, result) = stream_run(&agent, "pay").await;
    let out = result.unwrap();

    assert!(log.entries().is_empty(), "a denied call never runs");
    assert_eq!(result_of(&out.messages, "t1"), denied("Over the limit"));
    // The model was told, with RadarOS's marker.
    let told = request_results(&model.requests()[1]);
    assert_eq!(told, [("t1".to_string(), denied("Over the limit"))]);
    assert_eq!(told[0].1.to_text(), "[DENIED] Over the limit");
    assert!(parts.iter().any(|p| matches!(p,
        RunPart::ToolOutputDenied { tool_call_id, reason, .. }
            if tool_call_id == "t1" && reason.as_deref() == Some("Over the limit"))));
    let error = out.steps[0].tool_results[0].error().unwrap();
    assert_eq!(
        (error.code(), error.message()),
        (APPROVAL_DENIED, "Over the limit")
    );
    assert!(!answers(&out.messages)[0].approved);
    assert_eq!(out.text, "done");
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn a_denial_without_a_reason_gets_the_default_reason() {
    let log = Log::default();
    let model = pay("t1", 5);
    let agent = builder(&model)
        .tool(transfer(log.clone()))
        .on_approval(|_: ApprovalRequest| async { Ok(ApprovalDecision::deny()) })
        .build();

    let out = agent.run("pay").await.unwrap();

    assert!(log.entries().is_empty());
    let result = result_of(&out.messages, "t1");
    assert_eq!(result, denied("Tool call denied by human reviewer"));
    assert_eq!(
        result.to_text(),
        "[DENIED] Tool call denied by human reviewer"
    );
}

/// Runs `transfer` under a handler that never answers, with a 60-second approval timeout and
/// `action`: the output, what ran, and how long (paused time) the run waited.
async fn never_answered(action: TimeoutAction) -> (RunOutput, Vec<String>, Duration) {
    let log = Log::default();
    let model = pay("t1", 5);
    let agent = builder(&model)
        .tool(transfer(log.clone()))
        .approval_timeout(Duration::from_secs(60), action)
        .on_approval(|_: ApprovalRequest| std::future::pending())
        .build();
    let start = Instant::now();
    let out = agent.run("pay").await.unwrap();
    let waited = start.elapsed();
    assert!(
        !out.is_paused(),
        "the timeout is applied while the run waits"
    );
    assert!(
        waited >= Duration::from_secs(60) && waited < Duration::from_secs(61),
        "{waited:?}"
    );
    (out, log.entries(), waited)
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_is_denied_when_the_timeout_ends() {
    let (out, ran, _) = never_answered(TimeoutAction::Deny).await;
    assert!(ran.is_empty());
    let result = result_of(&out.messages, "t1");
    assert_eq!(result, denied("Approval timed out"));
    assert_eq!(result.to_text(), "[DENIED] Approval timed out");
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_is_approved_on_timeout_under_approve() {
    let (out, ran, _) = never_answered(TimeoutAction::Approve).await;
    assert_eq!(ran, ["ran transfer 5"]);
    assert_eq!(result_of(&out.messages, "t1"), text("moved"));
    let answer = &answers(&out.messages)[0];
    assert!(answer.approved);
    assert_eq!(answer.reason.as_deref(), Some("Auto-approved on timeout"));
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_fails_the_call_on_timeout_under_error() {
    let (out, ran, _) = never_answered(TimeoutAction::Error).await;
    assert!(ran.is_empty());
    assert_eq!(
        result_of(&out.messages, "t1"),
        error_text("Approval timed out (configured to throw)")
    );
    assert_eq!(
        out.steps[0].tool_results[0].error().unwrap().code(),
        "APPROVAL_TIMEOUT"
    );
    assert!(answers(&out.messages).is_empty(), "nobody answered");
    assert_eq!(out.text, "done", "the model goes on with the error result");
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_run_ends_the_wait_and_the_call_never_runs() {
    let (log, asked) = (Log::default(), Arc::new(Notify::new()));
    let model = pay("t1", 5);
    let agent = builder(&model)
        .tool(transfer(log.clone()))
        .on_approval({
            let asked = asked.clone();
            move |_: ApprovalRequest| {
                asked.notify_one();
                std::future::pending()
            }
        })
        .build();
    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            asked.notified().await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            cancel.cancel();
        }
    });
    let start = Instant::now();

    let error = agent
        .run(RunInput::from("pay").with_cancellation(cancel))
        .await
        .unwrap_err();

    assert_eq!(error.kind, RunErrorKind::Cancelled);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "not the 5-minute timeout"
    );
    assert!(log.entries().is_empty());
    assert_eq!(
        result_of(&error.output.messages, "t1"),
        error_text("Not executed: the run was cancelled.")
    );
    assert_eq!(model.call_count(), 1);
}

#[tokio::test]
async fn a_panicking_or_failing_handler_denies_the_call() {
    for panics in [true, false] {
        let log = Log::default();
        let model = pay("t1", 5);
        let agent = builder(&model)
            .tool(transfer(log.clone()))
            .on_approval(move |_: ApprovalRequest| async move {
                if panics {
                    panic!("the approval service is down");
                }
                Err("the approval service is down".to_string())
            })
            .build();

        let out = agent.run("pay").await.unwrap();

        assert!(log.entries().is_empty(), "fail closed (panics: {panics})");
        assert_eq!(result_of(&out.messages, "t1"), denied(HANDLER_FAILED));
        assert_eq!(out.text, "done", "the run survives its handler");
    }
}

/// With parallel execution the handler is asked about both calls at once while the call that
/// needs no approval runs; the approved call runs once the answers are in, the denied one never.
#[tokio::test(start_paused = true)]
async fn under_the_parallel_policy_approvals_are_awaited_alongside_the_other_calls() {
    let (log, flight) = (Log::default(), Arc::new(Flight::default()));
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("transfer", json!({"amount": 5})).with_id("a"),
            ScriptedCall::new("slow", json!({})).with_id("s"),
            ScriptedCall::new("transfer", json!({"amount": 500})).with_id("b"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .execution(ExecutionPolicy::parallel())
        .tool(transfer(log.clone()))
        .tool(timed_tool(
            "slow",
            1_000,
            ToolMeta::new(),
            log.clone(),
            flight,
        ))
        .on_approval({
            let log = log.clone();
            move |request: ApprovalRequest| {
                let log = log.clone();
                async move {
                    let amount = request.input["amount"].as_i64().unwrap();
                    log.push(format!("asked {amount}"));
                    tokio::time::sleep(Duration::from_millis(800)).await;
                    log.push(format!("answered {amount}"));
                    Ok(match amount {
                        ..=100 => ApprovalDecision::approve(),
                        _ => ApprovalDecision::deny().with_reason("Over the limit"),
                    })
                }
            }
        })
        .build();
    let start = Instant::now();

    let (parts, result) = stream_run(&agent, "pay").await;
    let out = result.unwrap();

    // Both asked at once (800 ms, not 1 600), beside the slow call (1 000 ms).
    assert!(
        start.elapsed() < Duration::from_millis(1_100),
        "{:?}",
        start.elapsed()
    );
    let entries = log.entries();
    let at = |e: &str| entries.iter().position(|x| x == e).unwrap();
    assert!(at("start slow") < at("answered 5"), "{entries:?}");
    assert!(at("asked 500") < at("answered 5"), "{entries:?}");
    assert!(at("answered 5") < at("ran transfer 5"), "{entries:?}");
    assert!(
        !entries.iter().any(|e| e == "ran transfer 500"),
        "{entries:?}"
    );
    // The denial is reported as soon as it is decided, before the slow call ends.
    let reported: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::ToolOutputDenied { tool_call_id, .. }
            | RunPart::ToolResult { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reported, ["b", "s", "a"]);
    assert_eq!(
        results(&out.messages),
        [
            ("a".to_string(), text("moved")),
            ("s".to_string(), text("slow done")),
            ("b".to_string(), denied("Over the limit")),
        ]
    );
    assert_thread_valid(&out.messages, &[]);
}

/// Sequentially, each call is asked about right before it would run, in call order.
#[tokio::test]
async fn under_the_sequential_policy_each_call_is_asked_right_before_it_runs() {
    let log = Log::default();
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("transfer", json!({"amount": 1})).with_id("a"),
            ScriptedCall::new("transfer", json!({"amount": 2})).with_id("b"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(transfer(log.clone()))
        .on_approval({
            let log = log.clone();
            move |request: ApprovalRequest| {
                log.push(format!("asked {}", request.input["amount"]));
                async { Ok(ApprovalDecision::approve()) }
            }
        })
        .build();

    let out = agent.run("pay").await.unwrap();

    assert_eq!(
        log.entries(),
        ["asked 1", "ran transfer 1", "asked 2", "ran transfer 2"]
    );
    assert_eq!(answers(&out.messages).len(), 2);
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn a_tool_approved_always_in_the_thread_skips_the_handler() {
    let log = Log::default();
    // Event mode first: the call pauses and is answered with `always`.
    let first = pay("t1", 5);
    let paused = builder(&first)
        .tool(transfer(log.clone()))
        .approval_key(key())
        .build()
        .run("pay")
        .await
        .unwrap();
    let id = paused.pending[0].data["approvalId"].as_str().unwrap();
    let asked = Asked::default();
    let model = recording([
        call("t2", "transfer", json!({"amount": 7})),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(transfer(log.clone()))
        .approval_key(key())
        .on_approval({
            let asked = asked.clone();
            move |request: ApprovalRequest| {
                asked.push(&request);
                async { Ok(ApprovalDecision::deny()) }
            }
        })
        .build();

    let input =
        RunInput::from(paused.messages).with_approval(ToolApprovalResponse::approve(id).always());
    let out = agent.run(input).await.unwrap();

    assert!(asked.all().is_empty(), "{:?}", asked.all());
    assert_eq!(log.entries(), ["ran transfer 5", "ran transfer 7"]);
    assert_eq!(result_of(&out.messages, "t2"), text("moved"));
}

/// The commits a run's log received: `intend <tool>`, `settle <tool>`, and for each save the
/// results it holds.
#[derive(Clone, Default)]
struct Commits(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl RunLog for Commits {
    async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError> {
        let mut commits = self.0.lock().unwrap();
        for settled in batch.settled {
            let ok = matches!(settled.settled, Settled::Succeeded(_));
            commits.push(format!("settle {} ok={ok}", settled.call.tool_call_id));
        }
        if let Some(save) = batch.save {
            for result in save.tail.iter().flat_map(|m| m.tool_results_iter()) {
                commits.push(format!(
                    "save {} {}",
                    result.tool_call_id,
                    result.output.to_text()
                ));
            }
        }
        if let Some(call) = batch.intend {
            commits.push(format!("intend {}", call.tool_call_id));
        }
        Ok(Committed::default())
    }
}

/// Under a run log the approved call goes through the journal like any call; the denied one
/// never reaches it and is saved with its denial.
#[tokio::test]
async fn under_a_run_log_the_approved_call_is_journaled_and_the_denial_saved() {
    let (log, commits) = (Log::default(), Commits::default());
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("transfer", json!({"amount": 5})).with_id("a"),
            ScriptedCall::new("transfer", json!({"amount": 500})).with_id("b"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(transfer(log.clone()))
        .approval_policy(ApprovalPolicy::All)
        .on_approval(|request: ApprovalRequest| async move {
            Ok(match request.input["amount"] {
                Value::Number(ref n) if n.as_i64() < Some(100) => ApprovalDecision::approve(),
                _ => ApprovalDecision::deny().with_reason("Over the limit"),
            })
        })
        .build();
    let input = RunInput::new(vec![Message::user("pay")]).with_log(Arc::new(commits.clone()));

    agent.run(input).await.unwrap();

    let commits = commits.0.lock().unwrap().clone();
    let has = |c: &str| commits.iter().any(|x| x == c);
    assert!(has("intend a") && has("settle a ok=true"), "{commits:?}");
    assert!(
        !has("intend b"),
        "the denied call never reaches the journal: {commits:?}"
    );
    assert!(has("save b [DENIED] Over the limit"), "{commits:?}");
    assert_eq!(log.entries(), ["ran transfer 5"]);
}
