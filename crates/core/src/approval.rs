//! Approval requests and answers, as the thread records them.
//!
//! A call that needs a human's approval pauses the run; the pause is data in the thread, not a
//! callback held in memory: a [`ToolApprovalRequest`] part right after the call in the assistant
//! message. The caller answers with a [`ToolApprovalResponse`] and runs again; the answer is
//! recorded in the tool message, next to the call's result. So a paused run survives a restart
//! and can resume on another machine. Neither part is ever sent to a model.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call waiting for approval.
///
/// `approval_id` binds the request to its call: it is an HMAC, under the agent's approval key,
/// of the call's id, tool name and input, so an answer cannot be forged for another call or
/// replayed once the call has its result.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ToolApprovalRequest;
///
/// let request = ToolApprovalRequest {
///     approval_id: "apr_1f2e".into(),
///     tool_call_id: "call_1".into(),
///     tool_name: "transfer".into(),
///     input: json!({"amount": 5}),
///     requested_at: Some(1_700_000_000_000),
/// };
/// assert_eq!(
///     serde_json::to_value(&request).unwrap(),
///     json!({"approvalId": "apr_1f2e", "toolCallId": "call_1", "toolName": "transfer",
///            "input": {"amount": 5}, "requestedAt": 1_700_000_000_000u64})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalRequest {
    /// The id to answer with.
    pub approval_id: String,
    /// The call waiting.
    pub tool_call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// Its arguments, validated.
    pub input: Value,
    /// When the approval was asked for, in milliseconds since the Unix epoch: the approval
    /// timeout runs from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_at: Option<u64>,
}

/// The answer to a [`ToolApprovalRequest`].
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ToolApprovalResponse;
///
/// let answer: ToolApprovalResponse =
///     serde_json::from_value(json!({"approvalId": "apr_1f2e", "approved": false,
///                                   "reason": "Too much"})).unwrap();
/// assert!(!answer.approved);
/// assert_eq!(answer, ToolApprovalResponse::deny("apr_1f2e", "Too much"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalResponse {
    /// The request answered.
    pub approval_id: String,
    /// Whether the call may run.
    pub approved: bool,
    /// Why; a denial's reason is what the model is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Edited arguments to run the call with instead (validated again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// With `approved`: approve every later call of this tool in this thread too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub always: bool,
}

impl ToolApprovalResponse {
    /// Approves the call.
    pub fn approve(approval_id: impl Into<String>) -> Self {
        ToolApprovalResponse {
            approval_id: approval_id.into(),
            approved: true,
            reason: None,
            input: None,
            always: false,
        }
    }

    /// Denies the call, telling the model `reason`.
    pub fn deny(approval_id: impl Into<String>, reason: impl Into<String>) -> Self {
        ToolApprovalResponse {
            reason: Some(reason.into()),
            approved: false,
            ..Self::approve(approval_id)
        }
    }

    /// Runs the call with `input` instead of the model's arguments.
    pub fn with_input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }

    /// Approves this tool for the rest of the thread too.
    pub fn always(mut self) -> Self {
        self.always = true;
        self
    }
}
