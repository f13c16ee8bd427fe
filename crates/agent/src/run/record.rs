//! What the thread records of each step, beside its messages ([`MessageMeta`], never sent to a
//! model): on the assistant message, the model call that wrote it (the model that answered,
//! its provider, the response's id, the finish reason, the call's own usage, when it started and
//! how long it took); on the tool message, when the step's calls started, how long they took
//! together, and each call's own time. A call whose outcome came from the run's journal (a
//! resumed run) did not run here: it has no time.
//!
//! The tool message's record is written before each save of its results, so that the log holds
//! it as the thread does.

use std::time::Instant;

use toolsmith_core::{MessageMeta, Role};

use super::Run;
use crate::approval::now_millis;
use crate::execute::CallRunner;
use crate::step::ModelTurn;

/// When something started: the wall clock for the record, a monotonic clock for its length.
pub(super) struct Stopwatch {
    started_at: u64,
    started: Instant,
}

impl Stopwatch {
    /// Starts now.
    pub(super) fn start() -> Stopwatch {
        Stopwatch {
            started_at: now_millis(),
            started: Instant::now(),
        }
    }

    /// The ms since it started.
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

impl Run {
    /// The record of a model call that started at `clock` and ended with `turn`.
    pub(super) fn step_meta(&self, turn: &ModelTurn, clock: &Stopwatch) -> MessageMeta {
        let model = &self.agent.model;
        let answered = turn
            .response_model
            .clone()
            .unwrap_or_else(|| model.model_id().to_owned());
        let mut meta = MessageMeta::new()
            .model(answered)
            .finish_reason(turn.finish_reason.unified)
            .usage(turn.usage)
            .timed(clock.started_at, clock.elapsed_ms());
        if !model.provider().is_empty() {
            meta = meta.provider(model.provider());
        }
        if let Some(id) = &turn.response_id {
            meta = meta.response_id(id.clone());
        }
        meta
    }

    /// Records on the step's tool message (the last message) the times of the calls `runner`
    /// has run so far, and, when the message is this execution's own (started at `clock`), how
    /// long its calls have taken. A tool message an earlier run started (results added on
    /// resume) keeps its own start and length.
    pub(super) fn record_times(&mut self, runner: &CallRunner, clock: &Stopwatch) {
        let journal = self.journal.clone();
        let Some(message) = self.request.messages.last_mut() else {
            return;
        };
        if message.role != Role::Tool {
            return;
        }
        let times = runner.take_times();
        let meta = message.meta_mut();
        if meta.started_at.is_none_or(|at| at == clock.started_at) {
            meta.started_at = Some(clock.started_at);
            meta.duration_ms = Some(clock.elapsed_ms());
        }
        for (id, ms) in times {
            if !journal.as_ref().is_some_and(|j| j.was_replayed(&id)) {
                meta.calls.insert(id, ms);
            }
        }
    }
}
