//! Helpers shared by the agent loop's integration tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Map, Value};
use toolsmith_agent::{
    Agent, AgentBuilder, ApprovalKey, Attachments, RunError, RunInput, RunOutput,
};
use toolsmith_core::{
    Dependencies, Message, ModelOutput, ModelRequest, Role, RunPart, Tool, ToolError, ToolMeta,
    from_fn,
};
use toolsmith_providers::{ScriptedCall, ScriptedModel, Turn};

/// Runs `agent` on "go" in thread `thread` as run `run`, with the attachment store `store` as a
/// dependency: the parent whose files a sub-agent or prompt tool takes.
pub async fn run_with_attachments(
    agent: &Agent,
    store: &Attachments,
    thread: &str,
    run: &str,
) -> RunOutput {
    let mut deps = Dependencies::new();
    deps.insert(store.clone());
    let input = RunInput::from("go")
        .with_thread_id(thread)
        .with_run_id(run)
        .with_deps(deps);
    agent.run(input).await.unwrap()
}

/// Arguments of tools that accept any object.
pub type Args = Map<String, Value>;

/// An ordered event log shared by tools and the test.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Counts calls in flight and remembers the most seen at once.
#[derive(Default)]
pub struct Flight {
    now: AtomicUsize,
    high: AtomicUsize,
}

impl Flight {
    pub fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.high.fetch_max(now, Ordering::SeqCst);
    }

    pub fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn high_water(&self) -> usize {
        self.high.load(Ordering::SeqCst)
    }
}

/// A shareable run counter.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn hit(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A tool that answers `<name> ok` and counts its runs.
pub fn ok_tool(name: &'static str, runs: Counter) -> impl Tool {
    from_fn(name, format!("The {name} tool."), move |_: Args, _cx| {
        let runs = runs.clone();
        async move {
            runs.hit();
            Ok::<_, ToolError>(format!("{name} ok"))
        }
    })
}

/// A tool that logs `start <name>` / `end <name>`, tracks how many calls are in flight, sleeps
/// `delay_ms` and answers `<name> done`.
pub fn timed_tool(
    name: &'static str,
    delay_ms: u64,
    meta: ToolMeta,
    log: Log,
    flight: Arc<Flight>,
) -> impl Tool {
    from_fn(name, format!("The {name} tool."), move |_: Args, _cx| {
        let (log, flight) = (log.clone(), flight.clone());
        async move {
            log.push(format!("start {name}"));
            flight.enter();
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            flight.leave();
            log.push(format!("end {name}"));
            Ok::<_, ToolError>(format!("{name} done"))
        }
    })
    .with_meta(meta)
}

/// A recording scripted model, shared so that the test can read its requests.
pub fn recording(turns: impl IntoIterator<Item = Turn>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(turns).recording())
}

/// An agent builder on a shared scripted model.
pub fn builder(model: &Arc<ScriptedModel>) -> AgentBuilder {
    Agent::builder_shared(model.clone())
}

/// A step whose only call is `name` with `input`, as call `id`.
pub fn call(id: &str, name: &str, input: Value) -> Turn {
    Turn::tool_calls([ScriptedCall::new(name, input).with_id(id)])
}

/// The approval key of the tests that pause for approval and resume.
pub fn key() -> ApprovalKey {
    ApprovalKey::new(b"a stored secret of 32 bytes....!")
}

/// `messages` as a store gives them back: through their JSON.
pub fn stored(messages: &[Message]) -> Vec<Message> {
    serde_json::from_str(&serde_json::to_string(messages).unwrap()).unwrap()
}

/// `messages` without their step metadata ([`Message::meta`]): what a thread says, for
/// comparing with messages written by hand.
pub fn plain(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| Message {
            meta: None,
            ..m.clone()
        })
        .collect()
}

/// Streams a run to its end: every part, then the output.
pub async fn stream_run(
    agent: &Agent,
    input: impl Into<RunInput>,
) -> (Vec<RunPart>, Result<RunOutput, RunError>) {
    let mut stream = agent.stream(input);
    let mut parts = Vec::new();
    while let Some(part) = stream.next().await {
        parts.push(part);
    }
    (parts, stream.output().await)
}

/// The `type` of each part, as serialised.
pub fn part_types(parts: &[RunPart]) -> Vec<String> {
    parts
        .iter()
        .map(|p| {
            serde_json::to_value(p).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Asserts that every local tool call of every assistant message is answered exactly once, in
/// the tool message right after it, in call order; that no tool message stands anywhere else;
/// and that no result answers a call that does not exist. Calls in `pending` must have no result.
pub fn assert_thread_valid(messages: &[Message], pending: &[&str]) {
    for (i, message) in messages.iter().enumerate() {
        match message.role {
            Role::Assistant => {
                let expected: Vec<&str> = message
                    .tool_calls()
                    .filter(|c| !c.provider_executed)
                    .map(|c| c.tool_call_id.as_str())
                    .filter(|id| !pending.contains(id))
                    .collect();
                let answered: Vec<&str> = match messages.get(i + 1) {
                    Some(next) if next.role == Role::Tool => next
                        .tool_results_iter()
                        .map(|r| r.tool_call_id.as_str())
                        .collect(),
                    _ => Vec::new(),
                };
                assert_eq!(
                    answered, expected,
                    "the results after assistant message {i} must answer its calls in order"
                );
            }
            Role::Tool => assert!(
                i > 0 && messages[i - 1].role == Role::Assistant,
                "tool message {i} must directly follow an assistant message"
            ),
            _ => {}
        }
    }
}

/// Every tool result of a thread, in order: `(call id, output)`.
pub fn results(messages: &[Message]) -> Vec<(String, ModelOutput)> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.tool_results_iter())
        .map(|r| (r.tool_call_id.clone(), r.output.clone()))
        .collect()
}

/// The result of one call in a thread.
pub fn result_of(messages: &[Message], id: &str) -> ModelOutput {
    let found: Vec<ModelOutput> = results(messages)
        .into_iter()
        .filter(|(i, _)| i == id)
        .map(|(_, o)| o)
        .collect();
    assert_eq!(found.len(), 1, "call {id} must have exactly one result");
    found.into_iter().next().unwrap()
}

/// The results in the last tool message of a request.
pub fn request_results(request: &ModelRequest) -> Vec<(String, ModelOutput)> {
    results(&request.messages)
}

/// The names of the tools a request declares, in order.
pub fn declared(request: &ModelRequest) -> Vec<String> {
    request
        .tools
        .entries()
        .iter()
        .map(|d| d.name.to_string())
        .collect()
}

/// A text result.
pub fn text(value: &str) -> ModelOutput {
    ModelOutput::text(value)
}

/// An error-text result.
pub fn error_text(value: &str) -> ModelOutput {
    ModelOutput::error_text(value)
}

/// A [`Logs::capture`] in progress: it ends when this drops.
pub struct Capture {
    _default: tracing::subscriber::DefaultGuard,
    _second: tracing::Dispatch,
}

/// What a test's tracing subscriber logged.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    /// Logs everything (every level, no colours) into a new `Logs` until the guard drops, on
    /// this thread (a `#[tokio::test]` runs its runs on it).
    ///
    /// Safe beside other tests of the process. tracing caches, process-wide, whether each log
    /// site is enabled, worked out by the first thread to reach it; while exactly one dispatcher
    /// exists, from that thread's own default alone (tokio-rs/tracing#3611), so another test's
    /// thread, which has no subscriber, would disable the site for this capture too. The guard
    /// therefore also keeps a second dispatcher, one that enables nothing: with two, a new site
    /// asks every live dispatcher, this capture's included.
    pub fn capture() -> (Logs, Capture) {
        let second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
        let logs = Logs::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let default = tracing::subscriber::set_default(subscriber);
        // Log sites another thread registered while this subscriber was being set up may have
        // cached "disabled": have every site ask again, this subscriber included.
        tracing::callsite::rebuild_interest_cache();
        (
            logs,
            Capture {
                _default: default,
                _second: second,
            },
        )
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
