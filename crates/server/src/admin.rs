//! Accounts, agents and credentials over HTTP.
//!
//! Admin routes (the bearer is `TOOLSMITH_ADMIN_SECRET`; 401 when it is not set):
//! - `POST /admin/accounts` `{"name"}` → 201 `{"name", "secret"}` (the secret is shown once);
//! - `GET /admin/accounts` → `{"accounts": [{"name", "createdAt"}]}`;
//! - `PUT /admin/accounts/{account}/agents/{agentId}` with an agent config → 200;
//! - `PUT /admin/accounts/{account}/credentials/{name}` `{"value"}` → 204 (sealed at rest).
//!
//! An account manages its own agents with its bearer secret: `PUT /agents/{agentId}` (a
//! config), `GET /agents` (their ids), `DELETE /agents/{agentId}`. Configs are stored sealed;
//! none of these routes ever answers with a config or a credential.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use toolsmith_store::{Account, StoreError, Vault};

use crate::auth::{self, hash_secret, new_account_secret, valid_account_name};
use crate::service::toolsmith_store_now;
use crate::{ApiError, Service};

fn json_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid request JSON: {e}")))
}

/// Creates an account: its secret, shown once.
///
/// # Errors
///
/// 400 for a bad name, 409 when it exists.
pub async fn create_account(service: &Service, name: &str) -> Result<String, ApiError> {
    if !valid_account_name(name) {
        return Err(ApiError::bad_request(
            "account names are 1 to 64 of a-z, 0-9 and '-'",
        ));
    }
    let secret = new_account_secret(name).map_err(|e| ApiError::internal("secret", e))?;
    let account = Account {
        name: name.to_string(),
        secret_hash: hash_secret(&secret),
        created_at: toolsmith_store_now(),
    };
    match service.inner.store.create_account(&account).await {
        Ok(()) => Ok(secret),
        Err(StoreError::Exists(_)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("Account {name} exists"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// `POST /admin/accounts`.
pub(crate) async fn post_account(
    State(service): State<Service>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    auth::admin(service.inner.admin_hash.as_ref(), &headers)?;
    let body = json_body(&body)?;
    let name = body["name"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request("name must be a string"))?;
    let secret = create_account(&service, name).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({"name": name, "secret": secret})),
    )
        .into_response())
}

/// `GET /admin/accounts`.
pub(crate) async fn get_accounts(
    State(service): State<Service>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    auth::admin(service.inner.admin_hash.as_ref(), &headers)?;
    let accounts: Vec<Value> = service
        .inner
        .store
        .accounts()
        .await?
        .into_iter()
        .map(|a| json!({"name": a.name, "createdAt": a.created_at}))
        .collect();
    Ok(axum::Json(json!({"accounts": accounts})).into_response())
}

/// `PUT /admin/accounts/{account}/agents/{agentId}`.
pub(crate) async fn admin_put_agent(
    State(service): State<Service>,
    Path((account, agent_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    auth::admin(service.inner.admin_hash.as_ref(), &headers)?;
    put_agent(&service, &account, &agent_id, &body).await
}

/// `PUT /admin/accounts/{account}/credentials/{name}`.
pub(crate) async fn admin_put_credential(
    State(service): State<Service>,
    Path((account, name)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    auth::admin(service.inner.admin_hash.as_ref(), &headers)?;
    let body = json_body(&body)?;
    let value = body["value"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request("value must be a string"))?;
    let store = &service.inner.store;
    if store.account(&account).await?.is_none() {
        return Err(ApiError::not_found("Account not found"));
    }
    Vault::new(&**store, service.inner.key.clone())
        .put_credential(&account, &name, value)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `PUT /agents/{agentId}`: the caller's own agent.
pub(crate) async fn own_put_agent(
    State(service): State<Service>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    put_agent(&service, &account.name, &agent_id, &body).await
}

/// `GET /agents`: the caller's agents.
pub(crate) async fn own_agents(
    State(service): State<Service>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    let agents: Vec<Value> = service
        .inner
        .store
        .agents(&account.name)
        .await?
        .into_iter()
        .map(|a| json!({"agentId": a.id, "active": a.active, "updatedAt": a.updated_at}))
        .collect();
    Ok(axum::Json(json!({"agents": agents})).into_response())
}

/// `DELETE /agents/{agentId}`.
pub(crate) async fn own_delete_agent(
    State(service): State<Service>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let account = auth::caller(&service, &headers).await?;
    if service
        .inner
        .store
        .delete_agent(&account.name, &agent_id)
        .await?
    {
        // Not served a moment longer by this replica (others notice within their recheck).
        service.forget_agent(&account.name, &agent_id);
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(ApiError::agent_not_found())
    }
}

async fn put_agent(
    service: &Service,
    account: &str,
    agent_id: &str,
    body: &[u8],
) -> Result<Response, ApiError> {
    let config = json_body(body)?;
    service.put_agent(account, agent_id, &config).await?;
    Ok(axum::Json(json!({"agentId": agent_id, "account": account})).into_response())
}
