//! [`ExecutionPolicy`]: how the tool calls of one step run.

/// How the tool calls of one step run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionPolicy {
    /// One at a time, in the order the model returned them; each result is appended to the thread
    /// before the next call starts (the Standard Agents spec's conformance rule). The default.
    #[default]
    Sequential,
    /// Up to `max` calls at once. A tool whose concurrency is
    /// [`Exclusive`](toolsmith_core::Concurrency::Exclusive) is a barrier: every earlier call
    /// finishes before it starts, and no later call starts until it has finished. Results are
    /// still appended in call order.
    Parallel {
        /// The most calls in flight at once (at least 1).
        max: usize,
    },
}

impl ExecutionPolicy {
    /// `Parallel` with the default window of 5 (as in the Deuz SDK and RadarOS).
    pub fn parallel() -> Self {
        ExecutionPolicy::Parallel { max: 5 }
    }
}
