//! Runs watched as they happen: every run this process drives publishes its parts under its
//! thread's id, and the console's `GET /console/api/runs/{threadId}/live` subscribes.
//!
//! Contract:
//! - A part is serialised only when someone watches (a run nobody watches pays one map insert
//!   and one removal, at its start and end).
//! - A watcher sees the parts from the moment it subscribes; what came before is in the stored
//!   thread, which the page reads first and again when the stream ends.
//! - The stream ends when the run's driver ends — after the run's event status is stored — so
//!   a read after the end sees the run's final state.
//! - A watcher that falls more than [`CAPACITY`] parts behind gets `{"type":"console-lagged"}`
//!   and goes on from the newest parts (it reads the stored thread again); one that subscribes
//!   when nothing runs gets `{"type":"console-idle"}` and the end.
//! - Runs driven by another replica are not seen live here: their stored state is.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use tokio::sync::broadcast;
use toolsmith_core::RunPart;

use crate::sse;

/// How many parts a watcher may fall behind before it is told it lagged.
pub(crate) const CAPACITY: usize = 1024;

/// How often an idle stream says it is still there (proxies close silent connections).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The runs this process drives, by thread.
#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<String, broadcast::Sender<Arc<[u8]>>>>,
}

/// A run's place in [`LiveRuns`], held by its driver: dropped, the run's watchers' streams end.
pub(crate) struct LiveRun {
    runs: Arc<LiveRuns>,
    thread: String,
    sender: broadcast::Sender<Arc<[u8]>>,
}

impl LiveRuns {
    /// Registers the run of `thread` (a later run of the same thread replaces an earlier one's
    /// place: a thread runs one run at a time, and its watchers follow the newest).
    pub(crate) fn open(self: &Arc<Self>, thread: &str) -> LiveRun {
        let (sender, _) = broadcast::channel(CAPACITY);
        lock(&self.runs).insert(thread.to_string(), sender.clone());
        LiveRun {
            runs: self.clone(),
            thread: thread.to_string(),
            sender,
        }
    }

    /// Whether a run of `thread` is going on here.
    pub(crate) fn is_live(&self, thread: &str) -> bool {
        lock(&self.runs).contains_key(thread)
    }

    /// The parts of the run of `thread` from now on, if one is going on here.
    fn subscribe(&self, thread: &str) -> Option<broadcast::Receiver<Arc<[u8]>>> {
        lock(&self.runs)
            .get(thread)
            .map(broadcast::Sender::subscribe)
    }

    /// The event stream of the run of `thread` (see the [module docs](self)).
    pub(crate) fn stream(&self, thread: &str) -> Response {
        let Some(receiver) = self.subscribe(thread) else {
            let idle = sse::data(&serde_json::json!({"type": "console-idle"}));
            return sse::stream_response(Body::from(idle));
        };
        let keep_alive =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
        let body = futures::stream::unfold(
            (receiver, keep_alive),
            |(mut receiver, mut keep_alive)| async move {
                let bytes: Vec<u8> = tokio::select! {
                    item = receiver.recv() => match item {
                        Ok(bytes) => bytes.to_vec(),
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            sse::data(&serde_json::json!({"type": "console-lagged"}))
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                    _ = keep_alive.tick() => b": keep-alive\n\n".to_vec(),
                };
                Some((
                    Ok::<_, std::convert::Infallible>(bytes),
                    (receiver, keep_alive),
                ))
            },
        );
        sse::stream_response(Body::from_stream(body))
    }
}

impl LiveRun {
    /// Sends `part` to the run's watchers, if it has any.
    pub(crate) fn publish(&self, part: &RunPart) {
        if self.sender.receiver_count() > 0 {
            let _ = self.sender.send(sse::data(part).into());
        }
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        let mut runs = lock(&self.runs.runs);
        // Only this run's own place: a newer run of the thread may have replaced it.
        if runs
            .get(&self.thread)
            .is_some_and(|s| s.same_channel(&self.sender))
        {
            runs.remove(&self.thread);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn watchers_get_parts_from_subscribing_until_the_run_ends() {
        let runs = Arc::new(LiveRuns::default());
        assert!(!runs.is_live("t"));
        let run = runs.open("t");
        assert!(runs.is_live("t"));
        // Nobody watches: nothing is serialised or kept.
        run.publish(&RunPart::TextDelta {
            id: "0".into(),
            text: "unseen".into(),
        });
        let mut watcher = runs.subscribe("t").unwrap();
        run.publish(&RunPart::TextDelta {
            id: "0".into(),
            text: "seen".into(),
        });
        let first = watcher.recv().await.unwrap();
        assert_eq!(
            std::str::from_utf8(&first).unwrap(),
            "data: {\"type\":\"text-delta\",\"id\":\"0\",\"text\":\"seen\"}\n\n"
        );
        drop(run);
        assert!(!runs.is_live("t"));
        assert!(matches!(
            watcher.recv().await,
            Err(broadcast::error::RecvError::Closed)
        ));
    }

    #[tokio::test]
    async fn an_older_run_ending_leaves_the_newer_in_place() {
        let runs = Arc::new(LiveRuns::default());
        let old = runs.open("t");
        let new = runs.open("t");
        drop(old);
        assert!(runs.is_live("t"));
        drop(new);
        assert!(!runs.is_live("t"));
    }
}
