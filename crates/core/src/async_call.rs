//! [`AsyncCall`]: what a tool run asynchronously is told about its call (the agent harness's
//! `options.asyncTool`), so that work it hands out can be settled later.

use serde::{Deserialize, Serialize};

/// The async side of a call, set by the service on the [`ToolContext`](crate::ToolContext) of a
/// tool configured `async: true` ([`ToolContext::async_call`](crate::ToolContext::async_call)).
/// An `external-dispatch` tool passes `result_id` and `complete_url` (with `token`) to the
/// worker that does the work; the worker settles the call through that URL.
///
/// ```
/// use toolsmith_core::{AsyncCall, ToolContext};
///
/// let call = AsyncCall {
///     result_id: "async_tool_1".into(),
///     parent_event_id: "evt-1".into(),
///     conversation_key: "conv-1".into(),
///     complete_path: "/async-tools/async_tool_1/complete".into(),
///     complete_url: Some("https://agents.example.com/async-tools/async_tool_1/complete".into()),
///     token: Some("tok".into()),
/// };
/// let cx = ToolContext::for_test("lookup").with_async_call(call);
/// assert_eq!(cx.async_call().unwrap().result_id, "async_tool_1");
/// assert!(ToolContext::for_test("lookup").async_call().is_none());
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AsyncCall {
    /// `async_tool_<uuid>`: the id the completion names.
    pub result_id: String,
    /// The event of the run that made the call.
    pub parent_event_id: String,
    /// The conversation of that run.
    pub conversation_key: String,
    /// `/async-tools/<resultId, URL-encoded>/complete`.
    pub complete_path: String,
    /// The absolute completion URL, for an `external-dispatch` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_url: Option<String>,
    /// A bearer token that authorises exactly this call's completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl std::fmt::Debug for AsyncCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token authorises a completion: never in logs.
        f.debug_struct("AsyncCall")
            .field("result_id", &self.result_id)
            .field("parent_event_id", &self.parent_event_id)
            .field("conversation_key", &self.conversation_key)
            .field("complete_path", &self.complete_path)
            .field("complete_url", &self.complete_url)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}
