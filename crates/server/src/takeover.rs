//! Taking over the runs of a replica that is gone.
//!
//! Every run of the service is a stored run: its thread records the replica that holds it (the
//! host, the process and its start time) and the replica's signs of life (a heartbeat every
//! third of the lease). Each replica sweeps the store for threads still `running` that no live
//! replica holds — their holder is a process of this host that no longer runs (killed, crashed:
//! taken at once), or it has shown no sign of life for the lease — and resumes each one where
//! its journal says it stopped: recorded results are reused, no side effect runs twice. The
//! claim is conditional, so of two replicas sweeping at once one takes a run. The event the run
//! belongs to (the thread's newest event still `processing`; for a continuation, its first
//! event) is settled when it ends, as if nothing had happened.
//!
//! The sweep runs when the service starts and then every third of the lease. Threads that are
//! not the service's (no `account:` tag: `toolsmith run --db` on the same database) are left
//! alone.

use std::time::Duration;

use toolsmith_store::{AsyncSettlement, AsyncStatus, ThreadQuery, ThreadStatus};

use crate::Service;
use crate::async_tools::continuation::root_event;
use crate::runs::{self, Owner, RequestPath, RunRequest};

/// How many running threads one sweep looks at.
const SWEEP_LIMIT: usize = 500;

/// Resumes every interrupted run this replica can claim: how many it resumed.
pub async fn sweep(service: &Service) -> usize {
    let store = service.store().clone();
    let lease = service.options().lease;
    let query = ThreadQuery {
        status: Some(ThreadStatus::Running),
        limit: Some(SWEEP_LIMIT),
        ..ThreadQuery::default()
    };
    let threads = match store.threads(&query).await {
        Ok(threads) => threads,
        Err(e) => {
            tracing::error!(target: "toolsmith::server", %e, "listing running threads");
            return 0;
        }
    };
    let mut resumed = 0;
    for thread in threads {
        if thread.held_within(lease).is_some() {
            continue;
        }
        let Some(Owner {
            account,
            agent_id,
            conversation_key,
        }) = Owner::of(&thread)
        else {
            continue;
        };
        let event = match store.processing_events(&thread.id).await {
            Ok(events) => events.into_iter().last(),
            Err(e) => {
                tracing::error!(target: "toolsmith::server", %e, "reading a thread's events");
                continue;
            }
        };
        let Some(event) = event else {
            continue;
        };
        let Ok(built) = service.agent(&account, &agent_id).await else {
            continue;
        };
        let status_event = root_event(&event.event_id).to_string();
        let request = RunRequest {
            account,
            agent_id,
            event_id: event.event_id,
            conversation_key,
            messages: Vec::new(),
            approvals: Vec::new(),
            tool_results: Vec::new(),
            path: RequestPath::Background,
            status_event,
        };
        match runs::claim_interrupted(service, &request).await {
            Ok(input) => {
                lost_calls(service, &request).await;
                tracing::info!(
                    target: "toolsmith::server",
                    thread = %thread.id,
                    event = %request.event_id,
                    "taking over an interrupted run"
                );
                tokio::spawn(runs::drive(service.clone(), built, request, input, None));
                resumed += 1;
            }
            // Another replica took it, or its holder came back to life.
            Err(_) => continue,
        }
    }
    resumed
}

/// The error of a same-invocation call whose replica stopped while it ran.
pub const LOST: &str = "Async tool call was lost: the replica running it stopped.";

/// Settles as failed ([`LOST`]) the same-invocation calls of the event that were running in
/// the replica that is gone: nothing will settle them, and `async_status` must not say
/// `processing` for ever.
async fn lost_calls(service: &Service, request: &RunRequest) {
    let store = service.store();
    let key = runs::event_key(&request.account, &request.agent_id, &request.event_id);
    let Ok(rows) = store.async_results_of(&key).await else {
        return;
    };
    let lost = AsyncSettlement::Failed(LOST.to_string());
    for row in rows
        .iter()
        .filter(|r| !r.external && r.status == AsyncStatus::Processing)
    {
        let _ = store.settle_async_result(&row.result_id, &lost).await;
    }
}

/// Sweeps now, then every third of the lease, for as long as the service runs.
pub fn start_sweeper(service: Service) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = (service.options().lease / 3).max(Duration::from_millis(100));
        loop {
            sweep(&service).await;
            tokio::time::sleep(every).await;
        }
    })
}
