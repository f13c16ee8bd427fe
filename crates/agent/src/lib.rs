//! The toolsmith agent loop.
//!
//! An [`Agent`] holds a model, instructions, a [`Toolset`](toolsmith_core::Toolset) and an
//! [`ExecutionPolicy`]; [`Agent::run`] drives the loop to its end and returns a [`RunOutput`],
//! [`Agent::stream`] yields the run's [`RunPart`](toolsmith_core::RunPart)s as they happen.
//!
//! A run is a function of its thread. One step builds the request (the tool declarations are
//! serialised once, not per request), streams the model, records the assistant message, prepares
//! each tool call (unknown tool, unparseable JSON, schema violation: an error result, the tool
//! never runs), executes the rest under the execution policy, and appends every result in call
//! order. It stops on a step without tool calls, a stop condition, the step cap, a pending pause
//! or cancellation.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//! use toolsmith_agent::Agent;
//! use toolsmith_core::{from_fn, ToolError};
//! use toolsmith_providers::{ScriptedModel, Turn};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let model = ScriptedModel::new([
//!     Turn::call("add", json!({"a": 2, "b": 3})),
//!     Turn::text("2 + 3 = 5."),
//! ]);
//! let agent = Agent::builder(model)
//!     .instructions("You add numbers.")
//!     .tool(from_fn("add", "Add two integers.", |x: Add, _cx| async move {
//!         Ok::<_, ToolError>(x.a + x.b)
//!     }))
//!     .build();
//!
//! let out = agent.run("What is 2 + 3?").await.unwrap();
//! assert_eq!(out.text, "2 + 3 = 5.");
//! assert_eq!(out.steps.len(), 2);
//! assert_eq!(out.steps[0].tool_results[0].output_value(), Some(&json!(5)));
//! # });
//! ```

mod agent;
mod approval;
pub mod artifacts;
mod attachments;
mod emit;
mod execute;
mod input;
mod journal;
mod output;
mod policy;
mod prepare;
mod repair;
mod resume;
mod router;
mod run;
mod step;
mod stop;
mod stream;
mod subagents;

pub use agent::{Agent, AgentBuilder};
pub use approval::{
    APPROVAL_DENIED, AUTO_APPROVED, ApprovalDecision, ApprovalHandler, ApprovalKey, ApprovalPolicy,
    ApprovalRequest, DENIED_BY_REVIEWER, HANDLER_FAILED, TIMED_OUT, TIMED_OUT_ERROR, TimeoutAction,
};
pub use artifacts::{
    DEFAULT_MAX_TOOL_OUTPUT_BYTES, GET_ARTIFACT, LIST_ARTIFACTS, get_artifact, list_artifacts,
};
pub use attachments::{ATTACHMENTS_PREFIX, Attachments};
pub use input::RunInput;
pub use journal::{
    Committed, DurabilitySnapshot, EFFECT_REVERTED, EFFECT_UNKNOWN, Intent, LogBatch, LoggedCall,
    RunLog, RunLogError, RunState, STORE_FAILED, Settled, SettledCall, ThreadSave,
};
pub use output::{CallOutcome, RunError, RunErrorKind, RunOutput, StepResult, ToolCallResult};
pub use policy::ExecutionPolicy;
pub use repair::repair_orphans;
pub use router::ToolRouter;
pub use stop::{StopCondition, has_tool_call, step_count_is};
pub use stream::RunStream;
pub use subagents::{
    Immediate, ImmediateEnv, ParentCommunication, PromptTool, Resumable, SUBAGENT_CREATE,
    SUBAGENT_ENV_REQUIRED, SUBAGENT_MESSAGE, SUBAGENTS_STATE_KEY, Side, SubagentConfig,
    SubagentTool, SubpromptConfig,
};
