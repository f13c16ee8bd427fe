//! Sub-agents and prompt tools (seeds 002 and 004): an agent or a prompt exposed as a tool,
//! each call a whole run of its loop one level down.

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
