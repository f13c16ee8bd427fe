//! What a tool asks of the runs it is part of, beyond being called: [`PrepareTools`] shapes a
//! run's toolset as the run starts, [`StartCalls`] has the run make calls before the model's
//! first step.
//!
//! A tool offers either through a [`Tool`](crate::Tool) method ([`Tool::prepare_tools`],
//! [`Tool::start_calls`]); wrappers ([`Toolset::prefix`], [`Toolset::rename`],
//! [`Toolset::map_meta`]) delegate to the tool they wrap. Both are asked once per run, as the
//! run starts, in this order:
//!
//! 1. the run's toolset is complete: the agent's tools, then its resolver's, then the
//!    `optional` tools whose flag is off taken out;
//! 2. every [`PrepareTools`] hook, in toolset order, prepares it: the result is the run's
//!    toolset for the whole run (the model's declarations, call preparation, pauses, the
//!    journal);
//! 3. every [`StartCalls`] hook, in the order of the toolset before step 2, asks for its calls.
//!
//! Nothing of the run is recorded yet at that point, and a run that resumes a thread (after a
//! pause or a crash) is prepared again the same way from the agent's tools: the hooks must be
//! functions of what they are given (no clock, no randomness, no I/O), or a resumed run could
//! not find the tools its thread and journal name.
//!
//! [`Tool::prepare_tools`]: crate::Tool::prepare_tools
//! [`Tool::start_calls`]: crate::Tool::start_calls
//! [`Toolset::prefix`]: crate::Toolset::prefix
//! [`Toolset::rename`]: crate::Toolset::rename
//! [`Toolset::map_meta`]: crate::Toolset::map_meta

use crate::{Message, ModelToolCall, SharedTool, Toolset, Variables};

/// A tool's say in the toolset of each run it is part of: for that run only, it can take itself
/// out, stand in for itself with other tools, or bring tools along (a resumable sub-agent is
/// offered through `subagent_create` and `subagent_message` rather than as itself).
///
/// The loop calls the hook of every tool of the run that offers one ([`Tool::prepare_tools`]),
/// in toolset order, before anything reads the toolset (see [the module](self) for the whole
/// order). `entry` is that tool as the toolset holds it (its name and metadata there, wrappers
/// included); `tools` is the toolset as the hooks before it left it, the tool still in it
/// unless one of them took it out. The hook returns the run's toolset.
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
pub trait PrepareTools: Send + Sync {
    /// The run's toolset, `tools` with what this hook changes for `entry`.
    fn prepare(&self, entry: &SharedTool, tools: Toolset) -> Toolset;
}

/// Calls a tool asks a run to make as it starts, before the model's first step (seed 004's
/// `immediate` sub-agents start so).
///
/// The loop asks every tool of the run that offers the hook ([`Tool::start_calls`]), once per
/// run, right after the toolset is prepared ([`PrepareTools`]; see [the module](self)), with:
///
/// - `entry`: the tool as the toolset held it before preparation (its name there);
/// - `tools`: the prepared toolset, the one the calls are made against;
/// - `messages`: the thread as loaded, the caller's answers placed;
/// - `variables`: the run's resolved variables, secrets included: a call's input is recorded in
///   the thread and shown to models, so a secret must never go into one.
///
/// The calls of every tool, in order, make a turn of their own, exactly like a model's step:
/// one assistant message holding them, then their results. Each is prepared (an unknown tool,
/// unparseable or invalid input: an error result), approval and the execution policy apply, and
/// each is journalled and saved as a step's calls are. The turn comes after the loaded thread's
/// interrupted calls are settled and its waiting calls resumed (and that is saved), before the
/// first model step; when a call of it pauses, the run pauses there without calling the model.
/// It is in the run's thread, not among its steps.
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
