//! Running prepared calls through the layers: panic isolation, the parallel window and the
//! exclusive barrier.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;
use tokio::task::JoinSet;
use toolsmith_core::layer::LayerStack;
use toolsmith_core::{
    CancellationToken, Concurrency, Disposition, RunScope, SharedTool, ToolContext, ToolError,
    ToolOutput,
};

use crate::CallOutcome;

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
}

impl CallRunner {
    pub(crate) fn job(&self, index: usize, id: &str, tool: SharedTool, input: Value) -> Job {
        let cx = ToolContext::new(
            self.scope.clone(),
            self.step,
            id.into(),
            tool.spec().shared_name().clone(),
            self.cancel.child_token(),
        );
        Job {
            index,
            tool,
            input,
            cx,
        }
    }

    /// Runs one call to completion. A panicking tool becomes the error `TOOL_PANICKED`; the run
    /// survives it.
    pub(crate) fn run(
        &self,
        job: Job,
    ) -> impl Future<Output = (usize, CallOutcome)> + Send + 'static {
        let stack = self.stack.clone();
        async move {
            let Job {
                index,
                tool,
                input,
                cx,
            } = job;
            let result = AssertUnwindSafe(stack.call(&tool, input, &cx))
                .catch_unwind()
                .await;
            let result = result.unwrap_or_else(|panic| {
                tracing::error!(
                    tool = cx.tool_name(),
                    panic = panic_message(&panic),
                    "tool panicked"
                );
                Err(ToolError::new(
                    "TOOL_PANICKED",
                    format!(
                        "Tool \"{}\" failed unexpectedly (it panicked).",
                        cx.tool_name()
                    ),
                )
                .with_operator_detail(panic_message(&panic)))
            });
            (index, outcome(result))
        }
    }

    /// Runs `jobs` at most `max` at a time, exclusive tools alone, calling `done` as each
    /// finishes. Stops starting new groups once `done` returns `false` (a fatal error); the
    /// calls already running finish first.
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
            loop {
                while running.len() < max {
                    let Some(job) = group.next() else { break };
                    running.spawn(self.run(job));
                }
                let Some(joined) = running.join_next().await else {
                    break;
                };
                // Tasks are only aborted when this future is dropped, and panics are caught
                // inside them, so a join error cannot happen here.
                if let Ok((index, result)) = joined {
                    go_on &= done(index, result);
                }
            }
        }
    }
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

fn panic_message(panic: &Box<dyn Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_string())
}
