//! A run with a log: saving the thread at the loop's save points (through its
//! [`Journal`](crate::journal)), and going on after a crash with the calls it interrupted.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::Value;
use toolsmith_core::{Message, ModelToolCall, Part, Role, ToolCallPart, Toolset};

use super::Run;
use crate::execute::CallRunner;
use crate::prepare::prepare;
use crate::resume::WaitingCall;
use crate::{CallOutcome, EFFECT_UNKNOWN, RunErrorKind, RunState, StepResult, ThreadSave};

/// The marker of the Smithers-compatible resume warning; the warning is added once per thread.
pub(crate) const RESUME_WARNING_MARKER: &str = "[smithers:tool-resume-warning]";
/// The most calls the resume warning lists (as in Smithers).
const RESUME_WARNING_MAX: usize = 5;

/// Where the run is when it saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SavePoint {
    /// Going on.
    Progress,
    /// Going on, the step's calls about to run one by one: written with the first call's
    /// intent.
    BeforeCalls,
    /// Done: finished, or paused if calls wait.
    End,
    /// Stopped by an error.
    Failed,
    /// Handed back: still running, released for another process.
    HandedBack,
}

impl Run {
    /// The call runner of `step`.
    pub(super) fn runner(&self, step: u32) -> CallRunner {
        CallRunner {
            stack: self.stack.clone(),
            scope: self.scope.clone(),
            step,
            cancel: self.cancel.clone(),
            times: Default::default(),
        }
    }

    /// Saves the thread in the run's log, if it has one.
    pub(super) async fn save(&mut self, at: SavePoint) -> Result<(), RunErrorKind> {
        let Some(journal) = self.journal.clone() else {
            return Ok(());
        };
        let messages = &self.request.messages[self.prefix..];
        // Past the last assistant message the loop changes messages in place (results go into
        // the tool message, approval requests into the assistant message); before it, never.
        let last_assistant = messages
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .unwrap_or(messages.len());
        let unchanged = self.saved.min(last_assistant).min(messages.len());
        let state = match at {
            SavePoint::Progress | SavePoint::BeforeCalls => RunState::Running,
            SavePoint::Failed => RunState::Failed,
            SavePoint::HandedBack => RunState::HandedBack,
            SavePoint::End if self.pending.is_empty() => RunState::Finished,
            SavePoint::End => RunState::Paused(&self.pending),
        };
        let save = ThreadSave {
            unchanged,
            tail: &messages[unchanged..],
            state,
        };
        match at {
            SavePoint::BeforeCalls => journal.save_with_next_intent(save),
            _ => journal
                .save(save)
                .await
                .map_err(|e| RunErrorKind::Store(e.0))?,
        }
        self.saved = messages.len();
        Ok(())
    }

    /// Runs the calls a crash interrupted as the step that made them would have: validated,
    /// approval asked where needed, and through the journal, which returns a recorded outcome,
    /// runs the call again, or resolves an unsettled side effect. When any effect stays
    /// unknown, the model gets the Smithers resume warning.
    pub(super) async fn run_interrupted(&mut self) -> Result<(), RunErrorKind> {
        let calls = std::mem::take(&mut self.interrupted)
            .into_iter()
            .map(|c| {
                let input = c.input.to_string();
                prepare(
                    &ModelToolCall::new(&c.tool_call_id, &c.tool_name, input),
                    &self.tools,
                )
            })
            .collect();
        let step = u32::try_from(self.steps.len()).unwrap_or(u32::MAX);
        let mut result = StepResult {
            step,
            ..Default::default()
        };
        let executed = self.execute(step, calls, &mut result).await;
        self.merge_tool_messages();
        executed?;
        let unknown: Vec<String> = result
            .tool_results
            .iter()
            .filter_map(|r| match &r.outcome {
                CallOutcome::Error(e) if e.code() == EFFECT_UNKNOWN => {
                    let field = |name: &str| {
                        e.details()
                            .and_then(|d| d.get(name))
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    };
                    Some(format!(
                        "- {} (attempt {}, seq {}, status unknown)",
                        r.tool_name,
                        field("attempt"),
                        field("seq")
                    ))
                }
                _ => None,
            })
            .collect();
        if !unknown.is_empty() && !self.has_resume_warning() {
            self.request
                .messages
                .push(Message::user(resume_warning(&unknown)));
        }
        self.save(SavePoint::Progress).await
    }

    /// The interrupted calls' results went into a tool message of their own: one tool message
    /// follows the calls (with the earlier message's record, and the calls' times of both).
    fn merge_tool_messages(&mut self) {
        let messages = &mut self.request.messages;
        let n = messages.len();
        if n >= 2 && messages[n - 1].role == Role::Tool && messages[n - 2].role == Role::Tool {
            let last = messages.pop().expect("two messages");
            let earlier = &mut messages[n - 2];
            earlier.content.extend(last.content);
            earlier.merge_meta(last.meta);
        }
    }

    fn has_resume_warning(&self) -> bool {
        self.request.messages.iter().any(|m| {
            m.content.iter().any(
                |p| matches!(p, Part::Text { text, .. } if text.contains(RESUME_WARNING_MARKER)),
            )
        })
    }
}

/// The Smithers resume warning, listing at most five calls.
fn resume_warning(calls: &[String]) -> String {
    let mut lines = vec![
        format!(
            "{RESUME_WARNING_MARKER} Previous attempts in this task already called \
             non-idempotent side-effect tools."
        ),
        "Those side effects may already have happened before the interruption or retry."
            .to_string(),
        "Do not blindly call them again. Verify external state first or continue from the \
         prior result."
            .to_string(),
        "toolsmith will reuse the same idempotency key when a call is retried.".to_string(),
        "Previously called tools:".to_string(),
    ];
    lines.extend(calls.iter().take(RESUME_WARNING_MAX).cloned());
    if calls.len() > RESUME_WARNING_MAX {
        lines.push(format!(
            "- ...and {} more",
            calls.len() - RESUME_WARNING_MAX
        ));
    }
    lines.join("\n")
}

/// The calls of the thread's last assistant message that have no result and wait for no
/// answer: a crash interrupted them.
pub(super) fn interrupted_calls(
    messages: &[Message],
    waiting: &[WaitingCall],
) -> Vec<ToolCallPart> {
    let Some(last) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    if messages[last + 1..].iter().any(|m| m.role != Role::Tool) {
        return Vec::new();
    }
    let answered = |id: &str| {
        messages[last + 1..]
            .iter()
            .flat_map(|m| m.tool_results_iter())
            .any(|r| r.tool_call_id == id)
    };
    messages[last]
        .tool_calls()
        .filter(|c| !c.provider_executed && !answered(&c.tool_call_id))
        .filter(|c| {
            !waiting
                .iter()
                .any(|w| w.call.tool_call_id == c.tool_call_id)
        })
        .cloned()
        .collect()
}

/// Smithers' warning, once per tool name per process: a tool that changes the world, is not
/// safe to repeat and does not read its idempotency key cannot let a service deduplicate a
/// retried call, so after a crash during one the model is asked what to do. Logged when a
/// run with a log starts (only such runs retry), not when the tool is defined: a Rust tool's
/// metadata is set after it is made.
pub(super) fn warn_unkeyed_side_effects(tools: &Toolset) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let unkeyed = tools.iter().filter(|tool| {
        let meta = tool.meta();
        meta.side_effect && !meta.is_idempotent() && !meta.accepts_idempotency_key
    });
    for tool in unkeyed {
        let name = tool.spec().name();
        let first = WARNED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_default()
            .insert(name.to_string());
        if first {
            tracing::warn!(
                "[toolsmith] tool {name}: side_effect: true, idempotent: false tools should read \
                 ToolContext::idempotency_key() (and declare accepts_idempotency_key) so that a \
                 retried call can be deduplicated."
            );
        }
    }
}

/// How many leading messages two threads share.
pub(super) fn common_prefix(a: &[Message], b: &[Message]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_lists_five_calls_and_counts_the_rest() {
        let calls: Vec<String> = (1..=7)
            .map(|i| format!("- pay (attempt 1, seq {i}, status unknown)"))
            .collect();
        let text = resume_warning(&calls);
        assert!(text.starts_with(
            "[smithers:tool-resume-warning] Previous attempts in this task already called \
             non-idempotent side-effect tools.\n"
        ));
        assert!(text.contains("seq 5,"));
        assert!(!text.contains("seq 6,"));
        assert!(text.ends_with("- ...and 2 more"));
    }
}
