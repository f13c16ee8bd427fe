//! What the run's tools ask of it as it starts: a say in its toolset ([`PrepareTools`]) and
//! calls before the model's first step ([`StartCalls`]).
//!
//! [`Run::new`](super::Run::new) prepares the toolset once the resolver's tools are in and the
//! `optional` tools filtered (only the caller's client-tool results are placed before, against
//! the complete toolset; the waiting and interrupted calls are found, and the thread repaired,
//! against the prepared one). Nothing is saved yet: the first save point is at the start of
//! [`Run::drive`](super::Run::drive). The start calls are asked for right after, and made as a
//! turn of their own by [`Run::make_start_calls`]: after the interrupted calls are settled and
//! the waiting ones resumed (and saved), before the first step. Unlike a step's calls, they are
//! not saved before they run: the turn reaches the log with its results, at the save points of
//! [`Run::execute`].
//!
//! [`PrepareTools`]: toolsmith_core::PrepareTools
//! [`StartCalls`]: toolsmith_core::StartCalls

use toolsmith_core::{
    Message, ModelToolCall, Part, Role, SharedTool, ToolCallPart, Toolset, Variables,
};

use super::Run;
use crate::prepare::prepare;
use crate::{RunErrorKind, StepResult};

/// The run's toolset, prepared by its tools' [`PrepareTools`](toolsmith_core::PrepareTools)
/// hooks in toolset order, and the calls their [`StartCalls`](toolsmith_core::StartCalls)
/// hooks ask for, in the order of
/// the toolset before preparation.
pub(super) fn prepare_tools(
    tools: Toolset,
    messages: &[Message],
    variables: &Variables,
) -> (Toolset, Vec<ModelToolCall>) {
    let entries: Vec<SharedTool> = tools
        .iter()
        .filter(|t| t.prepare_tools().is_some() || t.start_calls().is_some())
        .cloned()
        .collect();
    let tools = entries
        .iter()
        .fold(tools, |tools, entry| match entry.prepare_tools() {
            Some(hook) => hook.prepare(entry, tools),
            None => tools,
        });
    let calls = entries
        .iter()
        .filter_map(|entry| Some((entry, entry.start_calls()?)))
        .flat_map(|(entry, hook)| hook.calls(entry, &tools, messages, variables))
        .collect();
    (tools, calls)
}

impl Run {
    /// Makes the start calls as a turn of their own: an assistant message with the calls, then
    /// their results, as a step's calls (preparation, approval, the execution policy, the
    /// journal and the save points of [`Run::execute`]). The turn is not one of the run's
    /// steps; what the calls' own model runs spent goes into the run's usage.
    pub(super) async fn make_start_calls(
        &mut self,
        calls: Vec<ModelToolCall>,
    ) -> Result<(), RunErrorKind> {
        let prepared: Vec<_> = calls
            .iter()
            .map(|call| prepare(call, &self.tools))
            .collect();
        let parts = prepared
            .iter()
            .map(|call| {
                Part::ToolCall(ToolCallPart {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    input: call.input.clone(),
                    provider_executed: false,
                    provider_metadata: Default::default(),
                })
            })
            .collect();
        self.request
            .messages
            .push(Message::new(Role::Assistant, parts));
        let mut result = StepResult::default();
        self.execute(0, prepared, &mut result).await?;
        self.usage += self.scope.usage.take();
        Ok(())
    }
}
