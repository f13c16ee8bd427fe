//! [`Agent`] and its builder.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use toolsmith_core::layer::{
    CacheLayer, CacheScope, HookLayer, Layer, LayerStack, LoopDetection, LoopDetectionLayer,
    MemoryCache, ResultCache, ResultLimitLayer, SecretsLayer, TimeoutLayer, ToolHook, TracingLayer,
};
use toolsmith_core::{
    CallSettings, EventSink, IntoTool, LanguageModel, ResultLimit, SharedTool, ToolChoice,
    ToolMeta, ToolResolver, Toolset, VariableDecl,
};

use crate::approval::{
    ApprovalHandler, ApprovalKey, ApprovalPolicy, ApprovalSettings, TimeoutAction,
};
use crate::artifacts::ArtifactLayer;
use crate::journal::{CatchPanicLayer, Journal, JournalLayer, SnapshotLayer};
use crate::router::ToolRouter;
use crate::run::Run;
use crate::{
    DurabilitySnapshot, ExecutionPolicy, RunError, RunInput, RunOutput, RunStream, StopCondition,
};

/// How many results the default result cache keeps.
const DEFAULT_CACHE_ENTRIES: usize = 10_000;

/// An agent: a model, instructions, tools and the rules of its loop.
///
/// Cheap to clone (the clones share everything, tools included) and safe to run concurrently:
/// each run takes a snapshot of the toolset when it starts.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

pub(crate) struct AgentInner {
    pub(crate) model: Arc<dyn LanguageModel>,
    /// The agent's name, told to approval handlers.
    pub(crate) name: Option<String>,
    pub(crate) instructions: Option<String>,
    tools: RwLock<Toolset>,
    pub(crate) resolver: Option<Arc<dyn ToolResolver>>,
    pub(crate) policy: ExecutionPolicy,
    pub(crate) max_steps: u32,
    pub(crate) stop_when: Vec<Box<dyn StopCondition>>,
    pub(crate) tool_choice: ToolChoice,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) settings: CallSettings,
    hooks: Vec<Arc<dyn ToolHook>>,
    layers: Vec<Arc<dyn Layer>>,
    loop_detection: Option<LoopDetection>,
    tool_timeout: Option<Duration>,
    result_limit: ResultLimitLayer,
    artifacts: Option<ArtifactLayer>,
    /// Picks the tools each run declares.
    pub(crate) router: Option<ToolRouter>,
    /// The result cache (its layer goes inside the run's journal).
    pub(crate) cache: CacheLayer,
    pub(crate) approval: ApprovalSettings,
    /// The agent's variable values (below the thread's in precedence).
    pub(crate) variables: HashMap<String, String>,
    /// Variables the agent itself declares (kinds, and required ones checked at start).
    pub(crate) declared: Vec<VariableDecl>,
    /// Called after each successful side-effecting call.
    pub(crate) snapshot: Option<Arc<dyn DurabilitySnapshot>>,
    /// The whole layer stack of a run that keeps no per-run layer state, built at the first
    /// such run (see [`AgentInner::run_stack`]).
    shared_stack: OnceLock<Arc<LayerStack>>,
}

impl AgentInner {
    pub(crate) fn tools(&self) -> Toolset {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The layers of one run, outermost first: tracing, secrets, loop detection (fresh counts per run),
    /// hooks, result limits, the caller's layers, timeout.
    pub(crate) fn layer_stack(&self) -> LayerStack {
        let mut stack = LayerStack::new();
        stack.push(TracingLayer);
        stack.push(SecretsLayer);
        if let Some(settings) = self.loop_detection {
            stack.push(LoopDetectionLayer::new(settings));
        }
        for hook in &self.hooks {
            stack.push(HookLayer(hook.clone()));
        }
        stack.push(self.result_limit.clone());
        if let Some(artifacts) = self.artifacts {
            stack.push(artifacts);
        }
        for layer in &self.layers {
            stack.push_shared(layer.clone());
        }
        stack.push(TimeoutLayer::new(self.tool_timeout));
        stack
    }

    /// The whole layer stack of one run: [`layer_stack`](Self::layer_stack), then innermost the
    /// snapshot hook, the run's journal, the result cache, over the catch-panic layer.
    ///
    /// A run without a journal, a snapshot hook or loop detection (whose counts are per run)
    /// has layers that keep nothing of their own per run (the cache's entries are shared by
    /// design), so its stack is built once per agent and shared: building it per run was ~9
    /// allocations, their frees and each layer type's drop code in every run's path.
    pub(crate) fn run_stack(&self, journal: Option<&Arc<Journal>>) -> Arc<LayerStack> {
        let per_run = journal.is_some() || self.snapshot.is_some() || self.loop_detection.is_some();
        if !per_run {
            return self
                .shared_stack
                .get_or_init(|| Arc::new(self.build_run_stack(None)))
                .clone();
        }
        Arc::new(self.build_run_stack(journal))
    }

    fn build_run_stack(&self, journal: Option<&Arc<Journal>>) -> LayerStack {
        let mut stack = self.layer_stack();
        if let Some(hook) = &self.snapshot {
            stack.push(SnapshotLayer(hook.clone()));
        }
        if let Some(journal) = journal {
            stack.push(JournalLayer(journal.clone()));
        }
        // Inside the journal: a resumed call gets its recorded outcome, never a cached one.
        stack.push(self.cache.clone());
        stack.push(CatchPanicLayer);
        stack
    }
}

impl Agent {
    /// Starts building an agent on `model`.
    pub fn builder(model: impl LanguageModel) -> AgentBuilder {
        Self::builder_shared(Arc::new(model))
    }

    /// Starts building an agent on a shared model.
    pub fn builder_shared(model: Arc<dyn LanguageModel>) -> AgentBuilder {
        AgentBuilder {
            inner: AgentInner {
                model,
                name: None,
                instructions: None,
                tools: RwLock::default(),
                resolver: None,
                policy: ExecutionPolicy::Sequential,
                max_steps: 10,
                stop_when: Vec::new(),
                tool_choice: ToolChoice::Auto,
                parallel_tool_calls: None,
                settings: CallSettings::default(),
                hooks: Vec::new(),
                layers: Vec::new(),
                loop_detection: None,
                tool_timeout: None,
                result_limit: ResultLimitLayer::new(None),
                artifacts: None,
                router: None,
                cache: CacheLayer::new(
                    Arc::new(MemoryCache::new(DEFAULT_CACHE_ENTRIES)),
                    CacheScope::Thread,
                ),
                approval: ApprovalSettings::default(),
                variables: HashMap::new(),
                declared: Vec::new(),
                snapshot: None,
                shared_stack: OnceLock::new(),
            },
        }
    }

    /// Runs the loop to its end.
    ///
    /// # Errors
    ///
    /// A [`RunError`] when the model fails, a tool fails fatally, the run is cancelled or the
    /// tool resolver fails. The error carries the thread up to that point.
    pub async fn run(&self, input: impl Into<RunInput>) -> Result<RunOutput, RunError> {
        self.run_with(input.into(), EventSink::none()).await
    }

    /// Runs the loop to its end, its parts sent to `events` (a sub-agent's run, forwarded into
    /// its parent's stream).
    pub(crate) async fn run_with(
        &self,
        input: RunInput,
        events: EventSink,
    ) -> Result<RunOutput, RunError> {
        Run::new(self.inner.clone(), input, events)
            .await?
            .drive()
            .await
    }

    /// Starts the loop on a task and streams its parts. Needs a Tokio runtime.
    ///
    /// Dropping the stream cancels the run.
    pub fn stream(&self, input: impl Into<RunInput>) -> RunStream {
        RunStream::spawn(self.inner.clone(), input.into())
    }

    /// The effect class of a tool that runs this agent (a sub-agent or prompt tool): it has a
    /// side effect if any of the agent's tools has one, and is idempotent only if all of them
    /// are. So a crash during such a call is resolved as its riskiest tool would be,
    /// never by re-running the whole child blindly. Tools from a resolver are not known ahead,
    /// so an agent with a resolver counts as not idempotent.
    pub(crate) fn effect_meta(&self) -> ToolMeta {
        let tools = self.inner.tools();
        let side_effect =
            self.inner.resolver.is_some() || tools.iter().any(|t| t.meta().side_effect);
        let idempotent =
            self.inner.resolver.is_none() && tools.iter().all(|t| t.meta().is_idempotent());
        ToolMeta::new()
            .side_effect(side_effect)
            .idempotent(idempotent)
    }

    /// The agent's own variable values.
    pub(crate) fn variables(&self) -> &HashMap<String, String> {
        &self.inner.variables
    }

    /// A snapshot of the toolset.
    pub fn tools(&self) -> Toolset {
        self.inner.tools()
    }

    fn tools_mut<R>(&self, f: impl FnOnce(&mut Toolset) -> R) -> R {
        f(&mut self.inner.tools.write().unwrap_or_else(|p| p.into_inner()))
    }

    /// Adds a tool, or replaces the one of the same name; returns the replaced tool. Runs already
    /// started keep their toolset.
    pub fn add_tool(&self, tool: impl IntoTool) -> Option<SharedTool> {
        self.tools_mut(|t| t.add(tool))
    }

    /// Removes a tool; `true` if it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.tools_mut(|t| t.remove(name))
    }

    /// Replaces the tool of the same name; `false` if there is none.
    pub fn replace_tool(&self, tool: impl IntoTool) -> bool {
        self.tools_mut(|t| t.replace(tool))
    }

    /// Replaces the whole toolset.
    pub fn set_tools(&self, tools: Toolset) {
        self.tools_mut(|t| *t = tools);
    }

    /// The tools' names, in order.
    pub fn list_tools(&self) -> Vec<String> {
        self.tools().names().map(str::to_owned).collect()
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn LanguageModel> {
        &self.inner.model
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field(
                "model",
                &format_args!(
                    "{}:{}",
                    self.inner.model.provider(),
                    self.inner.model.model_id()
                ),
            )
            .field("tools", &self.inner.tools())
            .field("policy", &self.inner.policy)
            .field("max_steps", &self.inner.max_steps)
            .finish_non_exhaustive()
    }
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    inner: AgentInner,
}

impl AgentBuilder {
    /// The agent's name (RadarOS's `name`), given to an approval handler with each request
    /// ([`ApprovalRequest::agent_name`](crate::ApprovalRequest::agent_name)).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.inner.name = Some(name.into());
        self
    }

    /// The system instructions.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.inner.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool (replacing one of the same name).
    pub fn tool(self, tool: impl IntoTool) -> Self {
        self.inner
            .tools
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .add(tool);
        self
    }

    /// Adds every tool of a toolset (on a name clash, the tool added first wins).
    pub fn tools(self, tools: Toolset) -> Self {
        {
            let mut current = self.inner.tools.write().unwrap_or_else(|p| p.into_inner());
            *current = std::mem::take(&mut *current).merge(tools);
        }
        self
    }

    /// Resolves extra tools at the start of each run; static tools win on a clash.
    pub fn resolver(mut self, resolver: impl ToolResolver) -> Self {
        self.inner.resolver = Some(Arc::new(resolver));
        self
    }

    /// How a step's tool calls run (default: sequential).
    pub fn execution(mut self, policy: ExecutionPolicy) -> Self {
        self.inner.policy = policy;
        self
    }

    /// The most steps a run takes (default 10).
    pub fn max_steps(mut self, max_steps: u32) -> Self {
        self.inner.max_steps = max_steps.max(1);
        self
    }

    /// Sets the durability snapshot hook (Smithers' `durabilitySnapshot`): called after every
    /// successful call of a side-effecting tool, for example to commit the workspace. Its
    /// errors are logged and swallowed.
    pub fn durability_snapshot(mut self, hook: impl DurabilitySnapshot) -> Self {
        self.inner.snapshot = Some(Arc::new(hook));
        self
    }

    /// Adds a stop condition; the run stops when any holds.
    pub fn stop_when(mut self, condition: impl StopCondition) -> Self {
        self.inner.stop_when.push(Box::new(condition));
        self
    }

    /// Whether and which tool the model must call.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.inner.tool_choice = choice;
        self
    }

    /// Tells the provider whether the model may call several tools per step. Unset, a request
    /// that offers tools says `false` when the calls run one at a time
    /// ([`ExecutionPolicy::Sequential`], the default; the Standard Agents spec's
    /// `parallelToolCalls` defaults to false) and nothing (the provider's default) when they
    /// run in parallel.
    pub fn parallel_tool_calls(mut self, allowed: bool) -> Self {
        self.inner.parallel_tool_calls = Some(allowed);
        self
    }

    /// Sampling and length settings.
    pub fn settings(mut self, settings: CallSettings) -> Self {
        self.inner.settings = settings;
        self
    }

    /// Adds a hook around every tool call.
    pub fn hook(mut self, hook: impl ToolHook) -> Self {
        self.inner.hooks.push(Arc::new(hook));
        self
    }

    /// Adds a layer around every tool call, inside the hooks and outside the timeout.
    pub fn layer(mut self, layer: impl Layer) -> Self {
        self.inner.layers.push(Arc::new(layer));
        self
    }

    /// Turns on loop detection.
    pub fn loop_detection(mut self, settings: LoopDetection) -> Self {
        self.inner.loop_detection = Some(settings);
        self
    }

    /// The time limit of tool calls whose tools set none.
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.inner.tool_timeout = Some(timeout);
        self
    }

    /// The limit on what the model sees of a result, for tools that set none of their own
    /// ([`ToolMeta::result_limit`]): RadarOS's `toolResultLimit` (20 000 characters, truncated,
    /// is [`ResultLimit::default`]). Unset, only tools with a limit of their own are limited.
    pub fn result_limit(mut self, limit: ResultLimit) -> Self {
        self.inner.result_limit = self.inner.result_limit.clone().with_default(limit);
        self
    }

    /// The model that summarises results for the `summarize` strategy of a result limit
    /// (without one, such results are truncated).
    pub fn summarize_model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.inner.result_limit = self.inner.result_limit.clone().summarize_with(model);
        self
    }

    /// Keeps results whose model-facing text is over `max_bytes` as artifacts, the model seeing
    /// a pointer and a preview instead, and adds the [`get_artifact`](crate::get_artifact) and
    /// [`list_artifacts`](crate::list_artifacts) tools that read them back (RadarOS's
    /// `maxToolOutputBytes`; its default is
    /// [`DEFAULT_MAX_TOOL_OUTPUT_BYTES`](crate::DEFAULT_MAX_TOOL_OUTPUT_BYTES)). See
    /// [the module](crate::artifacts).
    pub fn spill_artifacts(mut self, max_bytes: usize) -> Self {
        self.inner.artifacts = Some(ArtifactLayer {
            max_bytes: max_bytes.max(1),
        });
        self.tool(crate::get_artifact())
            .tool(crate::list_artifacts())
    }

    /// Lets a cheap model pick, as each run starts, the tools it declares (RadarOS's
    /// `toolRouter`): see [`ToolRouter`].
    pub fn router(mut self, router: ToolRouter) -> Self {
        self.inner.router = Some(router);
        self
    }

    /// Where results of tools with a [`ToolMeta::cache_ttl`] are cached, and who shares them
    /// (default: in memory, at most 10 000 results, per thread).
    pub fn result_cache(mut self, cache: Arc<dyn ResultCache>, scope: CacheScope) -> Self {
        self.inner.cache = CacheLayer::new(cache, scope);
        self
    }

    /// Which tools need approval agent-wide (default [`ApprovalPolicy::None`]: only those that
    /// ask themselves). It decides for the tools that set nothing ([`Approval::Policy`]); a
    /// tool's own setting overrides it either way.
    ///
    /// [`Approval::Policy`]: toolsmith_core::Approval::Policy
    pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.inner.approval.policy = policy;
        self
    }

    /// How long an approval may wait (default 5 minutes) and what happens when nobody answered
    /// in time (default [`TimeoutAction::Deny`]). In event mode pauses are data, so the timeout
    /// is applied when the run resumes: an unanswered approval older than `timeout` is decided
    /// by `action`. In callback mode ([`on_approval`](Self::on_approval)) it is applied while
    /// the run waits for the handler.
    pub fn approval_timeout(mut self, timeout: Duration, action: TimeoutAction) -> Self {
        self.inner.approval.timeout = timeout;
        self.inner.approval.timeout_action = action;
        self
    }

    /// Callback approval mode (RadarOS's `onApproval`): a call that needs approval does not
    /// pause the run; `handler` is asked in the step, racing the
    /// [`approval_timeout`](Self::approval_timeout) and the run's cancellation. Approved, the
    /// call runs; denied, its result is `[DENIED] <reason>` and it never runs. A handler that
    /// errors or panics denies (fail closed). Calls approved `always` in the thread are not
    /// asked about. See [`ApprovalHandler`] and `docs/approvals.md`.
    pub fn on_approval(mut self, handler: impl ApprovalHandler) -> Self {
        self.inner.approval.handler = Some(Arc::new(handler));
        self
    }

    /// The key approval ids are made with (default: random per agent). Set the same stored key
    /// on every process that may resume a thread another one paused.
    pub fn approval_key(mut self, key: ApprovalKey) -> Self {
        self.inner.approval.key = key;
        self
    }

    /// Sets an agent-level variable: tools read it with `ToolContext::variable`; a run's own
    /// value (`RunInput::with_variable`, the thread's) wins over it. Whether it is secret is
    /// the declaring tool's say ([`toolsmith_core::VariableDecl`]).
    pub fn variable(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.inner.variables.insert(name.into(), value.into());
        self
    }

    /// Declares a variable at the agent level (`VariableDefinition` in the Standard Agents spec): a
    /// secret one is masked like a tool's; a required one that no source sets stops every run
    /// before it starts (`VARIABLES_REQUIRED`, naming it).
    pub fn declare_variable(mut self, declaration: VariableDecl) -> Self {
        self.inner.declared.push(declaration);
        self
    }

    /// The agent.
    pub fn build(self) -> Agent {
        Agent {
            inner: Arc::new(self.inner),
        }
    }
}
