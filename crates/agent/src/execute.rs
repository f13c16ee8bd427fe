//! Running prepared calls through the layers: panic isolation, the parallel window and the
//! exclusive barrier; each call's time, for the thread's record.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use tokio::task::JoinSet;
use toolsmith_core::layer::LayerStack;
use toolsmith_core::{
    CancellationToken, Concurrency, Disposition, RunScope, SharedTool, ToolContext, ToolError,
    ToolOutput,
};

use crate::CallOutcome;
use crate::journal::catch_panic;

/// What one call needs to run.
pub(crate) struct Job {
    pub(crate) index: usize,
    pub(crate) tool: SharedTool,
    pub(crate) input: Value,
    pub(crate) cx: ToolContext,
}

/// Builds call contexts and runs calls for one step.
pub(crate) struct CallRunner {
    pub(crate) stack: Arc<LayerStack>,
    pub(crate) scope: Arc<RunScope>,
    pub(crate) step: u32,
    pub(crate) cancel: CancellationToken,
    /// How long each call that ran to its end took, in ms, by call id.
    pub(crate) times: CallTimes,
}

/// The calls' times of one runner, in ms by call id, shared with the calls it runs.
pub(crate) type CallTimes = Arc<Mutex<BTreeMap<String, u64>>>;

impl CallRunner {
    pub(crate) fn job(&self, index: usize, id: &str, tool: SharedTool, input: Value) -> Job {
        let cx = ToolContext::new(
            self.scope.clone(),
            self.step,
            id.into(),
            tool.spec().shared_name().clone(),
            self.cancel.child_token(),
        )
        .with_defaults(&tool.meta().env)
        .with_tool_meta(tool.meta());
        Job {
            index,
            tool,
            input,
            cx,
        }
    }

    /// Runs one call to completion through the stack (which records it in the run's log, if it
    /// has one). A panicking tool becomes the error `TOOL_PANICKED`; the run survives it.
    ///
    /// The call takes its number of the run's sequence ([`ToolContext::seq`]) here, when the
    /// future is made rather than when it is first polled: calls are started in order, and
    /// parallel ones are polled in any order.
    pub(crate) fn run(
        &self,
        job: Job,
    ) -> impl Future<Output = (usize, CallOutcome)> + Send + 'static {
        let stack = self.stack.clone();
        let Job {
            index,
            tool,
            input,
            cx,
        } = job;
        let cx = cx.numbered();
        let times = self.times.clone();
        async move {
            let started = Instant::now();
            let outcome = execute(&stack, &tool, input, &cx).await;
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            times
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(cx.tool_call_id().to_string(), ms);
            (index, outcome)
        }
    }

    /// The times of the calls that ran to their end since the last take (the record keeps
    /// them: taking rather than copying them spares a map and its keys per step).
    pub(crate) fn take_times(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.times.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Runs `jobs` at most `max` at a time, exclusive tools alone, calling `done` as each
    /// finishes. Stops starting new calls once `done` returns `false` (a fatal error); the
    /// calls already running finish first. On cancellation it reports the calls that already
    /// finished and aborts the rest.
    pub(crate) async fn run_parallel(
        &self,
        jobs: Vec<Job>,
        max: usize,
        done: &mut (dyn FnMut(usize, CallOutcome) -> bool + Send),
    ) {
        let max = max.max(1);
        let mut jobs = jobs.into_iter().peekable();
        let mut go_on = true;
        while go_on && jobs.peek().is_some() {
            // The next group: one exclusive call, or the shared calls up to the next exclusive one.
            let mut group = Vec::new();
            while let Some(job) = jobs
                .next_if(|j| group.is_empty() || j.tool.meta().concurrency == Concurrency::Shared)
            {
                let exclusive = job.tool.meta().concurrency == Concurrency::Exclusive;
                group.push(job);
                if exclusive {
                    break;
                }
            }
            let mut group = group.into_iter();
            let mut running = JoinSet::new();
            // The indexes of the calls in flight.
            let mut started = Vec::new();
            loop {
                // After a fatal error or cancellation no further call starts.
                while go_on && !self.cancel.is_cancelled() && running.len() < max {
                    let Some(job) = group.next() else { break };
                    started.push(job.index);
                    running.spawn(self.run(job));
                }
                let joined = tokio::select! {
                    biased;
                    joined = running.join_next() => joined,
                    () = self.cancel.cancelled() => {
                        // Calls that already finished keep their real results (they may have had
                        // side effects); the ones still running are aborted with the set, and
                        // said to be cut off rather than never run.
                        while let Some(Ok((index, result))) = running.try_join_next() {
                            started.retain(|&i| i != index);
                            done(index, result);
                        }
                        for index in started {
                            done(index, cancelled_in_flight());
                        }
                        return;
                    }
                };
                let Some(joined) = joined else {
                    break;
                };
                // Tasks are only aborted when this future is dropped, and panics are caught
                // inside them, so a join error cannot happen here.
                if let Ok((index, result)) = joined {
                    started.retain(|&i| i != index);
                    go_on &= done(index, result);
                }
            }
        }
    }
}

/// Runs one call through the layers, a panic (of the tool or of a layer) caught as the error
/// `TOOL_PANICKED`.
pub(crate) async fn execute(
    stack: &LayerStack,
    tool: &SharedTool,
    input: Value,
    cx: &ToolContext,
) -> CallOutcome {
    outcome(catch_panic(cx.tool_name(), stack.call(tool, input, cx)).await)
}

/// The outcome of a call the run's cancellation cut off while it ran.
pub(crate) fn cancelled_in_flight() -> CallOutcome {
    CallOutcome::Error(ToolError::new(
        "CANCELLED",
        "Tool call was cancelled before it finished; it may have partly run.",
    ))
}

/// Sorts a call's result into its outcome.
pub(crate) fn outcome(result: Result<ToolOutput, ToolError>) -> CallOutcome {
    match result {
        Ok(output) => CallOutcome::Output(output),
        Err(error) => match error.disposition() {
            Disposition::Pause(pause) => CallOutcome::Paused((**pause).clone()),
            _ => CallOutcome::Error(error),
        },
    }
}
