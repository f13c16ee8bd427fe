//! [`RunStream`]: a run's parts as they happen.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::task::JoinHandle;
use toolsmith_core::{CancellationToken, ErrorInfo, EventSink, RunPart};

use crate::agent::AgentInner;
use crate::run::Run;
use crate::{RunError, RunErrorKind, RunInput, RunOutput};

/// The parts of a run as they happen; the run's output at the end.
///
/// The run executes on its own task. Dropping the stream cancels it.
///
/// ```
/// use futures::StreamExt;
/// use toolsmith_agent::Agent;
/// use toolsmith_core::RunPart;
/// use toolsmith_providers::{ScriptedModel, Turn};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let agent = Agent::builder(ScriptedModel::new([Turn::text("Hi!")])).build();
/// let mut stream = agent.stream("Hello");
/// let mut text = String::new();
/// while let Some(part) = stream.next().await {
///     if let RunPart::TextDelta { text: delta, .. } = part {
///         text.push_str(&delta);
///     }
/// }
/// assert_eq!(text, "Hi!");
/// assert_eq!(stream.output().await.unwrap().text, "Hi!");
/// # });
/// ```
pub struct RunStream {
    parts: UnboundedReceiver<RunPart>,
    task: Option<JoinHandle<Result<RunOutput, RunError>>>,
    cancel: CancellationToken,
}

impl RunStream {
    pub(crate) fn spawn(agent: Arc<AgentInner>, mut input: RunInput) -> Self {
        let (sender, parts) = unbounded_channel();
        let cancel = input
            .cancellation
            .get_or_insert_with(CancellationToken::default)
            .clone();
        let task = tokio::spawn(async move {
            let events = EventSink::new(sender);
            match Run::new(agent, input, events.clone()).await {
                Ok(run) => run.drive().await,
                Err(error) => {
                    // The same shape as any failed run: `start`, then `error`.
                    events.send(RunPart::Start {
                        run_id: error.output.run_id.clone(),
                    });
                    events.send(RunPart::Error {
                        error: ErrorInfo::new(error.code(), error.to_string()),
                    });
                    Err(error)
                }
            }
        });
        RunStream {
            parts,
            task: Some(task),
            cancel,
        }
    }

    /// Cancels the run: it stops at the next opportunity with an `abort` part.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for the run to end and returns its output. Parts not yet read are discarded.
    ///
    /// # Errors
    ///
    /// The run's error.
    pub async fn output(mut self) -> Result<RunOutput, RunError> {
        let task = self.task.take().expect("the task is taken only here");
        match task.await {
            Ok(result) => result,
            Err(e) => Err(RunError {
                kind: RunErrorKind::Internal(format!("the run's task failed: {e}")),
                output: Box::default(),
            }),
        }
    }
}

impl Stream for RunStream {
    type Item = RunPart;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunPart>> {
        self.parts.poll_recv(cx)
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        if self.task.as_ref().is_some_and(|t| !t.is_finished()) {
            self.cancel.cancel();
        }
    }
}
