//! The continuation of a run whose external calls have all settled: it fires exactly once,
//! when the event's dispatch group is sealed and no call of it is still `processing`, as a new
//! run on the same conversation (event `<parentEventId>:async-tools`) whose messages are the
//! settled calls, oldest first, in the injected format.
//!
//! "Exactly once" is the store's: the continuation's event is inserted only if new
//! ([`ServiceStore::insert_event`](toolsmith_store::ServiceStore::insert_event)), so of two
//! completions settling the last calls at once (on one replica or two) one starts it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use toolsmith_store::AsyncStatus;

use super::{ASYNC_RESULT_TTL, injected_row};
use crate::Service;
use crate::runs::{self, RequestPath, RunRequest};
use crate::service::toolsmith_store_now;

/// The suffix of a continuation's event id.
pub const CONTINUATION_SUFFIX: &str = ":async-tools";

/// The event a chain of continuations started from (`e1` of `e1:async-tools:async-tools`):
/// the status the caller polls is its, whatever the chain.
pub(crate) fn root_event(event_id: &str) -> &str {
    event_id
        .split(CONTINUATION_SUFFIX)
        .next()
        .unwrap_or(event_id)
}

/// How many times a continuation tries to claim a conversation another run holds, a second
/// apart.
const CLAIM_ATTEMPTS: u32 = 120;

/// Where an event's external calls stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Readiness {
    /// Whether the group is sealed (the model pass that made the calls is over).
    pub(crate) sealed: bool,
    /// Calls still processing, plus ids of the group with no row; at least 1 while unsealed.
    pub(crate) pending: usize,
}

/// Seals the event's dispatch group if it has one: whether it had one.
pub(crate) async fn seal(service: &Service, key: &str) -> bool {
    let store = &service.inner.store;
    match store.group(key).await {
        Ok(Some(_)) => {
            let expires_at = toolsmith_store_now() + ASYNC_RESULT_TTL.as_millis() as u64;
            if let Err(e) = store.seal_group(key, expires_at).await {
                tracing::error!(target: "toolsmith::server", %e, "sealing a dispatch group");
            }
            true
        }
        Ok(None) => false,
        Err(e) => {
            tracing::error!(target: "toolsmith::server", %e, "reading a dispatch group");
            false
        }
    }
}

/// Where the event's external calls stand (`None` without a group).
pub(crate) async fn readiness(
    service: &Service,
    key: &str,
) -> Result<Option<Readiness>, toolsmith_store::StoreError> {
    let store = &service.inner.store;
    let Some(group) = store.group(key).await? else {
        return Ok(None);
    };
    let rows = store.async_results_of(key).await?;
    let found: Vec<_> = rows
        .iter()
        .filter(|r| group.result_ids.contains(&r.result_id))
        .collect();
    let processing = found
        .iter()
        .filter(|r| r.status == AsyncStatus::Processing)
        .count();
    let mut pending = processing + group.result_ids.len().saturating_sub(found.len());
    if !group.sealed {
        pending = pending.max(1);
    }
    Ok(Some(Readiness {
        sealed: group.sealed,
        pending,
    }))
}

/// Starts the event's continuation if it is ready and nobody started it: whether this call
/// did. (Boxed: a continuation's run may continue in turn, and the recursion needs a named
/// `Send` future.)
pub(crate) fn try_continue<'a>(
    service: &'a Service,
    key: &'a str,
) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
    Box::pin(continue_if_ready(service, key))
}

async fn continue_if_ready(service: &Service, key: &str) -> bool {
    match readiness(service, key).await {
        Ok(Some(Readiness {
            sealed: true,
            pending: 0,
        })) => {}
        Ok(_) => return false,
        Err(e) => {
            tracing::error!(target: "toolsmith::server", %e, "reading a dispatch group");
            return false;
        }
    }
    let mut parts = key.splitn(3, '/');
    let (Some(account), Some(agent_id), Some(parent)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let store = &service.inner.store;
    let Ok(Some(parent_event)) = store.event(account, agent_id, parent).await else {
        return false;
    };
    let Ok(built) = service.agent(account, agent_id).await else {
        return false;
    };
    let root = root_event(parent).to_string();
    let mut request = RunRequest {
        account: account.to_string(),
        agent_id: agent_id.to_string(),
        event_id: format!("{parent}{CONTINUATION_SUFFIX}"),
        conversation_key: parent_event.conversation_key,
        thread: parent_event.thread_id,
        messages: Vec::new(),
        approvals: Vec::new(),
        tool_results: Vec::new(),
        path: RequestPath::Background,
        status_event: root,
    };
    match store.insert_event(&request.new_event()).await {
        Ok(true) => {}
        Ok(false) => return false,
        Err(e) => {
            tracing::error!(target: "toolsmith::server", %e, "recording a continuation");
            return false;
        }
    }
    let rows = match store.async_results_of(key).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::error!(target: "toolsmith::server", %e, "reading settled async calls");
            return false;
        }
    };
    request.messages = rows
        .iter()
        .filter(|r| r.external)
        .map(injected_row)
        .collect();
    let service = service.clone();
    service.clone().spawn(async move {
        // The conversation may be held for a moment by the run that made the calls (ending)
        // or by a new request: wait for it.
        for attempt in 0..CLAIM_ATTEMPTS {
            match runs::claim_recorded(&service, &request).await {
                Ok(input) => {
                    runs::drive(service, built, request, input, None).await;
                    return;
                }
                Err(e) if e.status == axum::http::StatusCode::CONFLICT => {
                    if attempt + 1 < CLAIM_ATTEMPTS {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
                Err(e) => {
                    tracing::error!(target: "toolsmith::server", error = ?e.body, "starting a continuation");
                    return;
                }
            }
        }
        tracing::error!(
            target: "toolsmith::server",
            event = %request.event_id,
            "a continuation could not claim its conversation"
        );
    });
    true
}
