//! Nested runs: a sub-agent's parts in its parent's stream, and its paused state in its
//! parent's thread.
//!
//! A sub-agent is a whole run one level down. Its parts reach the parent's stream wrapped in
//! [`RunPart::Nested`](crate::RunPart::Nested) with the path of sub-agent calls they came
//! through. When it pauses (an approval inside it, a client tool), the parent pauses too: the
//! child's thread is saved in the parent's thread as a [`NestedRun`] part after the call, and
//! the child's pending items surface in the parent's with the call's id prefixed to their
//! [`path`](crate::Pause::path). Resuming the parent with the answers resumes the child.

use serde::{Deserialize, Serialize};

use crate::{Message, Pause, PauseKind, ToolApprovalResponse, ToolResultPart};

/// One hop of a nesting path: the sub-agent call a nested part came through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedHop {
    /// The sub-agent call's id in the parent run.
    pub tool_call_id: String,
    /// The sub-agent tool's name.
    pub tool_name: String,
}

/// A sub-agent's run that paused, as its parent's thread records it: in the assistant message,
/// after the call. Never sent to a model.
///
/// ```
/// use toolsmith_core::{Message, NestedRun, Pause, PauseKind};
///
/// let run = NestedRun {
///     tool_call_id: "call_1".into(),
///     tool_name: "researcher".into(),
///     run_id: "run_1:call_1".into(),
///     tags: vec!["name:scout".into()],
///     messages: vec![Message::user("Find it.")],
///     pending: vec![
///         Pause::new(PauseKind::Approval, "c9", "fetch", serde_json::json!({}))
///             .with_data(serde_json::json!({"approvalId": "apr_1"})),
///     ],
/// };
/// assert_eq!(run.approval_ids().collect::<Vec<_>>(), ["apr_1"]);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NestedRun {
    /// The sub-agent call's id in the parent run.
    pub tool_call_id: String,
    /// The sub-agent tool's name.
    pub tool_name: String,
    /// The child run's id.
    pub run_id: String,
    /// The child thread's tags (`name:<value>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The child's thread so far.
    pub messages: Vec<Message>,
    /// What the child waits for, with paths relative to the child.
    pub pending: Vec<Pause>,
}

impl NestedRun {
    /// The approval ids the child waits for, at any depth.
    pub fn approval_ids(&self) -> impl Iterator<Item = &str> {
        self.pending.iter().filter_map(Pause::approval_id)
    }

    /// The ids of the client-tool calls the child waits for, at any depth.
    pub fn client_call_ids(&self) -> impl Iterator<Item = &str> {
        self.pending
            .iter()
            .filter(|p| p.kind == PauseKind::ClientTool)
            .map(|p| p.tool_call_id.as_str())
    }
}

/// What a resumed sub-agent call receives through
/// [`ToolContext::resume`](crate::ToolContext::resume): its saved run and the answers meant
/// for it (or for its own sub-agents).
#[derive(Debug, Clone, PartialEq)]
pub struct NestedResume {
    /// The paused child run.
    pub run: NestedRun,
    /// The caller's answers to approvals inside it.
    pub approvals: Vec<ToolApprovalResponse>,
    /// The caller's results for client-tool calls inside it.
    pub results: Vec<ToolResultPart>,
}
