//! `POST /async-tools/{resultId}/complete`: an external worker settles a call, with the agent
//! harness's checks, texts and status codes, in its order:
//!
//! 1. auth: the account's bearer secret, or the call's own completion token → else 401;
//! 2. the body: JSON, an object, `status` `completed` | `failed`, `error` a string when
//!    failed → else 400 with the harness's message;
//! 3. the row: missing or another account's → 404 `Async tool result not found` (the same
//!    answer, so it tells nothing); settled → 409 with its status; its agent missing or
//!    inactive → 404 `Agent not found`; the conditional settle lost to another → 409;
//! 4. 202: `waiting_for_async_tools` with `pendingCount` while the group is unsealed (the count
//!    at least one then) or has calls out; else `accepted`, with whether this completion
//!    started the continuation (`invoked`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use toolsmith_store::{AsyncSettlement, AsyncStatus};

use super::continuation::{self, Readiness};
use crate::auth::{self, bearer};
use crate::runs::completion_token;
use crate::{ApiError, Service};

/// The error of a failed completion that gives none.
pub const DEFAULT_FAILURE: &str = "Async tool call failed";

/// The route's handler.
pub(crate) async fn complete(
    State(service): State<Service>,
    Path(result_id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let store = service.inner.store.clone();
    // Who: an account, or the holder of this call's token.
    let token = bearer(&headers).ok_or_else(ApiError::unauthorized)?;
    let account = match auth::account_of(&service, token).await? {
        Some(account) => Some(account.name),
        None => {
            let expected = completion_token(&service.inner.token_key, &result_id);
            let matches: bool = expected.as_bytes().ct_eq(token.as_bytes()).into();
            if !matches {
                return Err(ApiError::unauthorized());
            }
            None
        }
    };
    let settlement = parse_body(&body)?;
    let not_found = || ApiError::not_found("Async tool result not found");
    let row = store
        .async_result(&result_id)
        .await?
        .ok_or_else(not_found)?;
    if account.as_ref().is_some_and(|a| *a != row.account) {
        return Err(not_found());
    }
    if row.status != AsyncStatus::Processing {
        return Err(
            ApiError::new(StatusCode::CONFLICT, "Async tool result is already settled")
                .with("status", json!(row.status.as_str())),
        );
    }
    service.agent(&row.account, &row.agent_id).await?;
    if !store.settle_async_result(&result_id, &settlement).await? {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "Async tool result settled got error",
        ));
    }
    if !row.external
        && let Some(settled) = store.async_result(&result_id).await?
    {
        service.inner.coordinator.settled_elsewhere(&settled);
    }
    let key = row.parent_event_id.clone();
    let readiness = continuation::readiness(&service, &key)
        .await?
        .unwrap_or(Readiness {
            sealed: true,
            pending: 0,
        });
    if !readiness.sealed || readiness.pending > 0 {
        return Ok((
            StatusCode::ACCEPTED,
            axum::Json(json!({
                "status": "waiting_for_async_tools",
                "resultId": result_id,
                "pendingCount": readiness.pending,
            })),
        )
            .into_response());
    }
    let invoked = continuation::try_continue(&service, &key).await;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(json!({
            "status": "accepted",
            "resultId": result_id,
            "eventId": format!("async-tools-{result_id}"),
            "invoked": invoked,
        })),
    )
        .into_response())
}

/// The body's settlement, or the harness's 400.
pub(crate) fn parse_body(body: &[u8]) -> Result<AsyncSettlement, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid request JSON: {e}")))?;
    let Value::Object(mut body) = value else {
        return Err(ApiError::bad_request(
            "Async tool completion body must be an object",
        ));
    };
    match body.get("status").and_then(Value::as_str) {
        Some("completed") => Ok(AsyncSettlement::Completed(body.remove("response"))),
        Some("failed") => match body.remove("error") {
            None | Some(Value::Null) => Ok(AsyncSettlement::Failed(DEFAULT_FAILURE.into())),
            Some(Value::String(error)) => Ok(AsyncSettlement::Failed(error)),
            Some(_) => Err(ApiError::bad_request(
                "Async tool completion error must be a string when status is failed",
            )),
        },
        _ => Err(ApiError::bad_request(
            "Async tool completion status must be completed or failed",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(body: &str) -> String {
        let e = parse_body(body.as_bytes()).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        e.body["error"].as_str().unwrap().to_string()
    }

    #[test]
    fn bodies_are_checked_with_the_harness_messages() {
        assert!(error_of("{").starts_with("Invalid request JSON: "));
        assert_eq!(
            error_of("[]"),
            "Async tool completion body must be an object"
        );
        assert_eq!(
            error_of(r#"{"status":"done"}"#),
            "Async tool completion status must be completed or failed"
        );
        assert_eq!(
            error_of(r#"{"status":"failed","error":{"x":1}}"#),
            "Async tool completion error must be a string when status is failed"
        );
        assert_eq!(
            parse_body(br#"{"status":"failed"}"#).unwrap(),
            AsyncSettlement::Failed(DEFAULT_FAILURE.into())
        );
        assert_eq!(
            parse_body(br#"{"status":"completed","response":{"answer":"done"}}"#).unwrap(),
            AsyncSettlement::Completed(Some(json!({"answer": "done"})))
        );
        assert_eq!(
            parse_body(br#"{"status":"completed"}"#).unwrap(),
            AsyncSettlement::Completed(None)
        );
    }
}
