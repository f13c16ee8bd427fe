//! [`RunInput`]: what a run starts from.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::RunLog;
use serde_json::{Map, Value};
use toolsmith_core::{
    CancellationToken, Dependencies, Inbox, Message, ModelToolCall, SessionState,
    ToolApprovalResponse, ToolResultPart, VariableCell,
};

/// What a run starts from: the thread so far, and the run's context.
///
/// A prompt string is a one-message thread. Resuming a paused run is running again with the
/// stored thread plus the answers: approval answers in [`approvals`](Self::approvals), client
/// tools' results in [`tool_results`](Self::tool_results) (or appended as a tool message). Both
/// reach calls waiting inside a sub-agent too.
///
/// ```
/// use toolsmith_agent::RunInput;
/// use toolsmith_core::Message;
///
/// let input = RunInput::from("Hello")
///     .with_run_id("run-42")
///     .with_variable("BETA_TOOLS", "yes");
/// assert_eq!(input.messages, vec![Message::user("Hello")]);
/// ```
#[derive(Default)]
#[non_exhaustive]
pub struct RunInput {
    /// The thread so far. Tool calls without results are repaired before the first request.
    pub messages: Vec<Message>,
    /// The run's id; a fresh UUID when `None`.
    pub run_id: Option<String>,
    /// The stored thread's id, if any.
    pub thread_id: Option<String>,
    /// Metadata handed to every tool call.
    pub metadata: Map<String, Value>,
    /// Session state shared by the run's tool calls.
    pub state: SessionState,
    /// Typed dependencies handed to tools.
    pub deps: Option<Arc<Dependencies>>,
    /// Variables: flags for optional tools, values tools declare.
    pub variables: HashMap<String, String>,
    /// Answers to the approvals the thread waits for (resuming a paused run). An answer that
    /// matches no waiting approval fails the run before anything happens.
    pub approvals: Vec<ToolApprovalResponse>,
    /// Results of the client-tool calls the thread waits for, in this run or inside a paused
    /// sub-agent. A result for a call that waits nowhere fails the run before anything happens.
    pub tool_results: Vec<ToolResultPart>,
    /// Calls the run makes before its first step, as a turn of their own (with those its
    /// tools' [`StartCalls`](toolsmith_core::StartCalls) hooks ask for): an operator's action,
    /// such as booting a deferred sub-agent once its variables are provided. Prepared,
    /// approved, journaled and saved as a step's calls.
    pub start_calls: Vec<ModelToolCall>,
    /// The parent run's variables (a sub-agent's run), secret kinds included; its later
    /// `set_variable`s reach this run too.
    pub(crate) inherited: Option<VariableCell>,
    /// Prompt-level values (a sub-agent's or prompt tool's own): the lowest precedence.
    pub(crate) defaults: HashMap<String, String>,
    /// The parent run's inbox (a sub-agent's run), for `notify_parent`.
    pub(crate) parent: Option<Inbox>,
    /// Cancels the run from outside.
    pub cancellation: Option<CancellationToken>,
    /// Hands the run back from outside: when it fires, the run makes no further model call
    /// (one streaming is dropped), lets the calls already running finish and reach its log,
    /// and ends with [`RunErrorKind::HandedBack`](crate::RunErrorKind::HandedBack), its
    /// thread saved as still running and released, for any process to resume at once (a
    /// service shutting down).
    pub handback: Option<CancellationToken>,
    /// Where the run records itself as it goes ([`RunLog`]): with one, a crash loses no result
    /// and runs no side effect twice.
    pub log: Option<Arc<dyn RunLog>>,
}

impl RunInput {
    /// A run over `messages`.
    pub fn new(messages: Vec<Message>) -> Self {
        RunInput {
            messages,
            ..Default::default()
        }
    }

    /// Records the run in `log` as it goes.
    pub fn with_log(mut self, log: Arc<dyn RunLog>) -> Self {
        self.log = Some(log);
        self
    }

    /// Sets the run id.
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Sets the thread id.
    pub fn with_thread_id(mut self, thread_id: impl Into<String>) -> Self {
        self.thread_id = Some(thread_id.into());
        self
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets the session state.
    pub fn with_state(mut self, state: SessionState) -> Self {
        self.state = state;
        self
    }

    /// Sets the dependencies.
    pub fn with_deps(mut self, deps: Dependencies) -> Self {
        self.deps = Some(Arc::new(deps));
        self
    }

    /// Sets a variable.
    pub fn with_variable(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.variables.insert(name.into(), value.into());
        self
    }

    /// Adds an answer to a waiting approval.
    pub fn with_approval(mut self, answer: ToolApprovalResponse) -> Self {
        self.approvals.push(answer);
        self
    }

    /// Adds a client tool's result (resuming a paused run).
    pub fn with_tool_result(mut self, result: ToolResultPart) -> Self {
        self.tool_results.push(result);
        self
    }

    /// Adds a call the run makes before its first step ([`start_calls`](Self::start_calls)).
    pub fn with_start_call(mut self, call: ModelToolCall) -> Self {
        self.start_calls.push(call);
        self
    }

    /// Lets `token` cancel the run.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Lets `token` hand the run back ([`handback`](Self::handback)).
    pub fn with_handback(mut self, token: CancellationToken) -> Self {
        self.handback = Some(token);
        self
    }

    /// Whether a flag variable is on: `true`, `1` or `yes`, case-insensitive.
    pub fn flag(&self, name: &str) -> bool {
        self.variables.get(name).is_some_and(|v| flag_is_on(v))
    }
}

/// Whether a flag's value means on: `true`, `1` or `yes`, case-insensitive, spaces ignored.
/// Variable values are never printed: any of them may be a secret.
impl fmt::Debug for RunInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.variables.keys().collect();
        names.sort();
        f.debug_struct("RunInput")
            .field("messages", &self.messages)
            .field("run_id", &self.run_id)
            .field("thread_id", &self.thread_id)
            .field("metadata", &self.metadata)
            .field("variables", &names)
            .field("approvals", &self.approvals)
            .field("tool_results", &self.tool_results)
            .finish_non_exhaustive()
    }
}

pub(crate) fn flag_is_on(value: &str) -> bool {
    ["true", "1", "yes"]
        .iter()
        .any(|on| value.trim().eq_ignore_ascii_case(on))
}

impl From<&str> for RunInput {
    fn from(prompt: &str) -> Self {
        RunInput::new(vec![Message::user(prompt)])
    }
}

impl From<String> for RunInput {
    fn from(prompt: String) -> Self {
        RunInput::new(vec![Message::user(prompt)])
    }
}

impl From<Vec<Message>> for RunInput {
    fn from(messages: Vec<Message>) -> Self {
        RunInput::new(messages)
    }
}
