//! `POST /agents/{agentId}/chat`: the AI SDK's chat protocol, so that a web app's `useChat`
//! (`DefaultChatTransport`) talks to a toolsmith agent by changing one URL.
//!
//! The request is the transport's body, `{id, messages, …}`: `id` is the chat, which is the
//! conversation (one stored thread per chat, as for `conversationKey`). The service keeps the
//! conversation itself, so only the **last** message is read: a user message's text and file
//! parts are the new turn; an assistant message's tool parts in state `approval-responded` are
//! answers to the approvals the chat waits for, and parts in state `output-available` /
//! `output-error` of calls waiting for the client are client tools' results.
//!
//! The answer is a UI message stream (`x-vercel-ai-ui-message-stream: v1`): one `data: <chunk>`
//! per chunk (`start`, `start-step`, `text-*`, `reasoning-*`, `tool-input-*`,
//! `tool-output-*`, `tool-approval-request`, `source-url`, `file`, `data-<name>`,
//! `finish-step`, `finish`, `error`, `abort`), then `data: [DONE]`. While async work is
//! pending, SSE comment lines keep the connection alive.

use std::borrow::Cow;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::Value;
use toolsmith_core::{
    DENIED_BY_REVIEWER, Message, ModelOutput, Part, PauseKind, Role, RunPart, ToolApprovalResponse,
    ToolResultPart,
};

use crate::runs::{self, Outgoing, RequestPath, RunRequest, thread_id};
use crate::{ApiError, Service, auth, sse};

/// One chunk of the UI message stream, borrowing from the run part it shows: serialised
/// straight into its bytes, `type` first, then its fields in order (measured: building each
/// chunk as a `serde_json::Value` first was 7 % of a service run's instructions).
#[derive(Debug, Clone, PartialEq)]
pub struct UiChunk<'a> {
    kind: Cow<'a, str>,
    fields: [Option<(&'static str, Field<'a>)>; 4],
}

/// A field's value.
#[derive(Debug, Clone, PartialEq)]
enum Field<'a> {
    Text(Cow<'a, str>),
    Json(&'a Value),
    True,
}

impl<'a> UiChunk<'a> {
    fn new(kind: impl Into<Cow<'a, str>>) -> Self {
        UiChunk {
            kind: kind.into(),
            fields: [None, None, None, None],
        }
    }

    /// The chunk with a field more (there is room for four).
    fn with(mut self, name: &'static str, value: Field<'a>) -> Self {
        if let Some(slot) = self.fields.iter_mut().find(|f| f.is_none()) {
            *slot = Some((name, value));
        }
        self
    }

    fn text(self, name: &'static str, text: &'a str) -> Self {
        self.with(name, Field::Text(Cow::Borrowed(text)))
    }

    fn provider(self, provider_executed: bool) -> Self {
        match provider_executed {
            true => self.with("providerExecuted", Field::True),
            false => self,
        }
    }
}

impl serde::Serialize for UiChunk<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let fields = self.fields.iter().flatten();
        let mut map = serializer.serialize_map(Some(1 + fields.clone().count()))?;
        map.serialize_entry("type", &self.kind)?;
        for (name, value) in fields {
            match value {
                Field::Text(text) => map.serialize_entry(name, text)?,
                Field::Json(value) => map.serialize_entry(name, value)?,
                Field::True => map.serialize_entry(name, &true)?,
            }
        }
        map.end()
    }
}

/// The UI message stream chunk of a run part (`None`: nothing to show a chat UI).
///
/// ```
/// use toolsmith_core::RunPart;
/// use toolsmith_server::chat::ui_chunk;
///
/// let part = RunPart::TextDelta { id: "t0".into(), text: "Hi".into() };
/// let chunk = serde_json::to_string(&ui_chunk(&part).unwrap()).unwrap();
/// assert_eq!(chunk, r#"{"type":"text-delta","id":"t0","delta":"Hi"}"#);
/// ```
pub fn ui_chunk(part: &RunPart) -> Option<UiChunk<'_>> {
    let chunk = UiChunk::new;
    Some(match part {
        RunPart::Start { run_id } => chunk("start").text("messageId", run_id),
        RunPart::StartStep { .. } => chunk("start-step"),
        RunPart::FinishStep { .. } => chunk("finish-step"),
        RunPart::TextStart { id } => chunk("text-start").text("id", id),
        RunPart::TextDelta { id, text } => chunk("text-delta").text("id", id).text("delta", text),
        RunPart::TextEnd { id } => chunk("text-end").text("id", id),
        RunPart::ReasoningStart { id } => chunk("reasoning-start").text("id", id),
        RunPart::ReasoningDelta { id, text } => {
            chunk("reasoning-delta").text("id", id).text("delta", text)
        }
        RunPart::ReasoningEnd { id } => chunk("reasoning-end").text("id", id),
        RunPart::ToolInputStart {
            id,
            tool_name,
            provider_executed,
        } => chunk("tool-input-start")
            .text("toolCallId", id)
            .text("toolName", tool_name)
            .provider(*provider_executed),
        RunPart::ToolInputDelta { id, delta } => chunk("tool-input-delta")
            .text("toolCallId", id)
            .text("inputTextDelta", delta),
        RunPart::ToolCall {
            tool_call_id,
            tool_name,
            input,
            provider_executed,
            ..
        } => chunk("tool-input-available")
            .text("toolCallId", tool_call_id)
            .text("toolName", tool_name)
            .with("input", Field::Json(input))
            .provider(*provider_executed),
        RunPart::ToolResult {
            tool_call_id,
            output,
            provider_executed,
            ..
        } => chunk("tool-output-available")
            .text("toolCallId", tool_call_id)
            .with("output", Field::Json(output))
            .provider(*provider_executed),
        RunPart::ToolError {
            tool_call_id,
            error,
            ..
        } => chunk("tool-output-error")
            .text("toolCallId", tool_call_id)
            .text("errorText", &error.message),
        RunPart::ToolOutputDenied { tool_call_id, .. } => {
            chunk("tool-output-denied").text("toolCallId", tool_call_id)
        }
        RunPart::ToolApprovalRequest {
            approval_id,
            tool_call_id,
            ..
        } => chunk("tool-approval-request")
            .text("approvalId", approval_id)
            .text("toolCallId", tool_call_id),
        RunPart::Source(source) => {
            let url = source.url.as_deref()?;
            let chunk = chunk("source-url")
                .text("sourceId", &source.id)
                .text("url", url);
            match &source.title {
                Some(title) => chunk.text("title", title),
                None => chunk,
            }
        }
        RunPart::File { media_type, data } => chunk("file").text("mediaType", media_type).with(
            "url",
            Field::Text(Cow::Owned(format!("data:{media_type};base64,{data}"))),
        ),
        RunPart::Data { name, data, .. } => {
            UiChunk::new(format!("data-{name}")).with("data", Field::Json(data))
        }
        RunPart::Finish { finish_reason, .. } => {
            chunk("finish").text("finishReason", finish_reason.as_str())
        }
        RunPart::Abort { reason } => match reason {
            Some(reason) => chunk("abort").text("reason", reason),
            None => chunk("abort"),
        },
        RunPart::Error { error } => chunk("error").text("errorText", &error.message),
        _ => return None,
    })
}

/// The bytes of one outgoing item in the UI message stream; `start` names `message_id`.
fn encode(item: &Outgoing, message_id: &str) -> Vec<u8> {
    match item {
        Outgoing::Part(part) if matches!(**part, RunPart::Start { .. }) => {
            sse::data(&UiChunk::new("start").text("messageId", message_id))
        }
        Outgoing::Part(part) => match ui_chunk(part) {
            Some(chunk) => sse::data(&chunk),
            None => Vec::new(),
        },
        Outgoing::Waiting(_) => sse::encode(item),
    }
}

/// What the last message of a chat request asks for.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Turn {
    /// The assistant message the answer continues (the last one's id when it is the
    /// assistant's), else a new id.
    message_id: String,
    messages: Vec<Message>,
    approvals: Vec<ToolApprovalResponse>,
    /// `(toolCallId, output or error)` of tool parts with an output.
    outputs: Vec<(String, String, Result<Value, String>)>,
    /// The history is this one message: most likely a new chat.
    first: bool,
}

/// Reads the request body's chat id and last message.
pub(crate) fn parse(body: &[u8]) -> Result<(String, Turn), ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid request JSON: {e}")))?;
    let id = match value.get("id") {
        Some(Value::String(id)) if !id.is_empty() && id.len() <= 256 => id.clone(),
        _ => {
            return Err(ApiError::bad_request(
                "id must be a non-empty string of at most 256 characters",
            ));
        }
    };
    let (last, first) = match value.get("messages") {
        Some(Value::Array(messages)) => (messages.last().cloned(), messages.len() == 1),
        _ => return Err(ApiError::bad_request("messages must be an array")),
    };
    let last =
        last.ok_or_else(|| ApiError::bad_request("messages must hold at least one message"))?;
    let parts = last
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::bad_request("the last message must have parts"))?;
    let mut turn = Turn {
        message_id: format!("msg-{}", uuid::Uuid::new_v4().simple()),
        first,
        ..Turn::default()
    };
    match last.get("role").and_then(Value::as_str) {
        Some("user") => {
            let mut content = Vec::new();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = part["text"].as_str().unwrap_or_default();
                        content.push(Part::text(text));
                    }
                    Some("file") => content.push(Part::File {
                        media_type: part["mediaType"].as_str().unwrap_or_default().to_string(),
                        data: part["url"].as_str().unwrap_or_default().to_string(),
                        filename: part["filename"].as_str().map(str::to_string),
                    }),
                    // Other parts (data-*, step markers) carry nothing for the model.
                    _ => {}
                }
            }
            if content.is_empty() {
                return Err(ApiError::bad_request(
                    "the last message holds no text or file part",
                ));
            }
            turn.messages.push(Message::new(Role::User, content));
        }
        Some("assistant") => {
            if let Some(id) = last.get("id").and_then(Value::as_str) {
                turn.message_id = id.to_string();
            }
            for part in parts {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
                if !(kind.starts_with("tool-") || kind == "dynamic-tool") {
                    continue;
                }
                let call_id = part["toolCallId"].as_str().unwrap_or_default().to_string();
                let tool_name = part["toolName"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| kind.trim_start_matches("tool-").to_string());
                match part.get("state").and_then(Value::as_str) {
                    Some("approval-responded") => {
                        let approval = &part["approval"];
                        let approval_id = approval["id"].as_str().ok_or_else(|| {
                            ApiError::bad_request("an approval-responded part needs approval.id")
                        })?;
                        let approved = approval["approved"].as_bool().unwrap_or(false);
                        let reason = approval["reason"].as_str().map(str::to_string);
                        turn.approvals.push(match (approved, reason) {
                            (true, _) => ToolApprovalResponse::approve(approval_id),
                            (false, reason) => ToolApprovalResponse::deny(
                                approval_id,
                                // No reason given: the reviewer's default, as elsewhere.
                                reason.unwrap_or_else(|| DENIED_BY_REVIEWER.to_string()),
                            ),
                        });
                    }
                    Some("output-available") => {
                        turn.outputs
                            .push((call_id, tool_name, Ok(part["output"].clone())));
                    }
                    Some("output-error") => {
                        let error = part["errorText"].as_str().unwrap_or("error").to_string();
                        turn.outputs.push((call_id, tool_name, Err(error)));
                    }
                    _ => {}
                }
            }
        }
        _ => {
            return Err(ApiError::bad_request(
                "the last message must be the user's or the assistant's",
            ));
        }
    }
    Ok((id, turn))
}

/// `POST /agents/{agentId}/chat`.
pub(crate) async fn chat(
    State(service): State<Service>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let store = service.inner.store.clone();
    let account = auth::caller(&service, &headers).await?;
    let (chat_id, turn) = parse(&body)?;
    let built = service.agent(&account.name, &agent_id).await?;
    built.refuse_external_dispatch()?;
    let thread = thread_id(&account.name, &agent_id, &chat_id);
    // Outputs count only for calls that wait for the client.
    let found = if turn.outputs.is_empty() {
        None
    } else {
        store.thread(&thread).await?
    };
    let waiting: Vec<String> = match found {
        Some(found) => found
            .pending
            .iter()
            .filter(|p| p.kind == PauseKind::ClientTool)
            .map(|p| p.tool_call_id.clone())
            .collect(),
        None => Vec::new(),
    };
    let tool_results = turn
        .outputs
        .into_iter()
        .filter(|(id, _, _)| waiting.contains(id))
        .map(|(tool_call_id, tool_name, output)| ToolResultPart {
            tool_call_id,
            tool_name,
            output: match output {
                Ok(value) => ModelOutput::json(value),
                Err(error) => ModelOutput::error_text(error),
            },
            provider_executed: false,
            provider_metadata: Default::default(),
        })
        .collect();
    let (turn_message_id, turn_first) = (turn.message_id.clone(), turn.first);
    let event_id = format!("chat-{}", uuid::Uuid::new_v4());
    let request = RunRequest {
        account: account.name,
        agent_id,
        status_event: event_id.clone(),
        event_id,
        conversation_key: chat_id,
        thread,
        messages: turn.messages,
        approvals: turn.approvals,
        tool_results,
        path: RequestPath::Stream,
    };
    // A chat's event id is new: a duplicate (which cannot be) ends the stream at once.
    let claimed = if turn_first {
        runs::claim_first_turn(&service, &request).await?
    } else {
        runs::claim(&service, &request).await?
    };
    let Some(input) = claimed else {
        return Ok(sse::empty());
    };
    let receiver = runs::streamed(&service, built, request, input, 256);
    let message_id = turn_message_id;
    let encode = move |item: &Outgoing| encode(item, &message_id);
    let mut response = sse::response_with(receiver, encode, b"data: [DONE]\n\n");
    response.headers_mut().insert(
        "x-vercel-ai-ui-message-stream",
        axum::http::HeaderValue::from_static("v1"),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn run_parts_become_ui_chunks() {
        let delta = RunPart::TextDelta {
            id: "t0".into(),
            text: "Hi".into(),
        };
        assert_eq!(
            serde_json::to_value(ui_chunk(&delta).unwrap()).unwrap(),
            json!({"type": "text-delta", "id": "t0", "delta": "Hi"})
        );
        let call = RunPart::ToolCall {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            input: json!({"path": "a"}),
            provider_executed: false,
            invalid: false,
        };
        assert_eq!(
            serde_json::to_value(ui_chunk(&call).unwrap()).unwrap(),
            json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "read",
                   "input": {"path": "a"}})
        );
        let provided = RunPart::ToolResult {
            tool_call_id: "c1".into(),
            tool_name: "web_search".into(),
            input: json!({"q": "x"}),
            output: json!({"hits": 2}),
            is_error: false,
            provider_executed: true,
        };
        assert_eq!(
            serde_json::to_string(&ui_chunk(&provided).unwrap()).unwrap(),
            r#"{"type":"tool-output-available","toolCallId":"c1","output":{"hits":2},"providerExecuted":true}"#
        );
        let data = RunPart::Data {
            tool_call_id: None,
            name: "weather".into(),
            data: json!({"c": 21}),
        };
        assert_eq!(
            serde_json::to_value(ui_chunk(&data).unwrap()).unwrap(),
            json!({"type": "data-weather", "data": {"c": 21}})
        );
        assert!(
            ui_chunk(&RunPart::Warning {
                message: "w".into()
            })
            .is_none()
        );
    }

    #[test]
    fn the_last_message_is_the_turn() {
        let (id, turn) = parse(
            br#"{"id":"chat-1","messages":[
                {"id":"m1","role":"user","parts":[{"type":"text","text":"old"}]},
                {"id":"m2","role":"user","parts":[{"type":"text","text":"new"}]}]}"#,
        )
        .unwrap();
        assert_eq!(id, "chat-1");
        assert_eq!(turn.messages.len(), 1);
        assert_eq!(turn.messages[0].text(), "new");
        let (_, turn) = parse(
            br#"{"id":"c","messages":[{"id":"m","role":"assistant","parts":[
                {"type":"tool-write","toolCallId":"c1","state":"approval-responded","input":{},
                 "approval":{"id":"ap1","approved":false,"reason":"no"}}]}]}"#,
        )
        .unwrap();
        assert_eq!(turn.approvals, [ToolApprovalResponse::deny("ap1", "no")]);
        let (_, turn) = parse(
            br#"{"id":"c","messages":[{"id":"m","role":"assistant","parts":[
                {"type":"tool-write","toolCallId":"c1","state":"approval-responded","input":{},
                 "approval":{"id":"ap1","approved":false}}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            turn.approvals,
            [ToolApprovalResponse::deny("ap1", DENIED_BY_REVIEWER)]
        );
        let err = parse(br#"{"id":"c","messages":[]}"#).unwrap_err();
        assert_eq!(err.body["error"], "messages must hold at least one message");
    }
}
