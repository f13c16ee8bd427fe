//! Callback approval mode (RadarOS's `onApproval`): an [`ApprovalHandler`] decides a call that
//! needs approval while the step waits, instead of the run pausing.
//!
//! Contract:
//! - The handler is asked once per call that needs approval and is not approved `always` in the
//!   thread; the call never runs before it said yes.
//! - Its answer races the agent's approval timeout, and the run's cancellation. On timeout the
//!   [`TimeoutAction`] decides, with RadarOS's texts: deny ([`TIMED_OUT`]), approve
//!   ([`AUTO_APPROVED`]) or fail the call ([`TIMED_OUT_ERROR`], error code `APPROVAL_TIMEOUT`).
//! - A denial's reason defaults to [`DENIED_BY_REVIEWER`]; the model sees `[DENIED] <reason>`.
//! - A handler that returns an error or panics denies the call ([`HANDLER_FAILED`]): approval
//!   fails closed. What went wrong goes to the log, never to the model.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use toolsmith_core::{CancellationToken, ToolApprovalResponse, ToolError, async_trait};

use crate::journal::panic_message;

use super::{AUTO_APPROVED, DENIED_BY_REVIEWER, TIMED_OUT, TIMED_OUT_ERROR, TimeoutAction};

/// The error code of a call an [`ApprovalHandler`] denied. The model sees the call's result as
/// `[DENIED] <reason>`, as for a denial answered on resume; the run's output keeps the reason
/// as the error's message.
pub const APPROVAL_DENIED: &str = "APPROVAL_DENIED";

/// The reason a call is denied with when its [`ApprovalHandler`] failed (returned an error or
/// panicked).
pub const HANDLER_FAILED: &str =
    "The approval handler failed; the call was denied without running.";

/// A call that needs approval, as an [`ApprovalHandler`] is asked about it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The approval's id (the same HMAC id a paused run's approval would have).
    pub approval_id: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The call's arguments, validated.
    pub input: Value,
    /// The run asking.
    pub run_id: String,
    /// The agent's name ([`AgentBuilder::name`](crate::AgentBuilder::name)), if it has one.
    pub agent_name: Option<String>,
}

/// What an [`ApprovalHandler`] decided (RadarOS's `{approved, reason?}`).
///
/// ```
/// use toolsmith_agent::ApprovalDecision;
///
/// assert!(ApprovalDecision::approve().approved);
/// let no = ApprovalDecision::deny().with_reason("Over the limit");
/// assert!(!no.approved);
/// assert_eq!(no.reason.as_deref(), Some("Over the limit"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecision {
    /// Whether the call may run.
    pub approved: bool,
    /// Why. A denial's reason is what the model is told (default [`DENIED_BY_REVIEWER`]).
    pub reason: Option<String>,
}

impl ApprovalDecision {
    /// The call may run.
    pub fn approve() -> Self {
        ApprovalDecision {
            approved: true,
            reason: None,
        }
    }

    /// The call is denied (with the default reason unless [`with_reason`](Self::with_reason)).
    pub fn deny() -> Self {
        ApprovalDecision {
            approved: false,
            reason: None,
        }
    }

    /// Gives the decision a reason.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

/// Decides, while the run waits, whether a call that needs approval may run
/// ([`AgentBuilder::on_approval`](crate::AgentBuilder::on_approval); RadarOS's `onApproval`).
///
/// Any `Fn(ApprovalRequest) -> impl Future<Output = Result<ApprovalDecision, String>>` is one.
/// An `Err` denies the call (fail closed) with [`HANDLER_FAILED`]; its text is logged.
///
/// ```
/// use serde_json::json;
/// use toolsmith_agent::{Agent, ApprovalDecision, ApprovalPolicy, ApprovalRequest};
/// use toolsmith_core::{from_fn, ModelOutput, ToolError};
/// use toolsmith_providers::{ScriptedModel, Turn};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let model = ScriptedModel::new([
///     Turn::call("transfer", json!({"amount": 500})),
///     Turn::text("The transfer was refused."),
/// ]);
/// let agent = Agent::builder(model)
///     .tool(from_fn("transfer", "Move money.", |_: serde_json::Value, _cx| async {
///         Ok::<_, ToolError>("moved")
///     }))
///     .approval_policy(ApprovalPolicy::All)
///     .on_approval(|request: ApprovalRequest| async move {
///         Ok(match request.input["amount"].as_i64() {
///             Some(amount) if amount <= 100 => ApprovalDecision::approve(),
///             _ => ApprovalDecision::deny().with_reason("Over the limit"),
///         })
///     })
///     .build();
///
/// let out = agent.run("Send 500").await.unwrap();
/// assert!(!out.is_paused());
/// let result = out.messages[2].tool_results_iter().next().unwrap();
/// assert_eq!(result.output.to_text(), "[DENIED] Over the limit");
/// # });
/// ```
#[async_trait]
pub trait ApprovalHandler: Send + Sync + 'static {
    /// Decides about `request`.
    async fn decide(&self, request: ApprovalRequest) -> Result<ApprovalDecision, String>;
}

#[async_trait]
impl<F, Fut> ApprovalHandler for F
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ApprovalDecision, String>> + Send + 'static,
{
    async fn decide(&self, request: ApprovalRequest) -> Result<ApprovalDecision, String> {
        self(request).await
    }
}

/// What became of an asked call.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// It runs; the answer is recorded.
    Run(ToolApprovalResponse),
    /// It is denied with the answer's reason (always set).
    Deny(ToolApprovalResponse),
    /// It fails with this error and does not run.
    Fail(ToolError),
}

/// Asks `handler` about `request`, racing `timeout` (decided by `action`) and `stop`: `None`
/// when `stop` fired first (the run was cancelled, or the step ended before the answer).
pub(crate) async fn ask(
    handler: &dyn ApprovalHandler,
    request: ApprovalRequest,
    timeout: Duration,
    action: TimeoutAction,
    stop: &CancellationToken,
) -> Option<Verdict> {
    let approval_id = request.approval_id.clone();
    let tool = request.tool_name.clone();
    // Called inside the future, so that a handler panicking before its first await is caught.
    let asked = AssertUnwindSafe(async { handler.decide(request).await }).catch_unwind();
    let answered = tokio::select! {
        biased;
        () = stop.cancelled() => return None,
        answered = tokio::time::timeout(timeout, asked) => answered,
    };
    let answer = |approved: bool, reason: &str| ToolApprovalResponse {
        approved,
        reason: Some(reason.to_string()),
        ..ToolApprovalResponse::approve(&approval_id)
    };
    Some(match answered {
        Ok(Ok(Ok(decision))) if decision.approved => Verdict::Run(ToolApprovalResponse {
            reason: decision.reason,
            ..ToolApprovalResponse::approve(&approval_id)
        }),
        Ok(Ok(Ok(decision))) => {
            let reason = decision
                .reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| DENIED_BY_REVIEWER.to_string());
            Verdict::Deny(answer(false, &reason))
        }
        Ok(Ok(Err(error))) => {
            tracing::warn!(
                tool,
                error,
                "the approval handler failed; the call is denied"
            );
            Verdict::Deny(answer(false, HANDLER_FAILED))
        }
        Ok(Err(panic)) => {
            let panic = panic_message(&panic);
            tracing::error!(
                tool,
                panic,
                "the approval handler panicked; the call is denied"
            );
            Verdict::Deny(answer(false, HANDLER_FAILED))
        }
        Err(_elapsed) => match action {
            TimeoutAction::Deny => Verdict::Deny(answer(false, TIMED_OUT)),
            TimeoutAction::Approve => Verdict::Run(answer(true, AUTO_APPROVED)),
            TimeoutAction::Error => {
                Verdict::Fail(ToolError::new("APPROVAL_TIMEOUT", TIMED_OUT_ERROR))
            }
        },
    })
}
