//! Stop conditions: when a run ends although the model still calls tools.

use crate::StepResult;

/// Decides after each step whether the run stops. Any `Fn(&[StepResult]) -> bool` is one.
///
/// ```
/// use toolsmith_agent::{has_tool_call, step_count_is, StopCondition, StepResult};
///
/// let stop = step_count_is(3);
/// assert!(!stop.should_stop(&[]));
/// let custom = |steps: &[StepResult]| steps.iter().any(|s| s.text.contains("DONE"));
/// assert!(!custom.should_stop(&[]));
/// let _ = has_tool_call("final_answer");
/// ```
pub trait StopCondition: Send + Sync + 'static {
    /// Whether to stop, given every step so far.
    fn should_stop(&self, steps: &[StepResult]) -> bool;
}

impl<F> StopCondition for F
where
    F: Fn(&[StepResult]) -> bool + Send + Sync + 'static,
{
    fn should_stop(&self, steps: &[StepResult]) -> bool {
        self(steps)
    }
}

/// Stops once `count` steps have run.
pub fn step_count_is(count: usize) -> impl StopCondition {
    move |steps: &[StepResult]| steps.len() >= count
}

/// Stops after a step that called the named tool.
pub fn has_tool_call(name: impl Into<String>) -> impl StopCondition {
    let name = name.into();
    move |steps: &[StepResult]| {
        steps
            .last()
            .is_some_and(|s| s.tool_calls.iter().any(|c| c.tool_name == name))
    }
}
