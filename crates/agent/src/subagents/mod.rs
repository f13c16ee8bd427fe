//! Sub-agents and prompt tools (as in the Deuz SDK and the Standard Agents spec): an agent or a
//! prompt exposed as a tool, each call a whole run of its loop one level down.
//!
//! - [`SubagentTool`] (`tool`) and its [`SubagentConfig`] (`config`); [`PromptTool`]
//!   (`prompt_tool`), which runs like a blocking sub-agent and shapes its result;
//! - `child_run`: the run one level down that both make;
//! - `background`: non-blocking sub-agents, whose result reaches the parent later;
//! - `instances` and `agent_instances`: resumable sub-agents, driven through `subagent_create`
//!   and `subagent_message`;
//! - `immediate`: sub-agents started before the parent's first model step.
//!
//! The agent loop (`run`) knows nothing of this module: it meets sub-agents only as tools and
//! through the general seams every tool has.
//!
//! - **A call** runs the child agent's loop (`Agent::run_with`), the child's parts forwarded
//!   into the parent's stream as `nested` parts. What the child spent is
//!   reported with [`ToolContext::report_usage`], which the loop folds into the run's usage
//!   after each step. A child that pauses makes the call pause ([`PauseKind::Nested`], its
//!   saved run as the pause's data); the loop records that in the parent's thread, surfaces the
//!   child's pending items, and on resume calls the tool again with the saved run and the
//!   answers in [`ToolContext::resume`].
//! - **A non-blocking child** returns at once; its result, and what a child sends with
//!   [`ToolContext::notify_parent`], goes into the parent run's [`Inbox`]
//!   ([`RunScope::inbox`]), which the loop empties before each model call and waits on when
//!   the model is done while results are still expected.
//! - **A resumable sub-agent** offers a [`PrepareTools`] hook: as the run starts, before
//!   anything reads the toolset or anything is saved, it takes itself out of the run's toolset
//!   and joins the lifecycle tools (see `instances`). Their per-run state (a lock per instance)
//!   lives in those tools; an instance's thread lives in the run's session state.
//! - **An immediate sub-agent** offers a [`StartCalls`] hook: on a thread without a model turn
//!   it asks the run for the call that starts it, which the loop makes as a turn of its own
//!   before the first model step (see `immediate`).
//!
//! [`ToolContext::report_usage`]: toolsmith_core::ToolContext::report_usage
//! [`ToolContext::resume`]: toolsmith_core::ToolContext::resume
//! [`ToolContext::notify_parent`]: toolsmith_core::ToolContext::notify_parent
//! [`PauseKind::Nested`]: toolsmith_core::PauseKind::Nested
//! [`Inbox`]: toolsmith_core::Inbox
//! [`RunScope::inbox`]: toolsmith_core::RunScope::inbox
//! [`PrepareTools`]: toolsmith_core::PrepareTools
//! [`StartCalls`]: toolsmith_core::StartCalls

mod agent_instances;
mod background;
mod child_run;
mod config;
mod immediate;
mod instances;
mod prompt_tool;
mod tool;

pub use config::{Immediate, ImmediateEnv, ParentCommunication, Resumable, Side, SubagentConfig};
pub use instances::{
    SUBAGENT_CREATE, SUBAGENT_ENV_REQUIRED, SUBAGENT_MESSAGE, SUBAGENTS_STATE_KEY,
};
pub use prompt_tool::{PromptTool, SubpromptConfig};
pub use tool::SubagentTool;
