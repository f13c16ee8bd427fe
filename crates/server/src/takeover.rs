//! Taking over the runs of a replica that is gone.
//!
//! Every run of the service is a stored run: its thread records the replica that holds it (the
//! host, the process and its start time) and the replica's signs of life (a heartbeat every
//! third of the lease). Each replica sweeps the store for threads still `running` that no live
//! replica holds — their replica shut down and handed them back (taken at once), their holder
//! is a process of this host that no longer runs (killed, crashed: taken at once), or it has
//! shown no sign of life for the lease — and resumes each one where its journal says it
//! stopped: recorded results are reused, no side effect runs twice. Same-invocation async calls
//! that the run had not received are brought in first ([`LOST`] for those that will never
//! return). The claim is conditional, so of two replicas sweeping at once one takes a run. The
//! event the run belongs to (the thread's newest event still `processing`; for a continuation,
//! its first event) is settled when it ends, as if nothing had happened.
//!
//! The sweep runs when the service starts, every third of the lease, and at once when another
//! replica says it handed runs back (a PostgreSQL notification); it stops when this replica
//! shuts down. Threads that are not the service's (no `account:` tag: `toolsmith run --db` on
//! the same database) are left alone.

use std::time::Duration;

use toolsmith_core::Message;
use toolsmith_store::{
    AsyncSettlement, AsyncStatus, Batch, Thread, ThreadQuery, ThreadStatus, ThreadWrite,
};

use crate::Service;
use crate::async_tools::continuation::root_event;
use crate::async_tools::injected_row;
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
        // A replica shutting down takes nothing over: it hands its own runs back.
        if service.is_shutting_down() {
            break;
        }
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
        let key = runs::event_key(&account, &agent_id, &event.event_id);
        if !catch_up(service, &thread, &key).await {
            continue;
        }
        let status_event = root_event(&event.event_id).to_string();
        let request = RunRequest {
            account,
            agent_id,
            event_id: event.event_id,
            conversation_key,
            thread: thread.id.clone(),
            messages: Vec::new(),
            approvals: Vec::new(),
            tool_results: Vec::new(),
            path: RequestPath::Background,
            status_event,
        };
        match runs::claim_interrupted(service, &request).await {
            Ok(input) => {
                tracing::info!(
                    target: "toolsmith::server",
                    thread = %thread.id,
                    event = %request.event_id,
                    "taking over an interrupted run"
                );
                service.spawn(runs::drive(service.clone(), built, request, input, None));
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

/// Brings an interrupted run's thread up to date with its same-invocation calls before it is
/// resumed: those still `processing` ran in a replica that is gone and nothing will settle
/// them, so they are settled failed ([`LOST`]); then every settled call whose result the run
/// had not received (a replica handed the run back while its calls ran on, or died after
/// settling them) is appended to the thread as the injected message, oldest first, so that
/// the resumed run goes on with it. Whether to go on: false when another replica wrote the
/// thread meanwhile (it is taking the run over). `key` is the run's event key.
async fn catch_up(service: &Service, thread: &Thread, key: &str) -> bool {
    let store = service.store();
    let Ok(mut rows) = store.async_results_of(key).await else {
        return false;
    };
    rows.retain(|r| !r.external);
    let lost = AsyncSettlement::Failed(LOST.to_string());
    for row in rows
        .iter_mut()
        .filter(|r| r.status == AsyncStatus::Processing)
    {
        if let Ok(true) = store.settle_async_result(&row.result_id, &lost).await {
            row.status = AsyncStatus::Failed;
            row.error = Some(LOST.to_string());
        } else if let Ok(Some(now)) = store.async_result(&row.result_id).await {
            *row = now;
        }
    }
    if rows.is_empty() {
        return true;
    }
    let Ok(messages) = store.messages(&thread.id).await else {
        return false;
    };
    let texts: Vec<String> = messages.iter().map(Message::text).collect();
    rows.sort_by(|a, b| (a.created_at, &a.result_id).cmp(&(b.created_at, &b.result_id)));
    let unseen: Vec<Message> = rows
        .iter()
        .filter(|row| {
            let line = format!("resultId: {}\n", row.result_id);
            !texts.iter().any(|text| text.contains(&line))
        })
        .map(injected_row)
        .collect();
    if unseen.is_empty() {
        return true;
    }
    let count = messages.len() as u64;
    let write = ThreadWrite::new(
        &thread.id,
        thread.version,
        count,
        &unseen,
        ThreadStatus::Running,
    );
    match store.commit(Batch::new().write(write)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::info!(target: "toolsmith::server", %e, thread = %thread.id, "an interrupted run's thread changed: left to whoever changed it");
            false
        }
    }
}

/// Sweeps now, then every third of the lease and whenever a replica wakes the others, until
/// the service shuts down. Once an hour it also purges the events, async results and dispatch
/// groups past their expiry (7 days).
pub fn start_sweeper(service: Service) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = (service.options().lease / 3).max(Duration::from_millis(100));
        let stop = service.inner.handback.clone();
        let mut wakes = service.store().wakes();
        let mut purged: Option<std::time::Instant> = None;
        while !stop.is_cancelled() {
            if purged.is_none_or(|at| at.elapsed() >= PURGE_EVERY) {
                purge(&service).await;
                purged = Some(std::time::Instant::now());
            }
            sweep(&service).await;
            tokio::select! {
                () = stop.cancelled() => {}
                () = tokio::time::sleep(every) => {}
                // A wake-up, or several missed (lagged): look now. (The store keeps the
                // sender: the channel does not close while it lives.)
                woken = wakes.recv() => {
                    if matches!(woken, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                        tokio::time::sleep(every).await;
                    }
                }
            }
        }
    })
}

/// How often expired rows are purged.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// Purges the rows past their expiry.
async fn purge(service: &Service) {
    let now = crate::service::toolsmith_store_now();
    match service.store().purge_expired(now).await {
        Ok(0) => {}
        Ok(count) => tracing::info!(target: "toolsmith::server", count, "purged expired rows"),
        Err(e) => tracing::error!(target: "toolsmith::server", %e, "purging expired rows"),
    }
}
