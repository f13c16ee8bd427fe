//! The body of `POST /` and `POST /async`: `{agentId, eventId, conversationKey, events[]}`.
//!
//! `events` are messages in the AI SDK's `ModelMessage` shape: `{"role": "user", "content":
//! "text" | [parts]}` for what the user says, and `{"role": "tool", "content": [parts]}` holding
//! `tool-approval-response` parts (answers to approvals the conversation waits for) or
//! `tool-result` parts (results of client tools). A request holding only answers is runnable.

use serde_json::{Map, Value};
use toolsmith_core::{Message, Part, Role, ToolApprovalResponse, ToolResultPart};

use crate::ApiError;

/// A parsed run request body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunBody {
    pub(crate) agent_id: String,
    pub(crate) event_id: String,
    pub(crate) conversation_key: String,
    pub(crate) messages: Vec<Message>,
    pub(crate) approvals: Vec<ToolApprovalResponse>,
    pub(crate) tool_results: Vec<ToolResultPart>,
}

/// The most events one request may hold.
pub(crate) const MAX_EVENTS: usize = 1000;

impl RunBody {
    /// Parses a body.
    ///
    /// # Errors
    ///
    /// 400 naming what is wrong.
    pub(crate) fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("Invalid request JSON: {e}")))?;
        let Value::Object(mut body) = value else {
            return Err(ApiError::bad_request("Request body must be an object"));
        };
        let agent_id = text_field(&mut body, "agentId")?;
        let event_id = text_field(&mut body, "eventId")?;
        let conversation_key = text_field(&mut body, "conversationKey")?;
        let events = match body.remove("events") {
            Some(Value::Array(events)) => events,
            _ => return Err(ApiError::bad_request("events must be an array")),
        };
        if events.len() > MAX_EVENTS {
            return Err(ApiError::bad_request(format!(
                "events holds {} messages; at most {MAX_EVENTS} are accepted",
                events.len()
            )));
        }
        let mut parsed = RunBody {
            agent_id,
            event_id,
            conversation_key,
            messages: Vec::new(),
            approvals: Vec::new(),
            tool_results: Vec::new(),
        };
        for (i, event) in events.into_iter().enumerate() {
            parsed.add(i, event)?;
        }
        Ok(parsed)
    }

    fn add(&mut self, i: usize, event: Value) -> Result<(), ApiError> {
        let at = format!("events[{i}]");
        let Value::Object(mut event) = event else {
            return Err(ApiError::bad_request(format!("{at} must be an object")));
        };
        let role = match event.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("tool") => Role::Tool,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "{at}.role must be \"user\" or \"tool\""
                )));
            }
        };
        let parts = match event.remove("content") {
            Some(Value::String(text)) if role == Role::User => vec![Part::text(text)],
            Some(parts @ Value::Array(_)) => serde_json::from_value::<Vec<Part>>(parts)
                .map_err(|e| ApiError::bad_request(format!("{at}.content: {e}")))?,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "{at}.content must be a string (user messages) or an array of parts"
                )));
            }
        };
        if role == Role::User {
            if parts
                .iter()
                .any(|p| !matches!(p, Part::Text { .. } | Part::File { .. }))
            {
                return Err(ApiError::bad_request(format!(
                    "{at}: a user message holds text and file parts only"
                )));
            }
            self.messages.push(Message::new(Role::User, parts));
            return Ok(());
        }
        for part in parts {
            match part {
                Part::ToolApprovalResponse(answer) => self.approvals.push(answer),
                Part::ToolResult(result) => self.tool_results.push(result),
                _ => {
                    return Err(ApiError::bad_request(format!(
                        "{at}: a tool message holds tool-approval-response and tool-result \
                         parts only"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// A required non-empty string field, at most 256 characters.
fn text_field(body: &mut Map<String, Value>, key: &str) -> Result<String, ApiError> {
    match body.remove(key) {
        Some(Value::String(text)) if !text.is_empty() && text.len() <= 256 => Ok(text),
        _ => Err(ApiError::bad_request(format!(
            "{key} must be a non-empty string of at most 256 characters"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(body: &str) -> String {
        RunBody::parse(body.as_bytes()).unwrap_err().body["error"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_body_gives_messages_and_answers() {
        let body = RunBody::parse(
            br#"{"agentId":"a","eventId":"e1","conversationKey":"c","events":[
                {"role":"user","content":"hi"},
                {"role":"user","content":[{"type":"text","text":"there"}]},
                {"role":"tool","content":[{"type":"tool-approval-response","approvalId":"ap1","approved":false,"reason":"no"}]}
            ]}"#,
        )
        .unwrap();
        assert_eq!(body.agent_id, "a");
        assert_eq!(body.messages.len(), 2);
        assert_eq!(body.messages[1].text(), "there");
        assert_eq!(body.approvals, [ToolApprovalResponse::deny("ap1", "no")]);
    }

    #[test]
    fn malformed_bodies_are_named() {
        assert!(error("nope").starts_with("Invalid request JSON: "));
        assert_eq!(error("[]"), "Request body must be an object");
        assert_eq!(
            error(r#"{"eventId":"e","conversationKey":"c","events":[]}"#),
            "agentId must be a non-empty string of at most 256 characters"
        );
        assert_eq!(
            error(r#"{"agentId":"a","eventId":"e","conversationKey":"c"}"#),
            "events must be an array"
        );
        assert_eq!(
            error(
                r#"{"agentId":"a","eventId":"e","conversationKey":"c","events":[{"role":"system","content":"x"}]}"#
            ),
            "events[0].role must be \"user\" or \"tool\""
        );
        assert_eq!(
            error(
                r#"{"agentId":"a","eventId":"e","conversationKey":"c","events":[{"role":"tool","content":"x"}]}"#
            ),
            "events[0].content must be a string (user messages) or an array of parts"
        );
    }
}
