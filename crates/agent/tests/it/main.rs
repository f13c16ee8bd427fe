//! The integration tests of `toolsmith-agent`, linked as one test binary: one module per subject
//! of the agent loop (calls, execution, approvals and resuming, stops and pauses, the stream,
//! history, layers, variables, sub-agents, the run log…), with the helpers they share in
//! [`common`]. The tests that read what was logged capture it on their own thread with
//! [`common::Logs::capture`], which other tests running alongside cannot blind.

mod common;

mod approval_callback;
mod approval_resume;
mod approvals;
mod attachments;
mod calls;
mod context_economy;
mod execution;
mod history;
mod hostile_arguments;
mod layers;
mod prompt_tools;
mod resumable_subagents;
mod run_log;
mod smithers_context;
mod snapshot;
mod step_meta;
mod stops_and_pauses;
mod stream;
mod subagents;
mod toolset;
mod unkeyed_warning;
mod variables;
