//! [`ToolMeta`]: the runtime facts about a tool that the model never sees.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ToolContext, ToolError};

/// Runtime facts about a tool that drive scheduling, safety and durability. The model never
/// sees them.
///
/// Build one with the chained setters; every field has the default a pure, read-only tool wants.
///
/// ```
/// use std::time::Duration;
/// use toolsmith_core::{Concurrency, ToolMeta};
///
/// let meta = ToolMeta::new().side_effect(true).timeout(Duration::from_secs(5));
/// assert!(meta.side_effect);
/// assert!(!meta.is_idempotent()); // idempotent defaults to !side_effect
/// assert_eq!(meta.concurrency, Concurrency::Shared);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ToolMeta {
    /// Whether the tool changes state outside the run (files, email, payments).
    pub side_effect: bool,
    /// Whether running it twice with the same input is safe. `None` means `!side_effect`.
    pub idempotent: Option<bool>,
    /// Whether the tool may run alongside others (`Shared`) or must run alone (`Exclusive`).
    pub concurrency: Concurrency,
    /// Whether a human must approve a call before it runs.
    pub approval: Approval,
    /// Per-call time limit; the agent's default applies when `None`.
    pub timeout: Option<Duration>,
    /// How long a successful result may be served from the result cache.
    pub cache_ttl: Option<Duration>,
    /// A cap on what the model sees of the result.
    pub result_limit: Option<ResultLimit>,
    /// Run asynchronously: return a handle at once and deliver the result later.
    pub async_mode: Option<AsyncMode>,
    /// Variables the tool needs resolved before it runs.
    pub variables: Vec<VariableDecl>,
    /// Tool-level variable values (the Standard Agents spec's `PromptToolConfig.env`): for this
    /// tool's calls, below the agent's and the thread's values in precedence.
    pub env: Vec<(String, String)>,
    /// The name of a flag variable: the tool is offered only when it resolves to `true`, `1` or
    /// `yes` (case-insensitive).
    pub optional: Option<String>,
    /// Whether the tool reads its idempotency key from the context (Smithers'
    /// `acceptsIdempotencyKey`).
    pub accepts_idempotency_key: bool,
    /// Undoes a side effect; requires `side_effect`.
    pub revert: Option<Arc<dyn Revert>>,
    /// Finds out whether an interrupted call had its effect; requires `side_effect`.
    pub reconcile: Option<Arc<dyn Reconcile>>,
}

static DEFAULT_META: ToolMeta = ToolMeta {
    side_effect: false,
    idempotent: None,
    concurrency: Concurrency::Shared,
    approval: Approval::Policy,
    timeout: None,
    cache_ttl: None,
    result_limit: None,
    async_mode: None,
    variables: Vec::new(),
    env: Vec::new(),
    optional: None,
    accepts_idempotency_key: false,
    revert: None,
    reconcile: None,
};

impl ToolMeta {
    /// The defaults: no side effect, shared, approval left to the agent's policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `'static` reference to the defaults, for [`Tool::meta`](crate::Tool::meta).
    pub fn default_ref() -> &'static ToolMeta {
        &DEFAULT_META
    }

    /// Whether re-running the tool with the same input is safe: the explicit setting, else
    /// `!side_effect`.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent.unwrap_or(!self.side_effect)
    }

    /// Sets [`side_effect`](Self::side_effect).
    pub fn side_effect(mut self, side_effect: bool) -> Self {
        self.side_effect = side_effect;
        self
    }

    /// Sets [`idempotent`](Self::idempotent) explicitly.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Sets [`concurrency`](Self::concurrency).
    pub fn concurrency(mut self, concurrency: Concurrency) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Sets [`approval`](Self::approval).
    pub fn approval(mut self, approval: Approval) -> Self {
        self.approval = approval;
        self
    }

    /// Sets [`timeout`](Self::timeout).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets [`cache_ttl`](Self::cache_ttl).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = Some(ttl);
        self
    }

    /// Sets [`result_limit`](Self::result_limit).
    pub fn result_limit(mut self, limit: ResultLimit) -> Self {
        self.result_limit = Some(limit);
        self
    }

    /// Sets [`async_mode`](Self::async_mode).
    pub fn async_mode(mut self, mode: AsyncMode) -> Self {
        self.async_mode = Some(mode);
        self
    }

    /// Adds a declared variable.
    pub fn variable(mut self, variable: VariableDecl) -> Self {
        self.variables.push(variable);
        self
    }

    /// Adds a tool-level variable value ([`env`](Self::env)).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Sets [`optional`](Self::optional): the flag variable that enables the tool.
    pub fn optional(mut self, flag: impl Into<String>) -> Self {
        self.optional = Some(flag.into());
        self
    }

    /// Sets [`accepts_idempotency_key`](Self::accepts_idempotency_key).
    pub fn accepts_idempotency_key(mut self, accepts: bool) -> Self {
        self.accepts_idempotency_key = accepts;
        self
    }

    /// Sets the [`revert`](Self::revert) handler.
    ///
    /// # Errors
    ///
    /// A revert handler needs `side_effect: true` (in Smithers, `defineTool(<name>):
    /// revert requires sideEffect:true.`); this returns `INVALID_TOOL` otherwise.
    pub fn revert(mut self, revert: impl Revert) -> Result<Self, ToolError> {
        if !self.side_effect {
            return Err(ToolError::new(
                "INVALID_TOOL",
                "revert requires side_effect: true",
            ));
        }
        self.revert = Some(Arc::new(revert));
        Ok(self)
    }

    /// Sets the [`reconcile`](Self::reconcile) handler: after a crash, a call of this tool
    /// that was started and never recorded as finished is reconciled instead of re-run blindly
    /// or reported as unknown to the model.
    ///
    /// # Errors
    ///
    /// A reconcile handler needs `side_effect: true`; this returns `INVALID_TOOL` otherwise.
    pub fn reconcile(mut self, reconcile: impl Reconcile) -> Result<Self, ToolError> {
        if !self.side_effect {
            return Err(ToolError::new(
                "INVALID_TOOL",
                "reconcile requires side_effect: true",
            ));
        }
        self.reconcile = Some(Arc::new(reconcile));
        Ok(self)
    }
}

impl fmt::Debug for ToolMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolMeta")
            .field("side_effect", &self.side_effect)
            .field("idempotent", &self.is_idempotent())
            .field("concurrency", &self.concurrency)
            .field("approval", &self.approval)
            .field("timeout", &self.timeout)
            .field("cache_ttl", &self.cache_ttl)
            .field("result_limit", &self.result_limit)
            .field("async_mode", &self.async_mode)
            .field("variables", &self.variables)
            // Names only: a value may be a secret.
            .field(
                "env",
                &self.env.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("optional", &self.optional)
            .field("accepts_idempotency_key", &self.accepts_idempotency_key)
            .field("revert", &self.revert.is_some())
            .field("reconcile", &self.reconcile.is_some())
            .finish()
    }
}

/// Whether a tool may run alongside other calls of the same step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Concurrency {
    /// May run concurrently with other shared calls.
    #[default]
    Shared,
    /// Runs alone: every earlier call of the step finishes first, and later calls wait for it.
    Exclusive,
}

/// A predicate deciding from the arguments (and context) whether a call needs approval.
///
/// An `Err` means "needs approval": approval fails closed.
pub type ApprovalPredicate =
    Arc<dyn Fn(&Value, &ToolContext) -> Result<bool, ToolError> + Send + Sync>;

/// Whether a call needs a human's approval before it runs.
///
/// A tool's own setting overrides the agent's approval policy (RadarOS's `requiresApproval`);
/// a tool that sets nothing ([`Approval::Policy`], the default) leaves it to the policy.
#[derive(Clone, Default)]
pub enum Approval {
    /// Not set on the tool: asks when the agent's policy names the tool (`all`, or a list with
    /// its name), else not.
    #[default]
    Policy,
    /// Never asks, whatever the agent's policy.
    Never,
    /// Always asks, whatever the agent's policy (even `none`: approval fails closed).
    Always,
    /// Asks when the predicate says so, or fails, whatever the agent's policy.
    When(ApprovalPredicate),
}

impl Approval {
    /// Approval decided by a predicate over the arguments and context.
    pub fn when(
        predicate: impl Fn(&Value, &ToolContext) -> Result<bool, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Approval::When(Arc::new(predicate))
    }

    /// Whether this call needs approval by the tool's own setting, `None` when the tool leaves
    /// it to the agent's policy. A predicate that errors requires approval.
    pub fn decide(&self, input: &Value, cx: &ToolContext) -> Option<bool> {
        match self {
            Approval::Policy => None,
            Approval::Never => Some(false),
            Approval::Always => Some(true),
            Approval::When(predicate) => Some(predicate(input, cx).unwrap_or(true)),
        }
    }

    /// Whether this call needs approval when the agent's policy names the tool
    /// (`policy_names`): the tool's own setting, else the policy.
    pub fn required(&self, input: &Value, cx: &ToolContext, policy_names: bool) -> bool {
        self.decide(input, cx).unwrap_or(policy_names)
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Approval::Policy => f.write_str("Policy"),
            Approval::Never => f.write_str("Never"),
            Approval::Always => f.write_str("Always"),
            Approval::When(_) => f.write_str("When(<predicate>)"),
        }
    }
}

/// How a result is brought under a size limit before the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultLimitStrategy {
    /// JSON-aware truncation.
    #[default]
    Truncate,
    /// Summarised by a cheap model, falling back to truncation.
    Summarize,
}

/// A cap on the model-facing part of a tool's result. The app value is never cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultLimit {
    /// Characters the model may see (default 20 000, as in RadarOS).
    pub max_chars: usize,
    /// What to do past the limit.
    #[serde(default)]
    pub strategy: ResultLimitStrategy,
}

impl Default for ResultLimit {
    fn default() -> Self {
        ResultLimit {
            max_chars: 20_000,
            strategy: ResultLimitStrategy::Truncate,
        }
    }
}

/// How an asynchronous tool delivers its result, as the agent harness's `async: true` tools do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AsyncMode {
    /// Runs in the background of the same process; the loop waits for it before the next pass.
    #[default]
    SameInvocation,
    /// Only enqueues outside work, which completes later through the completion endpoint.
    ExternalDispatch,
}

/// The kind of a declared variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariableKind {
    /// Plain text, may be shown.
    Text,
    /// Encrypted at rest, never shown to the model or logged.
    #[default]
    Secret,
}

/// A variable a tool declares it needs (`VariableDefinition` in the Standard Agents spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariableDecl {
    /// The variable's name.
    pub name: String,
    /// Text or secret.
    #[serde(rename = "type")]
    pub kind: VariableKind,
    /// Execution cannot continue until a value resolves.
    pub required: bool,
    /// Blocks inheritance from the parent thread for this name.
    #[serde(default)]
    pub scoped: bool,
    /// What the variable is for.
    pub description: String,
}

/// Undoes the effect of a side-effecting call (Smithers' `revert`).
#[async_trait::async_trait]
pub trait Revert: Send + Sync + 'static {
    /// Reverts the call made with `input`.
    async fn revert(&self, input: &Value, cx: &ToolContext) -> Result<(), ToolError>;
}

/// Finds out what became of a side-effecting call that a crash interrupted: the process died
/// after the call started and before its outcome was recorded, so the effect may or may not
/// have happened. The call's context carries the same idempotency key as the interrupted
/// attempt, to look the effect up by.
#[async_trait::async_trait]
pub trait Reconcile: Send + Sync + 'static {
    /// `Some(output)`: the effect happened, and `output` is the call's result. `None`: it did
    /// not, and the call runs now. An error leaves it unknown: the model is told.
    async fn reconcile(
        &self,
        input: &Value,
        cx: &ToolContext,
    ) -> Result<Option<crate::ToolOutput>, ToolError>;
}
