//! The console's JSON API (`/console/api/…`), behind the account's bearer secret like every
//! other route of the account: what the page shows and the few things it does (start a run,
//! answer approvals). The routes and their bodies are listed in the [module docs](super).
//!
//! A run here is a conversation's thread: its stored messages, journal and pauses. Another
//! account's thread answers exactly as a missing one (404 `Run not found`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{Message, PauseKind, ToolApprovalResponse, Usage};
use toolsmith_store::{Account, Thread, ThreadQuery, ThreadStatus};

use crate::runs::{self, Owner, RequestPath, RunRequest};
use crate::service::BuiltAgent;
use crate::{ApiError, Service, auth};

/// How many runs a list holds unless asked for fewer.
const DEFAULT_LIMIT: usize = 100;
/// The most runs a list holds.
const MAX_LIMIT: usize = 500;

/// `GET /console/api/session`: whose secret it is.
pub(crate) async fn session(
    State(service): State<Service>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    Ok(Json(json!({"account": account.name})).into_response())
}

/// `GET /console/api/agents`: the account's agents, their model, tools and config (credentials
/// hidden: [`toolsmith_config::redacted`]).
pub(crate) async fn agents(
    State(service): State<Service>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    let mut agents = Vec::new();
    for record in service.inner.store.agents(&account.name).await? {
        let config = service.config_value(&record);
        let mut agent = json!({
            "agentId": record.id,
            "active": record.active,
            "updatedAt": record.updated_at,
            "model": config.as_ref().ok().and_then(model_name),
            "config": config.as_ref().map(toolsmith_config::redacted).unwrap_or(Value::Null),
            "tools": [],
        });
        let built = match &config {
            Ok(_) if record.active => service
                .agent(&account.name, &record.id)
                .await
                .map_err(|e| error_text(&e)),
            Ok(_) => Err("The agent is inactive.".to_string()),
            Err(e) => Err(e.clone()),
        };
        match built {
            Ok(built) => agent["tools"] = tools(&built),
            Err(e) => agent["error"] = Value::String(e),
        }
        agents.push(agent);
    }
    Ok(Json(json!({"agents": agents})).into_response())
}

/// The model a config names, as written (`provider:name`).
fn model_name(config: &Value) -> Option<Value> {
    match config.get("model")? {
        Value::String(name) => Some(Value::String(name.clone())),
        Value::Object(model) => {
            let part = |key| model.get(key).and_then(Value::as_str).unwrap_or("?");
            Some(Value::String(format!(
                "{}:{}",
                part("provider"),
                part("name")
            )))
        }
        _ => None,
    }
}

/// The tools a built agent offers its model, as declared.
fn tools(built: &BuiltAgent) -> Value {
    let tools = built.agent.tools();
    Value::Array(
        tools
            .list()
            .into_iter()
            .map(|spec| {
                json!({
                    "name": spec.name(),
                    "description": spec.description(),
                    "inputSchema": &**spec.input_schema(),
                })
            })
            .collect(),
    )
}

fn error_text(e: &ApiError) -> String {
    e.body
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("unknown error")
        .to_string()
}

/// `GET /console/api/runs?status=&agentId=&limit=`.
pub(crate) async fn runs(
    State(service): State<Service>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    let status = match query.get("status").filter(|s| !s.is_empty()) {
        Some(name) => Some(ThreadStatus::parse(name).ok_or_else(|| {
            ApiError::bad_request(format!(
                "status must be running, paused, idle or failed, not {name:?}"
            ))
        })?),
        None => None,
    };
    let limit = match query.get("limit") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(format!("limit must be a number from 1 to {MAX_LIMIT}"))
            })?,
        None => DEFAULT_LIMIT,
    };
    let agent = query.get("agentId").filter(|a| !a.is_empty());
    // An agent's threads are found by its tag; agent ids are per account, so another
    // account's agent of the same id is filtered out (asking for more to make up for them).
    let (tag, fetch) = match agent {
        Some(agent) => (format!("{}{agent}", Owner::AGENT), limit * 4),
        None => (format!("{}{}", Owner::ACCOUNT, account.name), limit),
    };
    let threads = service
        .inner
        .store
        .threads(&ThreadQuery {
            tag: Some(tag),
            status,
            limit: Some(fetch),
            ..ThreadQuery::default()
        })
        .await?;
    let runs: Vec<Value> = threads
        .iter()
        .filter_map(|thread| Some((thread, Owner::of(thread)?)))
        .filter(|(_, owner)| owner.account == account.name)
        .take(limit)
        .map(|(thread, owner)| summary(&service, thread, &owner))
        .collect();
    Ok(Json(json!({"runs": runs})).into_response())
}

/// A run as lists show it.
fn summary(service: &Service, thread: &Thread, owner: &Owner) -> Value {
    json!({
        "threadId": thread.id,
        "agentId": owner.agent_id,
        "conversationKey": owner.conversation_key,
        "status": thread.status.as_str(),
        "pending": thread.pending.len(),
        "messageCount": thread.message_count,
        "createdAt": thread.created_at,
        "updatedAt": thread.updated_at,
        "live": service.inner.live.is_live(&thread.id),
    })
}

/// The caller's thread `id` and whose it is; 404 for a missing one and another account's.
async fn own_thread(
    service: &Service,
    account: &Account,
    id: &str,
) -> Result<(Thread, Owner), ApiError> {
    let not_found = || ApiError::not_found("Run not found");
    let thread = service
        .inner
        .store
        .thread(id)
        .await?
        .ok_or_else(not_found)?;
    let owner = Owner::of(&thread)
        .filter(|o| o.account == account.name)
        .ok_or_else(not_found)?;
    Ok((thread, owner))
}

/// `GET /console/api/runs/{threadId}`: the run, its messages, journal, pauses, async calls and
/// usage.
pub(crate) async fn run(
    State(service): State<Service>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    let (thread, owner) = own_thread(&service, &account, &id).await?;
    let store = &service.inner.store;
    let messages = store.messages(&id).await?;
    let journal = store.journal(&id).await?;
    let mut async_tools = Vec::new();
    for event in store.processing_events(&id).await? {
        let key = runs::event_key(&account.name, &event.agent_id, &event.event_id);
        for row in store.async_results_of(&key).await? {
            async_tools.push(json!({
                "resultId": row.result_id,
                "toolName": row.tool_name,
                "toolCallId": row.tool_call_id,
                "status": row.status.as_str(),
                "external": row.external,
                "createdAt": row.created_at,
                "updatedAt": row.updated_at,
            }));
        }
    }
    let pending: Vec<Value> = thread
        .pending
        .iter()
        .map(|pause| {
            let approval_id = pause.data.get("approvalId").and_then(Value::as_str);
            json!({
                "kind": pause.kind.as_str(),
                "toolCallId": pause.tool_call_id,
                "toolName": pause.tool_name,
                "input": pause.input,
                "approvalId": approval_id,
                "path": pause.path,
                // Edited arguments are validated again against the tool's schema before
                // the call runs; only approvals take them.
                "editable": pause.kind == PauseKind::Approval && approval_id.is_some(),
            })
        })
        .collect();
    let mut run = summary(&service, &thread, &owner);
    run["parentId"] = json!(thread.parent_id);
    let usage = usage(&messages);
    Ok(Json(json!({
        "run": run,
        "messages": messages,
        "journal": journal,
        "pending": pending,
        "asyncTools": async_tools,
        "usage": usage,
    }))
    .into_response())
}

/// The tokens of the run's steps, as their messages record them (`meta.usage`); `null` when
/// none does.
fn usage(messages: &[Message]) -> Option<Usage> {
    messages
        .iter()
        .filter_map(|m| m.meta.as_ref()?.usage)
        .reduce(|mut total, step| {
            total += step;
            total
        })
}

/// `GET /console/api/runs/{threadId}/live`: the run's parts as they happen ([`super::live`]).
pub(crate) async fn live(
    State(service): State<Service>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    own_thread(&service, &account, &id).await?;
    Ok(service.inner.live.stream(&id))
}

/// `POST /console/api/runs`'s body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartBody {
    agent_id: String,
    message: String,
    #[serde(default)]
    conversation_key: Option<String>,
}

/// `POST /console/api/runs` `{"agentId", "message", "conversationKey"?}`: a run in the
/// background (as `POST /async`), 202 `{"threadId", "eventId", "conversationKey"}`.
pub(crate) async fn start(
    State(service): State<Service>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    let body: StartBody = parse(&body)?;
    if body.message.trim().is_empty() {
        return Err(ApiError::bad_request("message must not be empty"));
    }
    let conversation_key = match body.conversation_key.filter(|k| !k.is_empty()) {
        Some(key) => key,
        None => format!("console-{}", uuid::Uuid::new_v4()),
    };
    let built = service.agent(&account.name, &body.agent_id).await?;
    let request = request(
        &account,
        &body.agent_id,
        &conversation_key,
        vec![Message::user(body.message)],
        Vec::new(),
    );
    background(&service, built, request).await
}

/// `POST /console/api/runs/{threadId}/approvals`'s body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsBody {
    approvals: Vec<ToolApprovalResponse>,
}

/// `POST /console/api/runs/{threadId}/approvals` `{"approvals": [{"approvalId", "approved",
/// "reason"?, "input"?}]}`: the paused run goes on in the background, 202 `{"threadId",
/// "eventId", "conversationKey"}`.
pub(crate) async fn approvals(
    State(service): State<Service>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    let body: ApprovalsBody = parse(&body)?;
    if body.approvals.is_empty() {
        return Err(ApiError::bad_request(
            "approvals must hold at least one answer",
        ));
    }
    let (_, owner) = own_thread(&service, &account, &id).await?;
    let built = service.agent(&account.name, &owner.agent_id).await?;
    let request = request(
        &account,
        &owner.agent_id,
        &owner.conversation_key,
        Vec::new(),
        body.approvals,
    );
    background(&service, built, request).await
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid request JSON: {e}")))
}

/// A request of the console's, with an event id of its own.
fn request(
    account: &Account,
    agent_id: &str,
    conversation_key: &str,
    messages: Vec<Message>,
    approvals: Vec<ToolApprovalResponse>,
) -> RunRequest {
    let event_id = format!("console-{}", uuid::Uuid::new_v4());
    RunRequest {
        thread: runs::thread_id(&account.name, agent_id, conversation_key),
        account: account.name.clone(),
        status_event: event_id.clone(),
        agent_id: agent_id.to_string(),
        event_id,
        conversation_key: conversation_key.to_string(),
        messages,
        approvals,
        tool_results: Vec::new(),
        path: RequestPath::Background,
    }
}

/// Claims the conversation for `request` and drives its run in the background.
async fn background(
    service: &Service,
    built: Arc<BuiltAgent>,
    request: RunRequest,
) -> Result<Response, ApiError> {
    let input = match runs::claim(service, &request).await {
        Ok(Some(input)) => input,
        Ok(None) => {
            return Err(ApiError::internal(
                "starting the run",
                "a new event id was found recorded",
            ));
        }
        Err(e) => return Err(crate::routes::fail_event(service, &request, e).await),
    };
    let answer = json!({
        "threadId": request.thread,
        "eventId": request.event_id,
        "conversationKey": request.conversation_key,
    });
    service.spawn(runs::drive(service.clone(), built, request, input, None));
    Ok((StatusCode::ACCEPTED, Json(answer)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_the_steps_that_record_it() {
        use toolsmith_core::MessageMeta;
        assert!(usage(&[Message::user("hi")]).is_none());
        let step = Message::assistant("ok").with_meta(MessageMeta::new().usage(Usage::new(3, 4)));
        let total = usage(&[Message::user("hi"), step.clone(), step]).unwrap();
        assert_eq!(total, Usage::new(6, 8));
    }
}
