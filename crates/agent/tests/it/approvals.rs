//! Approval fails closed: a call that needs approval never runs unapproved. (Answering and
//! resuming: `approval_resume.rs`.)

use crate::common::*;
use serde_json::json;
use toolsmith_agent::{ApprovalKey, ExecutionPolicy, RunInput};
use toolsmith_core::{
    Approval, PauseKind, ProviderTool, RunPart, ToolError, ToolKind, ToolMeta, from_fn,
};
use toolsmith_providers::{ScriptedCall, Turn};

fn transfer(runs: Counter, approval: Approval) -> impl toolsmith_core::Tool {
    from_fn("transfer", "Move money.", move |_: Args, _cx| {
        let runs = runs.clone();
        async move {
            runs.hit();
            Ok::<_, ToolError>("moved")
        }
    })
    .with_meta(ToolMeta::new().side_effect(true).approval(approval))
}

#[tokio::test]
async fn a_tool_that_always_needs_approval_pauses_and_never_runs() {
    let (runs, other) = (Counter::default(), Counter::default());
    let model = recording([Turn::tool_calls([
        ScriptedCall::new("transfer", json!({"amount": 5})).with_id("t1"),
        ScriptedCall::new("other", json!({})).with_id("o1"),
    ])]);
    let key = ApprovalKey::new([9u8; 32]);
    let agent = builder(&model)
        .tool(transfer(runs.clone(), Approval::Always))
        .tool(ok_tool("other", other.clone()))
        .approval_key(key.clone())
        .build();

    let (parts, result) = stream_run(&agent, "pay").await;
    let out = result.unwrap();

    assert_eq!(runs.get(), 0, "never run unapproved");
    assert_eq!(other.get(), 1, "the other calls of the step still run");
    assert_eq!(out.pending.len(), 1);
    let pause = &out.pending[0];
    assert_eq!(pause.kind, PauseKind::Approval);
    assert_eq!(pause.tool_call_id, "t1");
    assert_eq!(pause.input, json!({"amount": 5}));
    // The id binds the approval to this call: an HMAC of its id, tool and input.
    let id = key.approval_id("t1", "transfer", &json!({"amount": 5}));
    assert_eq!(pause.data, json!({ "approvalId": id }));
    let request = parts
        .iter()
        .find(|p| matches!(p, RunPart::ToolApprovalRequest { .. }))
        .expect("a tool-approval-request part");
    assert_eq!(
        serde_json::to_value(request).unwrap(),
        json!({"type": "tool-approval-request", "approvalId": id, "toolCallId": "t1",
               "toolName": "transfer", "input": {"amount": 5}})
    );
    assert_eq!(model.call_count(), 1, "the run stops at the pause");
    assert_thread_valid(&out.messages, &["t1"]);
}

#[tokio::test]
async fn a_predicate_decides_and_a_failing_predicate_requires_approval() {
    let runs = Counter::default();
    let large = Approval::when(|input, _cx| {
        input["amount"]
            .as_f64()
            .map(|a| a > 100.0)
            .ok_or_else(|| ToolError::msg("no amount"))
    });
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("transfer", json!({"amount": 5})).with_id("small"),
            ScriptedCall::new("transfer", json!({"amount": 500})).with_id("large"),
            ScriptedCall::new("transfer", json!({"note": "?"})).with_id("unclear"),
        ]),
        Turn::text("unreachable"),
    ]);
    let agent = builder(&model).tool(transfer(runs.clone(), large)).build();

    let out = agent.run("pay").await.unwrap();

    assert_eq!(runs.get(), 1, "only the small transfer ran");
    let pending: Vec<&str> = out
        .pending
        .iter()
        .map(|p| p.tool_call_id.as_str())
        .collect();
    assert_eq!(pending, ["large", "unclear"]);
    assert_eq!(result_of(&out.messages, "small"), text("moved"));
}

#[tokio::test(start_paused = true)]
async fn under_the_parallel_policy_calls_that_cannot_run_are_reported_first() {
    let (log, flight) = (Log::default(), std::sync::Arc::new(Flight::default()));
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("slow", json!({})).with_id("s"),
            ScriptedCall::new("missing", json!({})).with_id("m"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .execution(ExecutionPolicy::parallel())
        .tool(timed_tool("slow", 1_000, ToolMeta::new(), log, flight))
        .build();

    let (parts, result) = stream_run(&agent, RunInput::from("go")).await;
    result.unwrap();
    let reported: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::ToolError { tool_call_id, .. } | RunPart::ToolResult { tool_call_id, .. } => {
                Some(tool_call_id.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(reported, ["m", "s"]);
}

#[tokio::test]
async fn a_provider_tool_called_locally_with_malformed_arguments_still_has_no_executor() {
    let search = from_fn("web_search", "Search.", |_: Args, _cx| async {
        Ok::<_, ToolError>("never")
    })
    .with_kind(ToolKind::Provider(ProviderTool {
        id: "anthropic.web_search_20260318".into(),
        args: json!({}),
    }));
    let model = recording([
        Turn::tool_calls([ScriptedCall::raw("web_search", "{not json").with_id("w")]),
        Turn::text("ok"),
    ]);
    let agent = builder(&model).tool(search).build();

    let out = agent.run("search").await.unwrap();

    assert_eq!(
        result_of(&out.messages, "w"),
        error_text("No server-side executor.")
    );
    assert_eq!(out.steps[0].tool_calls[0].input, json!({}));
}

/// Validation runs before approval: a call whose arguments break the schema gets its error
/// result and is never offered for approval; a valid call of the same tool in the same step is.
#[tokio::test]
async fn a_call_with_invalid_arguments_is_never_offered_for_approval() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Amount {
        #[allow(dead_code)]
        amount: u64,
    }
    let runs = Counter::default();
    let counted = runs.clone();
    let tool = from_fn("transfer", "Move money.", move |_: Amount, _cx| {
        let runs = counted.clone();
        async move {
            runs.hit();
            Ok::<_, ToolError>("moved")
        }
    })
    .with_meta(ToolMeta::new().side_effect(true).approval(Approval::Always));
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::new("transfer", json!({"amount": "lots"})).with_id("bad"),
            ScriptedCall::new("transfer", json!({"amount": 5})).with_id("good"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model)
        .tool(tool)
        .approval_key(ApprovalKey::new([9u8; 32]))
        .build();
    let (parts, result) = stream_run(&agent, "pay").await;
    let out = result.unwrap();
    assert_eq!(runs.get(), 0);
    let waiting: Vec<&str> = out
        .pending
        .iter()
        .map(|p| p.tool_call_id.as_str())
        .collect();
    assert_eq!(waiting, ["good"], "only the valid call waits for approval");
    let requests: Vec<&RunPart> = parts
        .iter()
        .filter(|p| matches!(p, RunPart::ToolApprovalRequest { .. }))
        .collect();
    assert_eq!(requests.len(), 1);
    assert!(
        parts
            .iter()
            .any(|p| matches!(p, RunPart::ToolError { tool_call_id, .. } if tool_call_id == "bad")),
        "the invalid call gets its error: {parts:?}"
    );
}
