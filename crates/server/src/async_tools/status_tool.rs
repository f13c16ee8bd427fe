//! `async_status`: the model-facing tool added to agents with async tools. It answers about
//! the calls of the caller's own conversation only; any other id, like a missing one, is
//! `Error: no async result found for <id>`.
//!
//! - `status` (the default): `processing`, or `completed\n<response as JSON>` /
//!   `failed\n<error>` once settled;
//! - `logs`: what the service knows of the call's progress (its status and times);
//! - `stop`: settles a call still running as failed ([`STOPPED`]), so that a result arriving
//!   later is not injected; a settled call answers as `status` does.

use serde_json::{Value, json};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use toolsmith_store::{AsyncResult, AsyncSettlement, AsyncStatus};

use super::{ASYNC_STATUS_TOOL, Coordinator};
use crate::runs::RunContext;

/// The error a stopped call is settled with.
pub const STOPPED: &str = "Async tool call was stopped.";

/// See the [module docs](self).
pub(crate) struct AsyncStatusTool {
    spec: ToolSpec,
    coordinator: Coordinator,
}

impl AsyncStatusTool {
    pub(crate) fn new(coordinator: Coordinator) -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "resultId": {
                    "type": "string",
                    "description": "The resultId an async tool call returned."
                },
                "action": {
                    "type": "string",
                    "enum": ["status", "logs", "stop"],
                    "description": "status (default), logs, or stop a call still running."
                }
            },
            "required": ["resultId"],
            "additionalProperties": false
        });
        let spec = ToolSpec::new(ASYNC_STATUS_TOOL, schema).with_description(
            "Check on an async tool call by its resultId: its status and result, its logs, or \
             stop it.",
        );
        AsyncStatusTool { spec, coordinator }
    }
}

#[async_trait::async_trait]
impl Tool for AsyncStatusTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let id = input["resultId"].as_str().unwrap_or_default().to_string();
        let action = input["action"].as_str().unwrap_or("status");
        let missing = || ToolOutput::text(format!("Error: no async result found for {id}"));
        let Some(run) = cx.scope().deps.get::<RunContext>() else {
            return Ok(missing());
        };
        let store_error = |e: toolsmith_store::StoreError| {
            ToolError::new("ASYNC_STORE", format!("cannot read the call: {e}"))
        };
        let store = self.coordinator.store();
        let row = match store.async_result(&id).await.map_err(store_error)? {
            Some(row)
                if row.account == run.account
                    && row.agent_id == run.agent_id
                    && row.conversation_key == run.conversation_key =>
            {
                row
            }
            _ => return Ok(missing()),
        };
        let row = if action == "stop" && row.status == AsyncStatus::Processing {
            let stopped = AsyncSettlement::Failed(STOPPED.to_string());
            store
                .settle_async_result(&id, &stopped)
                .await
                .map_err(store_error)?;
            let row = store
                .async_result(&id)
                .await
                .map_err(store_error)?
                .unwrap_or(row);
            self.coordinator.settled_elsewhere(&row);
            row
        } else {
            row
        };
        Ok(ToolOutput::text(match action {
            "logs" => logs(&row),
            _ => status(&row),
        }))
    }
}

fn status(row: &AsyncResult) -> String {
    match row.status {
        AsyncStatus::Processing => "processing".to_string(),
        AsyncStatus::Completed => {
            format!("completed\n{}", row.response.clone().unwrap_or(Value::Null))
        }
        AsyncStatus::Failed => format!("failed\n{}", row.error.clone().unwrap_or_default()),
    }
}

fn logs(row: &AsyncResult) -> String {
    let mode = if row.external {
        "external-dispatch"
    } else {
        "same-invocation"
    };
    format!(
        "{} ({mode}) {}: created at {} ms, last updated at {} ms since the epoch\n{}",
        row.tool_name,
        row.tool_call_id,
        row.created_at,
        row.updated_at,
        status(row)
    )
}
