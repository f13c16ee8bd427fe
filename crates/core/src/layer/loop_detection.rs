use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Call, Layer, Next};
use crate::schema::canonical_key;
use crate::{ToolError, ToolOutput};

/// What to do when a call repeats past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopAction {
    /// Answer with a hint instead of running the tool; the run goes on.
    #[default]
    Hint,
    /// Stop the run.
    Abort,
}

/// Loop detection settings, as in RadarOS: a call whose name and canonical arguments have been seen
/// more than `max_repeats` times in the run triggers `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopDetection {
    /// Identical calls allowed per run.
    pub max_repeats: u32,
    /// What happens past that.
    pub action: LoopAction,
}

impl Default for LoopDetection {
    fn default() -> Self {
        LoopDetection {
            max_repeats: 3,
            action: LoopAction::Hint,
        }
    }
}

/// Counts identical calls in one run and stops repeats past the limit.
///
/// Arguments are compared in canonical form, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same
/// call. Messages, exactly as RadarOS has them:
/// - hint: the model receives the *result* `[loop-detected] Tool "<name>" has now been called
///   <k> times with identical arguments. Consider trying a different approach, changing the
///   arguments, or finishing the response.` (code `LOOP_DETECTED`, as an error result);
/// - abort: the run stops with the fatal error `Tool "<name>" was called <k> times with identical
///   arguments - aborting to prevent a loop` (code `TOOL_LOOP`).
///
/// One layer instance belongs to one run: the agent builds a fresh one per run.
#[derive(Debug, Default)]
pub struct LoopDetectionLayer {
    settings: LoopDetection,
    counts: Mutex<HashMap<String, u32>>,
}

impl LoopDetectionLayer {
    /// A detector with fresh counts.
    pub fn new(settings: LoopDetection) -> Self {
        LoopDetectionLayer {
            settings,
            counts: Mutex::default(),
        }
    }
}

#[async_trait::async_trait]
impl Layer for LoopDetectionLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let name = call.cx.tool_name();
        let count = {
            let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
            let count = counts.entry(canonical_key(name, &call.input)).or_insert(0);
            *count += 1;
            *count
        };
        if count <= self.settings.max_repeats {
            return next.run(call).await;
        }
        match self.settings.action {
            LoopAction::Hint => Err(ToolError::new(
                "LOOP_DETECTED",
                format!(
                    "[loop-detected] Tool \"{name}\" has now been called {count} times with identical arguments. \
                     Consider trying a different approach, changing the arguments, or finishing the response."
                ),
            )),
            LoopAction::Abort => Err(ToolError::new(
                "TOOL_LOOP",
                format!(
                    "Tool \"{name}\" was called {count} times with identical arguments - aborting to prevent a loop"
                ),
            )
            .fatal()),
        }
    }
}
