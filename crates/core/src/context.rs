//! [`ToolContext`]: what a tool call knows about the run it belongs to.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::smithers_key::{smithers_context_key, smithers_seq_start};
use crate::{
    AsyncCall, Inbox, NestedResume, RunPart, ToolMeta, Usage, VariableCell, VariableKind, Variables,
};

/// What every call of one run shares: ids, metadata, session state, dependencies, the event sink.
///
/// Built once per run by the agent and shared by reference count; a [`ToolContext`] adds the
/// per-call facts.
#[derive(Debug, Clone, Default)]
pub struct RunScope {
    /// The run's id.
    pub run_id: Arc<str>,
    /// The thread the run belongs to, if it is stored.
    pub thread_id: Option<Arc<str>>,
    /// Arbitrary metadata from the caller.
    pub metadata: Arc<Map<String, Value>>,
    /// A mutable key-value bag shared by the run's calls.
    pub state: SessionState,
    /// Typed dependencies (database pools, clients) from the caller.
    pub deps: Arc<Dependencies>,
    /// Where tools send their own events.
    pub events: EventSink,
    /// The run's variables, resolved; secrets among them only for the tools' code. Tools may
    /// change them ([`ToolContext::set_variable`]).
    pub variables: VariableCell,
    /// Tokens spent by the calls' own model runs (sub-agents), folded into the run's usage.
    pub usage: UsageReports,
    /// Results that arrive after their call returned (non-blocking sub-agents).
    pub inbox: Inbox,
    /// For a sub-agent's run: its parent run's inbox, for
    /// [`ToolContext::notify_parent`].
    pub parent: Option<Inbox>,
    /// How many numbers of the run's call sequence have been taken
    /// ([`ToolContext::next_tool_seq`]); shared by the run's calls.
    pub tool_seq: Arc<AtomicU64>,
}

impl RunScope {
    /// A scope with only a run id.
    pub fn new(run_id: impl Into<Arc<str>>) -> Self {
        RunScope {
            run_id: run_id.into(),
            ..Default::default()
        }
    }
}

/// The per-call context handed to [`Tool::call`](crate::Tool::call).
///
/// Cloning is cheap: run-wide data is shared.
///
/// ```
/// use toolsmith_core::ToolContext;
///
/// let cx = ToolContext::for_test("add");
/// cx.state().set("visits", 1.into());
/// assert_eq!(cx.state().get("visits"), Some(1.into()));
/// assert_eq!(cx.tool_name(), "add");
/// ```
#[derive(Clone)]
pub struct ToolContext {
    scope: Arc<RunScope>,
    step: u32,
    tool_call_id: Arc<str>,
    tool_name: Arc<str>,
    idempotency_key: Arc<str>,
    /// The tool's flags ([`ToolContext::with_tool_meta`]), copied: two bools keep the per-call
    /// context cheap to build.
    side_effect: bool,
    idempotent: bool,
    /// The call's number in the run's sequence; 0 until numbered.
    seq: u64,
    cancel: CancellationToken,
    resume: Option<Arc<NestedResume>>,
    /// For a tool run asynchronously by the service: its call's async side.
    async_call: Option<Arc<AsyncCall>>,
    /// The variables as they were when the call started.
    variables: Arc<Variables>,
}

impl ToolContext {
    /// The context of one call. Its idempotency key is the run's Smithers key when the run
    /// carries Smithers context, else `<run id>:<tool call id>` (see
    /// [`idempotency_key`](Self::idempotency_key)). The tool's flags are Smithers' defaults (no
    /// side effect, idempotent) until [`with_tool_meta`](Self::with_tool_meta); the call is not
    /// numbered ([`seq`](Self::seq) 0) until [`numbered`](Self::numbered).
    pub fn new(
        scope: Arc<RunScope>,
        step: u32,
        tool_call_id: Arc<str>,
        tool_name: Arc<str>,
        cancel: CancellationToken,
    ) -> Self {
        let idempotency_key = match smithers_context_key(&scope.run_id, &scope.metadata) {
            Some(key) => key.into(),
            None => format!("{}:{}", scope.run_id, tool_call_id).into(),
        };
        let variables = scope.variables.current();
        ToolContext {
            scope,
            step,
            tool_call_id,
            tool_name,
            idempotency_key,
            side_effect: false,
            idempotent: true,
            seq: 0,
            cancel,
            resume: None,
            async_call: None,
            variables,
        }
    }

    /// A context for unit-testing a tool outside a run: run id `test-run`, call id `call-1`.
    pub fn for_test(tool_name: &str) -> Self {
        Self::new(
            Arc::new(RunScope::new("test-run")),
            0,
            "call-1".into(),
            tool_name.into(),
            CancellationToken::new(),
        )
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.scope.run_id
    }

    /// The thread's id, if the run is stored.
    pub fn thread_id(&self) -> Option<&str> {
        self.scope.thread_id.as_deref()
    }

    /// The step this call belongs to (0-based).
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The provider's id for this call.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The tool's name as the model called it.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The key to pass to external services that deduplicate requests; the same every time
    /// this call is attempted (a retry after a crash reuses it).
    ///
    /// - Without Smithers context: `<run id>:<tool call id>`, different for every other call.
    /// - When the run carries Smithers context (its [`metadata`](Self::metadata) has a truthy
    ///   `nodeId`, or a non-empty `idempotencyKey` string): the Smithers key
    ///   ([`smithers_idempotency_key`](Self::smithers_idempotency_key)), which is the same for
    ///   **every call of one task iteration**. A tool that makes two different effects in one
    ///   iteration must tell them apart itself (for instance by adding
    ///   [`tool_call_id`](Self::tool_call_id)), or the service merges them.
    ///
    /// The run's journal records this key for a tool that declares it reads it
    /// ([`ToolMeta::accepts_idempotency_key`]); its idempotency ledger keys each call by
    /// `<run id>:<tool call id>` whatever this key is, so calls sharing a Smithers key still
    /// both run and are both journaled.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::{Map, json};
    /// use toolsmith_core::{RunScope, ToolContext};
    ///
    /// let cx = |metadata: serde_json::Value, call: &str| {
    ///     let metadata: Map<String, serde_json::Value> = serde_json::from_value(metadata).unwrap();
    ///     let scope = RunScope { metadata: Arc::new(metadata), ..RunScope::new("run-1") };
    ///     ToolContext::new(Arc::new(scope), 0, call.into(), "pay".into(), Default::default())
    /// };
    /// assert_eq!(cx(json!({}), "call_1").idempotency_key(), "run-1:call_1");
    /// let smithers = json!({"nodeId": "review", "iteration": 2});
    /// assert_eq!(cx(smithers.clone(), "call_1").idempotency_key(), "smithers:run-1:review:2");
    /// assert_eq!(cx(smithers, "call_2").idempotency_key(), "smithers:run-1:review:2");
    /// ```
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// Replaces the idempotency key (for example with the Smithers form
    /// `smithers:<run>:<node>:<iteration>`).
    pub fn with_idempotency_key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.idempotency_key = key.into();
        self
    }

    /// The Smithers-compatible key (`getToolIdempotencyKey`): the caller's own key when its
    /// [`metadata`](Self::metadata) has an `idempotencyKey` that is a non-empty string (as a
    /// Smithers context that carries one); else `smithers:<run id>:<nodeId>:<iteration>` from
    /// the run's id and the metadata's `nodeId` and `iteration`, with Smithers' rules
    /// ([`smithers_idempotency_key`](crate::smithers_idempotency_key)): `None` without a node
    /// id, that is without Smithers context. When it is `Some`, it is the call's
    /// [`idempotency_key`](Self::idempotency_key) (unless a layer replaced that).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::{Map, json};
    /// use toolsmith_core::{RunScope, ToolContext};
    ///
    /// let cx = |metadata: serde_json::Value| {
    ///     let metadata: Map<String, serde_json::Value> = serde_json::from_value(metadata).unwrap();
    ///     let scope = RunScope { metadata: Arc::new(metadata), ..RunScope::new("run-1") };
    ///     ToolContext::new(Arc::new(scope), 0, "call_1".into(), "pay".into(), Default::default())
    /// };
    /// let key = |m| cx(m).smithers_idempotency_key();
    /// assert_eq!(key(json!({"nodeId": "review", "iteration": 2})).as_deref(), Some("smithers:run-1:review:2"));
    /// // The caller's own non-empty key wins (rule 1); an empty one does not.
    /// assert_eq!(key(json!({"nodeId": "review", "idempotencyKey": "mine"})).as_deref(), Some("mine"));
    /// assert_eq!(key(json!({"nodeId": "review", "idempotencyKey": ""})).as_deref(), Some("smithers:run-1:review:0"));
    /// assert_eq!(key(json!({"idempotencyKey": "mine"})).as_deref(), Some("mine"));
    /// assert_eq!(key(json!({})), None);
    /// ```
    pub fn smithers_idempotency_key(&self) -> Option<String> {
        smithers_context_key(self.run_id(), self.metadata())
    }

    /// Whether the tool changes state outside the run ([`ToolMeta::side_effect`]; Smithers'
    /// `ctx.sideEffect`). `false` until [`with_tool_meta`](Self::with_tool_meta).
    pub fn side_effect(&self) -> bool {
        self.side_effect
    }

    /// Whether running the tool twice with the same input is safe
    /// ([`ToolMeta::is_idempotent`], which defaults to `!side_effect`; Smithers'
    /// `ctx.idempotent`). `true` until [`with_tool_meta`](Self::with_tool_meta).
    pub fn idempotent(&self) -> bool {
        self.idempotent
    }

    /// Copies the tool's flags ([`side_effect`](Self::side_effect),
    /// [`idempotent`](Self::idempotent)) from its metadata. The agent does it for every call.
    ///
    /// ```
    /// use toolsmith_core::{ToolContext, ToolMeta};
    ///
    /// let cx = ToolContext::for_test("pay");
    /// assert!(!cx.side_effect() && cx.idempotent(), "Smithers' defaults");
    /// let cx = cx.with_tool_meta(&ToolMeta::new().side_effect(true));
    /// assert!(cx.side_effect() && !cx.idempotent(), "idempotent defaults to !side_effect");
    /// let cx = cx.with_tool_meta(&ToolMeta::new().side_effect(true).idempotent(true));
    /// assert!(cx.idempotent());
    /// ```
    pub fn with_tool_meta(mut self, meta: &ToolMeta) -> Self {
        self.side_effect = meta.side_effect;
        self.idempotent = meta.is_idempotent();
        self
    }

    /// This call's number in the run's call sequence (Smithers' `seq`), from 1; 0 for a context
    /// that was never [`numbered`](Self::numbered) (one made outside a run's execution of a
    /// call, such as [`for_test`](Self::for_test)).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Takes the next number of the run's call sequence and returns it (Smithers'
    /// `nextToolSeq(ctx)`).
    ///
    /// The sequence is the run's, shared by all its calls ([`RunScope::tool_seq`]). It counts
    /// on from the run's [`metadata`](Self::metadata) `seq` when that is a non-negative whole
    /// number (`seq: 4` makes the first number 5), and from 0 otherwise: missing, `null` or
    /// `false` restart it at 1. The agent takes one number for each call as the call starts
    /// executing, in the order calls start (a step's calls in the model's order), including a
    /// call whose recorded outcome the run's journal replays; calls that never start (denied,
    /// paused for approval, invalid) take none. A tool may take further numbers for records of
    /// its own; they come from the same sequence.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::{Map, json};
    /// use toolsmith_core::{RunScope, ToolContext};
    ///
    /// let scope = |metadata: serde_json::Value| {
    ///     let metadata: Map<String, serde_json::Value> = serde_json::from_value(metadata).unwrap();
    ///     Arc::new(RunScope { metadata: Arc::new(metadata), ..RunScope::new("run-1") })
    /// };
    /// let call = |scope: &Arc<RunScope>, id: &str| {
    ///     ToolContext::new(scope.clone(), 0, id.into(), "pay".into(), Default::default()).numbered()
    /// };
    /// let run = scope(json!({"seq": 4}));
    /// assert_eq!((call(&run, "a").seq(), call(&run, "b").seq()), (5, 6));
    /// let restarted = scope(json!({"seq": null}));
    /// assert_eq!(call(&restarted, "a").next_tool_seq(), 2, "a's own number was 1");
    /// ```
    pub fn next_tool_seq(&self) -> u64 {
        let taken = self.scope.tool_seq.fetch_add(1, Ordering::Relaxed);
        smithers_seq_start(self.metadata()).saturating_add(taken.saturating_add(1))
    }

    /// Gives the call the next number of the run's sequence, as its [`seq`](Self::seq) (see
    /// [`next_tool_seq`](Self::next_tool_seq)). The agent numbers each call as it starts.
    pub fn numbered(mut self) -> Self {
        self.seq = self.next_tool_seq();
        self
    }

    /// The caller's metadata.
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.scope.metadata
    }

    /// The session state shared by the run's calls.
    pub fn state(&self) -> &SessionState {
        &self.scope.state
    }

    /// A typed dependency supplied by the caller.
    pub fn dep<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.scope.deps.get::<T>()
    }

    /// A variable's value, resolved (precedence, lowest first: prompt, tool, agent, thread). The
    /// only way a secret reaches code: it is masked in whatever the call returns.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name)
    }

    /// The run's variables as they were when the call started.
    pub fn variables(&self) -> &Variables {
        &self.variables
    }

    /// The call's variables with `defaults` beneath them: a tool's own values
    /// ([`ToolMeta::env`](crate::ToolMeta::env)), used where the run has none or only the
    /// prompt's (precedence, lowest first: prompt, tool, agent, thread).
    pub fn with_defaults(mut self, defaults: &[(String, String)]) -> Self {
        if !defaults
            .iter()
            .any(|(name, _)| self.variables.open_to_tool_value(name))
        {
            return self;
        }
        let mut variables = (*self.variables).clone();
        for (name, value) in defaults {
            if variables.open_to_tool_value(name) {
                let secret = variables.is_secret(name);
                variables.insert(name, value, secret);
            }
        }
        self.variables = Arc::new(variables);
        self
    }

    /// Sets a variable for the thread (`setEnv` in the Standard Agents spec): the calls that start
    /// after this one see it, and so do the active sub-agent runs below this run (but those that
    /// declare it `scoped`). Without a `kind`, an existing variable keeps its kind and a new one is
    /// secret. The run's output lists what was set ([`VariableCell::changes`]), for the caller to
    /// keep with the thread.
    pub fn set_variable(&self, name: &str, value: &str, kind: Option<VariableKind>) {
        self.scope.variables.set(name, value, kind);
    }

    /// The cancellation token: cancelled when the run is cancelled or the call times out.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Sends a custom event into the run stream as a `data` part, the run's secrets masked in
    /// it like in a result.
    pub fn emit(&self, name: impl Into<String>, mut data: Value) {
        if !self.scope.events.is_active() {
            return;
        }
        let mut name = name.into();
        let variables = self.scope.variables.current();
        let secrets = variables.secret_values();
        if !secrets.is_empty() {
            name = crate::layer::mask_text(&name, &secrets);
            crate::layer::mask_value(&mut data, &secrets);
        }
        self.scope.events.send(RunPart::Data {
            tool_call_id: Some(self.tool_call_id.to_string()),
            name,
            data,
        });
    }

    /// Adds tokens this call spent on its own model runs (a sub-agent's) to the run's usage
    /// (the Deuz SDK's `reportUsage`).
    pub fn report_usage(&self, usage: Usage) {
        self.scope.usage.add(usage);
    }

    /// Sends `text` to the parent run, when this run is a sub-agent's (the Standard Agents spec's
    /// `notifyParent`, the channel of `parentCommunication: explicit`): it reaches the parent's
    /// model as a user message before its next step. Returns whether there is a parent.
    pub fn notify_parent(&self, text: &str) -> bool {
        let Some(parent) = &self.scope.parent else {
            return false;
        };
        let name = self
            .metadata()
            .get("tags")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|t| t.strip_prefix("name:"))
            .unwrap_or("");
        parent.deliver(crate::Message::user(format!(
            "Message from sub-agent \"{name}\" (run {}):\n{text}",
            self.run_id()
        )));
        true
    }

    /// For a sub-agent call resumed after its run paused: the saved run and the answers meant
    /// for it. `None` for a first call.
    pub fn resume(&self) -> Option<&NestedResume> {
        self.resume.as_deref()
    }

    /// Marks this call as the resumption of a paused sub-agent run.
    pub fn with_resume(mut self, resume: NestedResume) -> Self {
        self.resume = Some(Arc::new(resume));
        self
    }

    /// For a tool configured `async: true` in the harness service: its call's result id and
    /// where to complete it. `None` for an ordinary call.
    pub fn async_call(&self) -> Option<&AsyncCall> {
        self.async_call.as_deref()
    }

    /// Marks this call as run asynchronously, as `call` says.
    pub fn with_async_call(mut self, call: AsyncCall) -> Self {
        self.async_call = Some(Arc::new(call));
        self
    }

    /// The run-wide scope.
    pub fn scope(&self) -> &Arc<RunScope> {
        &self.scope
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("run_id", &self.run_id())
            .field("step", &self.step)
            .field("tool_call_id", &self.tool_call_id)
            .field("tool_name", &self.tool_name)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// Usage reported by a run's calls ([`ToolContext::report_usage`]), taken by the loop into the
/// run's total.
#[derive(Debug, Clone, Default)]
pub struct UsageReports(Arc<Mutex<Usage>>);

impl UsageReports {
    /// Adds `usage` to the reports.
    pub fn add(&self, usage: Usage) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) += usage;
    }

    /// Takes everything reported so far, leaving nothing.
    pub fn take(&self) -> Usage {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A mutable JSON key-value bag shared by every call of a run (RadarOS's `sessionState`).
#[derive(Debug, Clone, Default)]
pub struct SessionState(Arc<Mutex<Map<String, Value>>>);

impl SessionState {
    /// A state holding `values`.
    pub fn from_map(values: Map<String, Value>) -> Self {
        SessionState(Arc::new(Mutex::new(values)))
    }

    fn lock(&self) -> MutexGuard<'_, Map<String, Value>> {
        // A panic in another tool while holding the lock leaves the map itself intact.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.lock().get(key).cloned()
    }

    /// Sets `key`, returning the previous value.
    pub fn set(&self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.lock().insert(key.into(), value)
    }

    /// Removes `key`, returning its value.
    pub fn remove(&self, key: &str) -> Option<Value> {
        self.lock().remove(key)
    }

    /// Runs `f` with the whole map locked, for read-modify-write updates.
    pub fn update<R>(&self, f: impl FnOnce(&mut Map<String, Value>) -> R) -> R {
        f(&mut self.lock())
    }

    /// A copy of the whole map.
    pub fn snapshot(&self) -> Map<String, Value> {
        self.lock().clone()
    }
}

/// Typed dependencies handed to tools, one value per type.
///
/// ```
/// use toolsmith_core::Dependencies;
///
/// struct Db(&'static str);
/// let mut deps = Dependencies::new();
/// deps.insert(Db("sqlite"));
/// assert_eq!(deps.get::<Db>().unwrap().0, "sqlite");
/// ```
#[derive(Default)]
pub struct Dependencies(HashMap<TypeId, Box<dyn Any + Send + Sync>>);

impl Dependencies {
    /// No dependencies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a value, replacing any of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) -> &mut Self {
        self.0.insert(TypeId::of::<T>(), Box::new(value));
        self
    }

    /// The value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

impl fmt::Debug for Dependencies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dependencies({} values)", self.0.len())
    }
}

/// Where run parts go while a run streams. Sending never blocks and never fails: with no
/// listener the part is dropped.
#[derive(Clone, Default)]
pub struct EventSink(Option<UnboundedSender<RunPart>>);

impl EventSink {
    /// A sink feeding `sender`.
    pub fn new(sender: UnboundedSender<RunPart>) -> Self {
        EventSink(Some(sender))
    }

    /// A sink that drops everything.
    pub fn none() -> Self {
        EventSink(None)
    }

    /// Whether anyone listens; when not, callers can skip building parts.
    pub fn is_active(&self) -> bool {
        self.0.as_ref().is_some_and(|s| !s.is_closed())
    }

    /// Sends a part.
    pub fn send(&self, part: RunPart) {
        if let Some(sender) = &self.0 {
            // A closed receiver means the consumer went away; the run notices through
            // cancellation, so the lost part does not matter.
            let _ = sender.send(part);
        }
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventSink(active: {})", self.is_active())
    }
}
