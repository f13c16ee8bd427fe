//! Async tools (the agent harness's `async: true`): a call returns a handle at once and its
//! result reaches the run later.
//!
//! - **`same-invocation`** (the default): the tool runs in the background of this process;
//!   its row is settled when it returns, and its result is delivered to the run's inbox as the
//!   injected user message ([`injected`]). The loop waits for the inbox before it ends, so the
//!   run goes on with the results; a streamed run says it is waiting every
//!   [`heartbeat`](crate::ServiceOptions::heartbeat). At the run's deadline
//!   ([`async_wait`](crate::ServiceOptions::async_wait)) the calls still running are settled
//!   failed ([`DRAINED`]) and injected as failures; a result that arrives after that is stored
//!   but not injected again.
//! - **`external-dispatch`**: the tool only hands the work out (it gets [`AsyncCall`]'s
//!   completion URL and token) and returns; its id joins the event's dispatch group. An
//!   external worker settles it through `POST /async-tools/{resultId}/complete`
//!   ([`completion`]); once the run's model pass is over the group is sealed, and when every
//!   call of a sealed group has settled, the run continues exactly once ([`continuation`]).
//!
//! Either way the call returns `{resultId, toolName, toolCallId, status: "running",
//! statusReference: {table: "AsyncToolResult", resultId}}` to the model, and its row
//! (`async_tool_<uuid>`) lives 7 days. A provider-executed tool has no local code to run: it
//! stays as it is, with a warning.

pub(crate) mod completion;
pub(crate) mod continuation;
mod status_tool;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::task::TaskTracker;
use toolsmith_config::AgentConfig;
use toolsmith_core::{
    AsyncCall, AsyncMode, InboxTicket, Message, SharedTool, Tool, ToolContext, ToolError, ToolKind,
    ToolMeta, ToolOutput, ToolSpec, Toolset,
};
use toolsmith_store::{AsyncResult, AsyncSettlement, AsyncStatus, ServiceStore};

use crate::runs::RunContext;
use crate::service::{lock, toolsmith_store_now};

pub(crate) use status_tool::AsyncStatusTool;

/// How long an async call's row is kept: 7 days.
pub const ASYNC_RESULT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The error of a same-invocation call still running at the run's deadline.
pub const DRAINED: &str = "Async tool call is still pending near the parent request timeout.";

/// The name of the model-facing tool added to agents with async tools.
pub const ASYNC_STATUS_TOOL: &str = "async_status";

/// The config's tools with `async: true`, and how each runs.
pub(crate) fn modes(config: &AgentConfig) -> Vec<(String, AsyncMode)> {
    config
        .tools
        .iter()
        .flatten()
        .filter_map(|t| t.async_mode.map(|mode| (t.name.clone(), mode)))
        .collect()
}

/// [`modes`] of the config and of its sub-agents' and prompts' configs, at any depth.
pub(crate) fn all_modes(config: &AgentConfig) -> Vec<(String, AsyncMode)> {
    let mut all = modes(config);
    for nested in config
        .subagents
        .iter()
        .map(|s| &s.agent)
        .chain(config.prompts.iter().map(|p| &p.agent))
    {
        all.extend(all_modes(nested));
    }
    all
}

/// `tools` with each async tool wrapped (provider-executed ones left as they are, with a
/// warning) and, when there is any, the `async_status` tool added.
pub(crate) fn wrap(
    mut tools: Toolset,
    modes: &[(String, AsyncMode)],
    coordinator: &Coordinator,
) -> Toolset {
    for (name, mode) in modes {
        let Some(tool) = tools.get(name).cloned() else {
            continue;
        };
        if !tool.kind().executes_locally() {
            tracing::warn!(
                target: "toolsmith::server",
                tool = %name,
                "async tool {name} is executed by the provider: it has no local execute to run \
                 in the background, and stays as it is"
            );
            continue;
        }
        let meta = tool.meta().clone().async_mode(*mode);
        tools.add(Arc::new(AsyncTool {
            inner: tool,
            mode: *mode,
            meta,
            coordinator: coordinator.clone(),
        }) as SharedTool);
    }
    if !modes.is_empty() && !tools.contains(ASYNC_STATUS_TOOL) {
        tools.add(Arc::new(AsyncStatusTool::new(coordinator.clone())) as SharedTool);
    }
    tools
}

/// Tracks the same-invocation calls running in this process, so that each result reaches its
/// run once: delivered when the call returns, or drained as failed at the deadline, whichever
/// comes first.
#[derive(Clone)]
pub(crate) struct Coordinator {
    store: Arc<dyn ServiceStore>,
    pending: Arc<Mutex<HashMap<String, Pending>>>,
    /// The service's background tasks: a shutdown waits for the calls running.
    tasks: TaskTracker,
}

struct Pending {
    /// The run's scoped event key.
    event: String,
    ticket: InboxTicket,
    tool_name: String,
    input: Value,
}

impl Coordinator {
    pub(crate) fn new(store: Arc<dyn ServiceStore>, tasks: TaskTracker) -> Self {
        Coordinator {
            store,
            pending: Arc::default(),
            tasks,
        }
    }

    pub(crate) fn store(&self) -> &Arc<dyn ServiceStore> {
        &self.store
    }

    /// How many same-invocation calls of the event are still running.
    pub(crate) fn pending_for(&self, event: &str) -> usize {
        lock(&self.pending)
            .values()
            .filter(|p| p.event == event)
            .count()
    }

    /// Settles a same-invocation call that returned, and injects its result unless it was
    /// drained first. A call settled meanwhile (stopped by `async_status`, completed through
    /// the endpoint) is injected as it was settled.
    async fn finished(&self, result_id: &str, settlement: AsyncSettlement) {
        let settled = self.store.settle_async_result(result_id, &settlement).await;
        let Some(pending) = lock(&self.pending).remove(result_id) else {
            return;
        };
        let message = match settled {
            Ok(false) => match self.store.async_result(result_id).await {
                Ok(Some(row)) => injected_row(&row),
                _ => return drop(pending),
            },
            Ok(true) => injected(
                result_id,
                &pending.tool_name,
                &pending.input,
                &settlement_outcome(&settlement),
            ),
            Err(e) => {
                tracing::error!(target: "toolsmith::server", %e, result_id, "settling an async call");
                injected(
                    result_id,
                    &pending.tool_name,
                    &pending.input,
                    &settlement_outcome(&settlement),
                )
            }
        };
        pending.ticket.deliver(message);
    }

    /// Injects a call this process runs that was settled by someone else (stopped through
    /// `async_status`, completed through the endpoint) as it was settled, at once.
    pub(crate) fn settled_elsewhere(&self, row: &AsyncResult) {
        if let Some(pending) = lock(&self.pending).remove(&row.result_id) {
            pending.ticket.deliver(injected_row(row));
        }
    }

    /// At the run's deadline: settles every call of `event` still running as failed with
    /// [`DRAINED`] and injects them as failures.
    pub(crate) async fn drain(&self, event: &str) {
        let drained: Vec<(String, Pending)> = {
            let mut pending = lock(&self.pending);
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, p)| p.event == event)
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| pending.remove(&id).map(|p| (id, p)))
                .collect()
        };
        for (result_id, pending) in drained {
            let failed = AsyncSettlement::Failed(DRAINED.to_string());
            if let Err(e) = self.store.settle_async_result(&result_id, &failed).await {
                tracing::error!(target: "toolsmith::server", %e, %result_id, "draining an async call");
            }
            let outcome = Outcome::Failed(DRAINED.to_string());
            let message = injected(&result_id, &pending.tool_name, &pending.input, &outcome);
            pending.ticket.deliver(message);
        }
    }
}

/// How an async call ended, as the injected message tells it.
pub(crate) enum Outcome {
    Completed(Option<Value>),
    Failed(String),
}

fn settlement_outcome(settlement: &AsyncSettlement) -> Outcome {
    match settlement {
        AsyncSettlement::Completed(response) => Outcome::Completed(response.clone()),
        AsyncSettlement::Failed(error) => Outcome::Failed(error.clone()),
    }
}

/// The agent harness's injected message: a user message with one text part,
///
/// ```text
/// Async tool result injected into parent conversation.
/// resultId: <id>
/// toolName: <name>
/// status: completed|failed
///
/// Input:
/// <input>
///
/// Result:
/// <result>
/// ```
///
/// Strings are inserted as they are, anything else as compact JSON; a failed call gives its
/// error, a missing result `(no result)`.
pub(crate) fn injected(
    result_id: &str,
    tool_name: &str,
    input: &Value,
    outcome: &Outcome,
) -> Message {
    let (status, result) = match outcome {
        Outcome::Completed(Some(value)) => ("completed", raw_or_json(value)),
        Outcome::Completed(None) => ("completed", "(no result)".to_string()),
        Outcome::Failed(error) => ("failed", error.clone()),
    };
    Message::user(format!(
        "Async tool result injected into parent conversation.\nresultId: {result_id}\n\
         toolName: {tool_name}\nstatus: {status}\n\nInput:\n{}\n\nResult:\n{result}",
        raw_or_json(input)
    ))
}

/// A string as it is; anything else as compact JSON (JavaScript's `JSON.stringify`).
pub(crate) fn raw_or_json(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The injected message of a stored row (a continuation's).
pub(crate) fn injected_row(row: &AsyncResult) -> Message {
    let outcome = match row.status {
        AsyncStatus::Failed => Outcome::Failed(
            row.error
                .clone()
                .unwrap_or_else(|| completion::DEFAULT_FAILURE.to_string()),
        ),
        _ => Outcome::Completed(row.response.clone().filter(|v| !v.is_null())),
    };
    injected(&row.result_id, &row.tool_name, &row.input, &outcome)
}

/// `/async-tools/<resultId, URL-encoded>/complete`.
pub(crate) fn complete_path(result_id: &str) -> String {
    format!(
        "/async-tools/{}/complete",
        crate::encode_component(result_id)
    )
}

/// A tool configured `async: true` (see the [module docs](self)).
struct AsyncTool {
    inner: SharedTool,
    mode: AsyncMode,
    meta: ToolMeta,
    coordinator: Coordinator,
}

#[async_trait::async_trait]
impl Tool for AsyncTool {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    fn kind(&self) -> &ToolKind {
        self.inner.kind()
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let name = cx.tool_name().to_string();
        let Some(run) = cx.scope().deps.get::<RunContext>().cloned() else {
            return Err(ToolError::new(
                "ASYNC_UNAVAILABLE",
                format!("Async tool {name} runs only in a run of the harness service"),
            ));
        };
        if self.mode == AsyncMode::ExternalDispatch && !run.external_dispatch {
            return Err(ToolError::new(
                "ASYNC_MODE_UNSUPPORTED",
                format!(
                    "Async tool {name} uses external-dispatch, which is not supported by this \
                     request path"
                ),
            ));
        }
        let result_id = format!("async_tool_{}", uuid::Uuid::new_v4());
        let now = toolsmith_store_now();
        let external = self.mode == AsyncMode::ExternalDispatch;
        let row = AsyncResult {
            result_id: result_id.clone(),
            account: run.account.clone(),
            agent_id: run.agent_id.clone(),
            parent_event_id: run.event_key.clone(),
            conversation_key: run.conversation_key.clone(),
            tool_name: name.clone(),
            tool_call_id: cx.tool_call_id().to_string(),
            input: input.clone(),
            status: AsyncStatus::Processing,
            response: None,
            error: None,
            external,
            created_at: now,
            updated_at: now,
            expires_at: now + ASYNC_RESULT_TTL.as_millis() as u64,
        };
        if external {
            run.dispatched
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        self.coordinator
            .store
            .insert_async_result(&row, external)
            .await
            .map_err(|e| ToolError::new("ASYNC_STORE", format!("cannot record the call: {e}")))?;
        let path = complete_path(&result_id);
        let call = AsyncCall {
            result_id: result_id.clone(),
            parent_event_id: run.event_id.clone(),
            conversation_key: run.conversation_key.clone(),
            complete_url: external.then(|| format!("{}{path}", run.public_url)),
            token: external.then(|| run.completion_token(&result_id)),
            complete_path: path,
        };
        let call_id = cx.tool_call_id().to_string();
        let cx = cx.clone().with_async_call(call);
        if external {
            // The tool only hands the work out: wait for that, and fail the call if it fails.
            if let Err(error) = self.inner.call(input, &cx).await {
                let failed = AsyncSettlement::Failed(error.message().to_string());
                let _ = self
                    .coordinator
                    .store
                    .settle_async_result(&result_id, &failed)
                    .await;
                return Err(error);
            }
            // Counted as a pending async call (`toolsmith.tool.pending`) by the exported
            // metrics: the `execute_tool` span it runs in declares the field.
            tracing::Span::current().record("toolsmith.tool.dispatched", true);
        } else {
            let ticket = cx.scope().inbox.expect();
            lock(&self.coordinator.pending).insert(
                result_id.clone(),
                Pending {
                    event: run.event_key.clone(),
                    ticket,
                    tool_name: name.clone(),
                    input: input.clone(),
                },
            );
            let (inner, coordinator, id) = (
                self.inner.clone(),
                self.coordinator.clone(),
                result_id.clone(),
            );
            self.coordinator.tasks.spawn(async move {
                let settlement = match inner.call(input, &cx).await {
                    Ok(output) => AsyncSettlement::Completed(Some(output.value)),
                    Err(error) => AsyncSettlement::Failed(error.message().to_string()),
                };
                coordinator.finished(&id, settlement).await;
            });
        }
        Ok(ToolOutput::json(running(&result_id, &name, &call_id)))
    }
}

/// What the model gets back from an async call.
fn running(result_id: &str, tool_name: &str, tool_call_id: &str) -> Value {
    json!({
        "resultId": result_id,
        "toolName": tool_name,
        "toolCallId": tool_call_id,
        "status": "running",
        "statusReference": {"table": "AsyncToolResult", "resultId": result_id},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_injected_message_has_the_harness_format() {
        let message = injected(
            "async_tool_1",
            "lookup",
            &json!({"q": "x"}),
            &Outcome::Completed(Some(json!("found it"))),
        );
        assert_eq!(
            message.text(),
            "Async tool result injected into parent conversation.\nresultId: async_tool_1\n\
             toolName: lookup\nstatus: completed\n\nInput:\n{\"q\":\"x\"}\n\nResult:\nfound it"
        );
        let failed = injected("a", "t", &json!("raw"), &Outcome::Failed("boom".into()));
        assert!(
            failed
                .text()
                .ends_with("status: failed\n\nInput:\nraw\n\nResult:\nboom")
        );
        let none = injected("a", "t", &json!({}), &Outcome::Completed(None));
        assert!(none.text().ends_with("Result:\n(no result)"));
    }

    #[test]
    fn the_completion_path_is_url_encoded() {
        assert_eq!(
            complete_path("async_tool_1"),
            "/async-tools/async_tool_1/complete"
        );
        assert_eq!(complete_path("a b/c"), "/async-tools/a%20b%2Fc/complete");
    }
}
