//! `GET` / `POST /threads/{parent_thread_id}/variables/{request_id}`: an operator provides the
//! variables a deferred sub-agent needs (the Standard Agents spec's `subagent_env_required`),
//! and the sub-agent boots at once.
//!
//! When a run's `subagent_create` call fails with `subagent_env_required`, the service records
//! the request (its variables, the call's input) as the event `variables:<requestId>` of the
//! conversation's agent. `GET` answers `{requestId, threadId, status, agent, name, variables:
//! [{name, type, description, provided}]}`; `POST {"values": {NAME: "value", …}}` stores the
//! values in the thread (secrets sealed with the service's key), then starts a run on the
//! conversation that calls `subagent_create` again with the recorded input before its first
//! step: the instance starts with the values, and the model goes on with its answer. The
//! thread, the request or another account's answer alike: 404.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolsmith_agent::SUBAGENT_CREATE;
use toolsmith_core::{ModelToolCall, RunPart};
use toolsmith_store::{EventRecord, EventStatus, Vault};

use crate::async_tools::ASYNC_RESULT_TTL;
use crate::runs::{self, Owner, RequestPath, RunRequest};
use crate::service::toolsmith_store_now;
use crate::{ApiError, Service, auth};

/// The error code of a sub-agent waiting for variables.
const ENV_REQUIRED: &str = "subagent_env_required";

fn event_id(request_id: &str) -> String {
    format!("variables:{request_id}")
}

/// Records a `subagent_env_required` error of `request`'s run, so that the variables routes can
/// answer it.
pub(crate) async fn record_request(service: &Service, request: &RunRequest, part: &RunPart) {
    let RunPart::ToolError {
        tool_call_id,
        tool_name,
        input,
        error,
    } = part
    else {
        return;
    };
    let Some(details) = error
        .details
        .as_ref()
        .filter(|_| error.code == ENV_REQUIRED)
    else {
        return;
    };
    let Some(request_id) = details["requestId"].as_str() else {
        return;
    };
    let now = toolsmith_store_now();
    let record = EventRecord {
        account: request.account.clone(),
        agent_id: request.agent_id.clone(),
        event_id: event_id(request_id),
        conversation_key: request.conversation_key.clone(),
        thread_id: request.thread.clone(),
        status: EventStatus::AwaitingApproval,
        detail: json!({
            "requestId": request_id,
            "agent": details["agent"],
            "name": details["name"],
            "variables": details["variables"],
            "toolName": tool_name,
            "toolCallId": tool_call_id,
            "input": input,
        }),
        created_at: now,
        updated_at: now,
        expires_at: now + ASYNC_RESULT_TTL.as_millis() as u64,
    };
    if let Err(e) = service.inner.store.insert_event(&record).await {
        tracing::error!(target: "toolsmith::server", %e, "recording a variables request");
    }
}

/// The request `request_id` of `thread`, if the caller's account owns the thread.
async fn find(
    service: &Service,
    headers: &HeaderMap,
    thread: &str,
    request_id: &str,
) -> Result<EventRecord, ApiError> {
    let store = &service.inner.store;
    let account = auth::caller(service, headers).await?;
    let not_found = || ApiError::not_found("Variables request not found");
    let found = store.thread(thread).await?.ok_or_else(not_found)?;
    let owner = Owner::of(&found)
        .filter(|o| o.account == account.name)
        .ok_or_else(not_found)?;
    let agent = owner.agent_id;
    let event = store
        .event(&account.name, &agent, &event_id(request_id))
        .await?
        .ok_or_else(not_found)?;
    if event.thread_id != thread {
        return Err(not_found());
    }
    Ok(event)
}

/// The names of the thread's variables that are set.
async fn provided(service: &Service, thread: &str) -> Result<Vec<String>, ApiError> {
    Ok(service
        .inner
        .store
        .variables(thread)
        .await?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// `GET /threads/{thread}/variables/{request}`.
pub(crate) async fn get(
    State(service): State<Service>,
    Path((thread, request_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let event = find(&service, &headers, &thread, &request_id).await?;
    let set = provided(&service, &thread).await?;
    Ok(axum::Json(answer(&event, &thread, &set)).into_response())
}

fn answer(event: &EventRecord, thread: &str, set: &[String]) -> Value {
    let variables: Vec<Value> = event.detail["variables"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let mut v = v.clone();
            let name = v["name"].as_str().unwrap_or_default().to_string();
            v["provided"] = json!(set.contains(&name));
            v
        })
        .collect();
    json!({
        "requestId": event.detail["requestId"],
        "threadId": thread,
        "status": if event.status == EventStatus::AwaitingApproval { "pending" } else { "provided" },
        "agent": event.detail["agent"],
        "name": event.detail["name"],
        "variables": variables,
    })
}

/// `POST /threads/{thread}/variables/{request}`.
pub(crate) async fn post(
    State(service): State<Service>,
    Path((thread, request_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let event = find(&service, &headers, &thread, &request_id).await?;
    let body: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("Invalid request JSON: {e}")))?;
    let Some(values) = body.get("values").and_then(Value::as_object) else {
        return Err(ApiError::bad_request(
            "the body must be {\"values\": {NAME: \"value\", …}}",
        ));
    };
    if event.status != EventStatus::AwaitingApproval {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "Variables request is already provided",
        ));
    }
    let declared: Vec<&Value> = event.detail["variables"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let declared_name = |name: &str| declared.iter().find(|v| v["name"] == name);
    let mut entries = Vec::new();
    for (name, value) in values {
        let Some(decl) = declared_name(name) else {
            return Err(ApiError::bad_request(format!(
                "{name} is not a variable this request asks for"
            )));
        };
        let Some(value) = value.as_str() else {
            return Err(ApiError::bad_request(format!(
                "values.{name} must be a string"
            )));
        };
        entries.push((name.clone(), value.to_string(), decl["type"] != "text"));
    }
    let set = provided(&service, &thread).await?;
    let missing: Vec<&str> = declared
        .iter()
        .filter_map(|v| v["name"].as_str())
        .filter(|name| !values.contains_key(*name) && !set.iter().any(|s| s == name))
        .collect();
    if !missing.is_empty() {
        return Err(ApiError::bad_request(format!(
            "still missing: {}",
            missing.join(", ")
        )));
    }
    let vault = Vault::new(&*service.inner.store, service.inner.key.clone());
    for (name, value, secret) in &entries {
        vault.put(&thread, name, value, *secret).await?;
    }
    service
        .inner
        .store
        .update_event(
            &event.account,
            &event.agent_id,
            &event.event_id,
            EventStatus::Completed,
            &event.detail,
        )
        .await?;
    let booted = boot(&service, &event).await?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(json!({
            "status": "accepted",
            "requestId": request_id,
            "eventId": booted,
        })),
    )
        .into_response())
}

/// Starts the run that calls `subagent_create` again with the recorded input: its event id.
async fn boot(service: &Service, event: &EventRecord) -> Result<String, ApiError> {
    let built = service.agent(&event.account, &event.agent_id).await?;
    let booted = format!("{}:boot", event.event_id);
    let request = RunRequest {
        account: event.account.clone(),
        agent_id: event.agent_id.clone(),
        event_id: booted.clone(),
        conversation_key: event.conversation_key.clone(),
        thread: event.thread_id.clone(),
        messages: Vec::new(),
        approvals: Vec::new(),
        tool_results: Vec::new(),
        path: RequestPath::Background,
        status_event: booted.clone(),
    };
    let now = toolsmith_store_now();
    let record = EventRecord {
        event_id: booted.clone(),
        status: EventStatus::Processing,
        detail: json!({}),
        created_at: now,
        updated_at: now,
        ..event.clone()
    };
    service.inner.store.insert_event(&record).await?;
    let call = ModelToolCall {
        tool_call_id: format!("call_boot_{}", uuid::Uuid::new_v4().simple()),
        tool_name: SUBAGENT_CREATE.to_string(),
        input: event.detail["input"].to_string(),
        provider_executed: false,
        provider_metadata: Default::default(),
    };
    let input = runs::claim_for_start_call(service, &request).await?;
    let input = input.with_start_call(call);
    service.spawn(runs::drive(service.clone(), built, request, input, None));
    Ok(booted)
}
