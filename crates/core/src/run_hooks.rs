//! What a tool asks of the runs it is part of, beyond being called: [`PrepareTools`] shapes a
//! run's toolset as the run starts, [`StartCalls`] has the run make calls before the model's
//! first step. The contracts (when the loop asks, in which order, what a hook may do) are on
//! the traits.

use crate::{Message, ModelToolCall, SharedTool, Toolset, Variables};

/// A tool's say in the toolset of each run it is part of: for that run only, it can take itself
/// out, stand in for itself with other tools, or bring tools along (a resumable sub-agent is
/// offered through `subagent_create` and `subagent_message` rather than as itself).
///
/// A tool offers the hook through [`Tool::prepare_tools`] (the toolset's wrappers,
/// [`Toolset::prefix`], [`Toolset::rename`] and [`Toolset::map_meta`], delegate to the tool
/// they wrap). The agent loop asks once per run, as the run starts:
///
/// 1. the run's toolset is complete: the agent's tools, then its resolver's, then the
///    `optional` tools whose flag is off taken out;
/// 2. the hook of every tool in it that offers one is called, in toolset order (whatever the
///    hooks before did), with `entry`, that tool as the toolset holds it (its name and metadata
///    there, wrappers included), and `tools`, the toolset as the hooks before left it; it
///    returns the toolset. The last one's is the run's toolset for the whole run: the model's
///    declarations and call preparation see it, and so do the thread's waiting and interrupted
///    calls (only the caller's client-tool results are placed before, against the complete
///    toolset);
/// 3. the [`StartCalls`] hooks ask for their calls.
///
/// Nothing of the run is recorded yet at that point, and a run that resumes a thread (after a
/// pause or a crash) is prepared again the same way from the agent's tools: the hook must be a
/// function of what it is given (no clock, no randomness, no I/O), or a resumed run could not
/// find the tools its thread and journal name.
///
/// It may remove, replace and add tools. It must not run tools, block, or keep per-run state
/// anywhere but in the tools it returns: those live as long as the run, and the next run
/// prepares its own. What `entry` is to a hook is the hook's to define: the loop only ever
/// passes the tool that offered it, and a hook may call the hook of a tool it finds in `tools`
/// with an entry of its own making (a tool that stands in for several others takes in each one
/// that way).
///
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Map, Value};
/// use toolsmith_core::{
///     async_trait, from_fn, PrepareTools, SharedTool, Tool, ToolContext, ToolError, ToolOutput,
///     ToolSpec, Toolset,
/// };
///
/// /// Notes that bring their own eraser: every run that has `notes` gets `notes_clear` too.
/// struct Notes(ToolSpec);
///
/// #[async_trait]
/// impl Tool for Notes {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     async fn call(&self, input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::json(input))
///     }
///     fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
///         Some(self)
///     }
/// }
///
/// impl PrepareTools for Notes {
///     fn prepare(&self, _entry: &SharedTool, tools: Toolset) -> Toolset {
///         tools.with(from_fn("notes_clear", "Clear the notes.", |_: Map<String, Value>, _cx| async {
///             Ok::<_, ToolError>("cleared")
///         }))
///     }
/// }
///
/// let notes: SharedTool = Arc::new(Notes(ToolSpec::new("notes", json!({"type": "object"}))));
/// let tools = Toolset::new().with(notes.clone());
/// let run_tools = notes.prepare_tools().unwrap().prepare(&notes, tools);
/// assert_eq!(run_tools.names().collect::<Vec<_>>(), ["notes", "notes_clear"]);
/// ```
///
/// [`Tool::prepare_tools`]: crate::Tool::prepare_tools
/// [`Toolset::prefix`]: crate::Toolset::prefix
/// [`Toolset::rename`]: crate::Toolset::rename
/// [`Toolset::map_meta`]: crate::Toolset::map_meta
pub trait PrepareTools: Send + Sync {
    /// The run's toolset, `tools` with what this hook changes for `entry`.
    fn prepare(&self, entry: &SharedTool, tools: Toolset) -> Toolset;
}

/// Calls a tool asks a run to make as it starts, before the model's first step (the Standard
/// Agents spec's `immediate` sub-agents start so).
///
/// A tool offers the hook through [`Tool::start_calls`] (the toolset's wrappers delegate to
/// the tool they wrap). The agent loop asks every tool of the run's toolset *as it was before
/// preparation* that offers one, in that order, once per run, right after the toolset is
/// prepared ([`PrepareTools`]), with:
///
/// - `entry`: the tool as the toolset held it (its name there);
/// - `tools`: the prepared toolset, the one the calls are made against;
/// - `messages`: the thread as loaded, the caller's client-tool results placed;
/// - `variables`: the run's resolved variables, secrets included: a call's input is recorded in
///   the thread and shown to models, so a secret must never go into one.
///
/// The calls of every tool, in order, make a turn of their own, like a model's step: one
/// assistant message holding them, then their results. Each is prepared (an unknown tool,
/// unparseable or invalid input: an error result), approval and the execution policy apply,
/// and each is journalled as a step's calls are; the turn is saved with its results (unlike a
/// step's, its calls are not saved before they run). It comes after the loaded thread's
/// interrupted calls are settled and its waiting calls resumed (and saved), before the first
/// model step; when a call of it pauses, the run pauses there without calling the model. It
/// is in the run's thread, not among its steps.
///
/// The hook is asked at every run, resumed ones included: one that asks only on a fresh thread
/// checks `messages` (no assistant message yet). It must not run tools or block, and the ids it
/// gives its calls must be unique in the thread.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use toolsmith_core::{
///     async_trait, Message, ModelToolCall, Role, SharedTool, StartCalls, Tool, ToolContext,
///     ToolError, ToolOutput, ToolSpec, Toolset, Variables,
/// };
///
/// /// Indexes the workspace once, as the first run of a thread starts.
/// struct Indexer(ToolSpec);
///
/// #[async_trait]
/// impl Tool for Indexer {
///     fn spec(&self) -> &ToolSpec {
///         &self.0
///     }
///     async fn call(&self, _input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text("indexed"))
///     }
///     fn start_calls(&self) -> Option<&dyn StartCalls> {
///         Some(self)
///     }
/// }
///
/// impl StartCalls for Indexer {
///     fn calls(
///         &self,
///         entry: &SharedTool,
///         _tools: &Toolset,
///         messages: &[Message],
///         _variables: &Variables,
///     ) -> Vec<ModelToolCall> {
///         if messages.iter().any(|m| m.role == Role::Assistant) {
///             return Vec::new();
///         }
///         let name = entry.spec().name();
///         vec![ModelToolCall::new(format!("start_{name}"), name, "{}")]
///     }
/// }
///
/// let indexer: SharedTool = Arc::new(Indexer(ToolSpec::new("index", json!({"type": "object"}))));
/// let tools = Toolset::new().with(indexer.clone());
/// let hook = indexer.start_calls().unwrap();
/// let fresh = hook.calls(&indexer, &tools, &[Message::user("hi")], &Variables::default());
/// assert_eq!(fresh[0].tool_name, "index");
/// let later = [Message::user("hi"), Message::assistant("hello")];
/// assert!(hook.calls(&indexer, &tools, &later, &Variables::default()).is_empty());
/// ```
///
/// [`Tool::start_calls`]: crate::Tool::start_calls
pub trait StartCalls: Send + Sync {
    /// The calls `entry` asks the run to make as it starts; none most of the time.
    fn calls(
        &self,
        entry: &SharedTool,
        tools: &Toolset,
        messages: &[Message],
        variables: &Variables,
    ) -> Vec<ModelToolCall>;
}
