//! Sending run parts only when someone listens.

use toolsmith_core::{EventSink, RunPart};

/// The run's outlet for [`RunPart`]s. With no listener ([`Agent::run`](crate::Agent::run)),
/// parts are never even built.
#[derive(Clone)]
pub(crate) struct Emitter {
    sink: EventSink,
    active: bool,
}

impl Emitter {
    pub(crate) fn new(sink: EventSink) -> Self {
        let active = sink.is_active();
        Emitter { sink, active }
    }

    /// Builds and sends a part, if anyone listens.
    pub(crate) fn emit(&self, part: impl FnOnce() -> RunPart) {
        if self.active {
            self.sink.send(part());
        }
    }
}
