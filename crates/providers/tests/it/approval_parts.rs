//! Approval requests and answers live in the thread for the record and for resuming; no wire
//! ever sends them to a model. A thread paused on an approval, then answered, is sent by every
//! provider as the call and its result only. So is a sub-agent's paused run. The steps'
//! metadata (model, usage, times) is the thread's record too: a request is the same with it or
//! without it.

use serde_json::{Value, json};
use toolsmith_core::{
    Message, MessageMeta, ModelOutput, ModelRequest, NestedRun, Part, Role, ToolApprovalRequest,
    ToolApprovalResponse, ToolCallPart, ToolResultPart, UnifiedFinishReason, Usage,
};
use toolsmith_providers::anthropic::AnthropicMessages;
use toolsmith_providers::google::GoogleGemini;
use toolsmith_providers::openai_chat::OpenAiChat;
use toolsmith_providers::openai_responses::OpenAiResponses;

fn answered_thread() -> ModelRequest {
    let input = json!({"amount": 5});
    ModelRequest {
        messages: vec![
            Message::user("Pay 5."),
            Message::new(
                Role::Assistant,
                vec![
                    Part::ToolCall(ToolCallPart {
                        tool_call_id: "call_1".into(),
                        tool_name: "transfer".into(),
                        input: input.clone(),
                        provider_executed: false,
                        provider_metadata: Default::default(),
                    }),
                    Part::ToolApprovalRequest(ToolApprovalRequest {
                        approval_id: "apr_secretive".into(),
                        tool_call_id: "call_1".into(),
                        tool_name: "transfer".into(),
                        input,
                        requested_at: Some(1),
                    }),
                    // A sub-agent's paused run, recorded the same way.
                    Part::NestedRun(NestedRun {
                        tool_call_id: "call_1".into(),
                        tool_name: "transfer".into(),
                        run_id: "child_run_hidden".into(),
                        tags: vec!["name:hidden_child".into()],
                        messages: vec![Message::user("the child's private thread")],
                        pending: Vec::new(),
                    }),
                ],
            ),
            Message::new(
                Role::Tool,
                vec![
                    Part::ToolApprovalResponse(
                        ToolApprovalResponse::deny("apr_secretive", "Not this month").always(),
                    ),
                    Part::ToolResult(ToolResultPart {
                        tool_call_id: "call_1".into(),
                        tool_name: "transfer".into(),
                        output: ModelOutput::ExecutionDenied {
                            reason: Some("Not this month".into()),
                        },
                        provider_executed: false,
                        provider_metadata: Default::default(),
                    }),
                ],
            ),
        ],
        ..Default::default()
    }
}

/// The body each wire sends for `request`.
fn bodies(request: &ModelRequest) -> Vec<(&'static str, Value)> {
    let base = Some("http://127.0.0.1:1/v1/");
    vec![
        (
            "anthropic",
            AnthropicMessages::new("claude", Some("k"), base)
                .unwrap()
                .request_body(request)
                .0,
        ),
        (
            "openai",
            OpenAiChat::openai("gpt", Some("k"), base)
                .unwrap()
                .request_body(request)
                .0,
        ),
        (
            "openai-responses",
            OpenAiResponses::openai("gpt", Some("k"), base)
                .unwrap()
                .request_body(request)
                .0,
        ),
        (
            "google",
            GoogleGemini::new("gemini", Some("k"), base)
                .unwrap()
                .request_body(request)
                .0,
        ),
    ]
}

#[test]
fn no_wire_sends_approval_parts() {
    for (wire, body) in bodies(&answered_thread()) {
        let text = body.to_string();
        assert!(!text.contains("apr_secretive"), "{wire}: {text}");
        assert!(!text.contains("approval"), "{wire}: {text}");
        assert!(!text.contains("hidden"), "{wire}: {text}");
        assert!(!text.contains("private thread"), "{wire}: {text}");
        // The call and its denial still go: the model is told why.
        assert!(
            text.contains("call_1") || wire == "google",
            "{wire}: {text}"
        );
        assert!(text.contains("Not this month"), "{wire}: {text}");
    }
}

#[test]
fn every_wire_shows_a_denial_with_radaros_marker() {
    for (reason, shown) in [
        (Some("Not this month"), "[DENIED] Not this month"),
        (None, "[DENIED] Tool call denied by human reviewer"),
    ] {
        let mut request = answered_thread();
        let tool = request.messages.last_mut().unwrap();
        for part in &mut tool.content {
            if let Part::ToolResult(result) = part {
                result.output = ModelOutput::ExecutionDenied {
                    reason: reason.map(str::to_string),
                };
            }
        }
        for (wire, body) in bodies(&request) {
            let text = body.to_string();
            // The whole text the model is given for the call, as one string.
            assert!(text.contains(&format!("\"{shown}\"")), "{wire}: {text}");
        }
    }
}

#[test]
fn no_wire_sends_the_steps_metadata() {
    let plain = answered_thread();
    let mut with_meta = plain.clone();
    for message in &mut with_meta.messages {
        let meta = MessageMeta::new()
            .model("meta-model-name")
            .provider("meta-provider")
            .response_id("resp_meta_secret")
            .finish_reason(UnifiedFinishReason::ToolCalls)
            .usage(Usage::new(123_456, 7_891))
            .timed(1_700_000_000_000, 4_321)
            .call("call_1", 987_654);
        *message = message.clone().with_meta(meta);
    }
    assert!(with_meta.messages.iter().all(|m| m.meta.is_some()));
    for ((wire, plain), (_, body)) in bodies(&plain).into_iter().zip(bodies(&with_meta)) {
        assert_eq!(body, plain, "{wire}: the same request with or without meta");
        let text = body.to_string();
        for hidden in ["meta", "resp_meta_secret", "123456", "987654", "durationMs"] {
            assert!(!text.contains(hidden), "{wire} sends {hidden}: {text}");
        }
    }
}
