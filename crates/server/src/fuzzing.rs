//! The request body parsers, reachable from the fuzz targets (`fuzz/` at the repository's
//! root): not part of the API. Each runs exactly what its route runs on the body's bytes.

use serde_json::{Value, json};
use toolsmith_store::AsyncSettlement;

use crate::ApiError;

/// The most events a run body may hold.
pub const MAX_RUN_EVENTS: usize = crate::events::MAX_EVENTS;

/// `POST /` and `POST /async`: the body as parsed, as JSON (`agentId`, `eventId`,
/// `conversationKey`, `messages`, `approvals`, `toolResults`).
///
/// # Errors
///
/// The route's 400.
pub fn run_body(body: &[u8]) -> Result<Value, ApiError> {
    let parsed = crate::events::RunBody::parse(body)?;
    Ok(json!({
        "agentId": parsed.agent_id,
        "eventId": parsed.event_id,
        "conversationKey": parsed.conversation_key,
        "messages": parsed.messages,
        "approvals": parsed.approvals,
        "toolResults": parsed.tool_results,
    }))
}

/// `POST /agents/{agentId}/chat`: the chat id, and what the last message asks for (its
/// `Debug` form).
///
/// # Errors
///
/// The route's 400.
pub fn chat_body(body: &[u8]) -> Result<(String, String), ApiError> {
    let (id, turn) = crate::chat::parse(body)?;
    Ok((id, format!("{turn:?}")))
}

/// `POST /async-tools/{resultId}/complete`: the settlement.
///
/// # Errors
///
/// The route's 400.
pub fn completion_body(body: &[u8]) -> Result<AsyncSettlement, ApiError> {
    crate::async_tools::completion::parse_body(body)
}
