//! The agent harness's routes: `POST /` (a run streamed as SSE), `POST /async` (a run in the
//! background, 202 with a `statusUrl`), `GET /status/{eventId}?agentId=` (where it stands),
//! health on any other `GET`, 405 for other methods.
//!
//! Every route but health takes the account's bearer secret (401 `{"error":"Unauthorized"}`
//! without it). Agents, events and async results are looked up within the caller's account:
//! another account's answers exactly as a missing one.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolsmith_store::EventStatus;

use crate::events::RunBody;
use crate::runs::{self, RequestPath, RunRequest};
use crate::{ApiError, Service, auth, encode_component, sse};

/// How many parts a streamed run may be ahead of a slow reader.
const STREAM_BUFFER: usize = 256;

/// `POST /`.
pub(crate) async fn run_streamed(
    State(service): State<Service>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let (built, request) = begin(&service, &headers, &body, RequestPath::Stream).await?;
    let input = match runs::claim(&service, &request).await {
        Ok(Some(input)) => input,
        // A duplicate event id: an empty stream.
        Ok(None) => return Ok(sse::empty()),
        Err(e) => return Err(fail_event(&service, &request, e).await),
    };
    let receiver = runs::streamed(&service, built, request, input, STREAM_BUFFER);
    Ok(sse::response(receiver))
}

/// `POST /async`.
pub(crate) async fn run_async(
    State(service): State<Service>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let parsed = RunBody::parse(&body)?;
    let accepted = |service: &Service| {
        let status_url = format!(
            "{}/status/{}?agentId={}",
            service.inner.public_url,
            encode_component(&parsed.event_id),
            encode_component(&parsed.agent_id)
        );
        (
            StatusCode::ACCEPTED,
            axum::Json(json!({
                "eventId": parsed.event_id,
                "agentId": parsed.agent_id,
                "status": "processing",
                "statusUrl": status_url,
            })),
        )
            .into_response()
    };
    let (built, request) = begin(&service, &headers, &body, RequestPath::Background).await?;
    let input = match runs::claim(&service, &request).await {
        Ok(Some(input)) => input,
        // The event was started before: where it stands is at its statusUrl.
        Ok(None) => return Ok(accepted(&service)),
        Err(e) => return Err(fail_event(&service, &request, e).await),
    };
    let response = accepted(&service);
    service.spawn(runs::drive(service.clone(), built, request, input, None));
    Ok(response)
}

/// The checks both run routes make, and the run they ask for (its event is recorded by
/// [`runs::claim`]).
async fn begin(
    service: &Service,
    headers: &HeaderMap,
    body: &[u8],
    path: RequestPath,
) -> Result<(std::sync::Arc<crate::service::BuiltAgent>, RunRequest), ApiError> {
    let account = auth::caller(service, headers).await?;
    let body = RunBody::parse(body)?;
    let built = service.agent(&account.name, &body.agent_id).await?;
    if path == RequestPath::Stream {
        built.refuse_external_dispatch()?;
    }
    let request = RunRequest {
        thread: runs::thread_id(&account.name, &body.agent_id, &body.conversation_key),
        account: account.name,
        status_event: body.event_id.clone(),
        agent_id: body.agent_id,
        event_id: body.event_id,
        conversation_key: body.conversation_key,
        messages: body.messages,
        approvals: body.approvals,
        tool_results: body.tool_results,
        path,
    };
    Ok((built, request))
}

/// Marks the event failed with the error a run could not start with, and returns the error.
pub(crate) async fn fail_event(
    service: &Service,
    request: &RunRequest,
    error: ApiError,
) -> ApiError {
    let detail =
        json!({"error": {"message": error.body.get("error").cloned().unwrap_or(Value::Null)}});
    let _ = service
        .inner
        .store
        .update_event(
            &request.account,
            &request.agent_id,
            &request.event_id,
            EventStatus::Failed,
            &detail,
        )
        .await;
    error
}

/// `GET /status/{eventId}?agentId=`.
pub(crate) async fn status(
    State(service): State<Service>,
    Path(event_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let store = service.inner.store.clone();
    let account = auth::caller(&service, &headers).await?;
    let agent_id = query
        .get("agentId")
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ApiError::bad_request("agentId is required (?agentId=)"))?;
    let event = store
        .event(&account.name, agent_id, &event_id)
        .await?
        .ok_or_else(|| ApiError::not_found("Event not found"))?;
    let mut body = json!({
        "eventId": event.event_id,
        "agentId": event.agent_id,
        "conversationKey": event.conversation_key,
        "status": event.status.as_str(),
        "createdAt": event.created_at,
        "updatedAt": event.updated_at,
    });
    if let (Value::Object(body), Value::Object(detail)) = (&mut body, event.detail) {
        body.extend(detail);
    }
    Ok(axum::Json(body).into_response())
}

/// Any other route: health for `GET` (and `HEAD`), 404 for `POST`, 405 for other methods.
pub(crate) async fn fallback(method: Method) -> Response {
    match method {
        Method::GET | Method::HEAD => {
            axum::Json(json!({"status": "ok", "service": "toolsmith"})).into_response()
        }
        Method::POST => ApiError::not_found("Not found").into_response(),
        other => ApiError::method_not_allowed(other.as_str(), &["GET", "POST"]).into_response(),
    }
}
