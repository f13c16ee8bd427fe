//! [`StoredRun`]'s [`RunLog::commit`]: one batch of the run's journal as one store commit, and
//! the fate of the call about to execute, decided from what the journal and the ledger hold.

use serde_json::{Value, json};
use toolsmith_agent::{
    CallOutcome, Committed, EFFECT_UNKNOWN, Intent, LogBatch, LoggedCall, RunLog, RunLogError,
    RunState, Settled, SettledCall,
};
use toolsmith_core::{Pause, ToolError, ToolOutput, async_trait};

use super::{StoredRun, failed, lock};
use crate::{Batch, Claim, EffectStatus, JournalEntry, Settlement, ThreadStatus, ThreadWrite};

/// What the store writes for the call about to execute.
enum Planned {
    /// Nothing: there is no such call in the batch.
    Nothing,
    /// Nothing: an earlier attempt recorded this outcome.
    Recorded(CallOutcome),
    /// A new attempt's intent (with its key's claim when it is unsafe to repeat).
    Attempt(JournalEntry),
    /// Nothing yet: a new attempt of a call without side effects, recorded with its outcome.
    Later(JournalEntry),
    /// The key of an attempt a crash interrupted, claimed again: the ledger decides.
    Claim(JournalEntry),
    /// Nothing, and the run stops: the call's id was used before for another call.
    Refused(RunLogError),
}

#[async_trait]
impl RunLog for StoredRun {
    async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError> {
        if batch.is_empty() {
            return Ok(Committed::default());
        }
        let settled: Vec<JournalEntry> = batch
            .settled
            .iter()
            .map(|s| self.settled_entry(s))
            .collect::<Result<_, _>>()?;
        let planned = match batch.intend.map(|call| (call, self.plan(call))) {
            None => Planned::Nothing,
            Some((call, Planned::Attempt(entry))) if !call.side_effect => Planned::Later(entry),
            Some((_, planned)) => planned,
        };
        let (version, count) = *lock(&self.written);
        // A call recorded only here is recorded now, as it ended; the others are settled.
        let recorded_now: Vec<bool> = {
            let unwritten = lock(&self.unwritten);
            settled
                .iter()
                .map(|entry| unwritten.contains(&entry.tool_call_id))
                .collect()
        };
        // The run's end settles its event in the same commit (`with_event_end`).
        let event_end = match (&self.event_end, &batch.save) {
            (Some(ending), Some(save)) if ends(save.state) => ending(save.state, save.tail),
            _ => None,
        };
        // An interrupted call's key, claimed again (the ledger's key, never the Smithers one
        // the call may share with others).
        let claim_key = match &planned {
            Planned::Claim(entry) => Some(entry.ledger_key()),
            _ => None,
        };
        let mut ops = Batch::new();
        for (entry, _) in settled.iter().zip(&recorded_now).filter(|(_, now)| !**now) {
            ops = ops.settle(settlement(entry));
        }
        // A save that changes nothing — no new message, still running, as the thread has been
        // since the claim — is not written (the run's first save point, after a start).
        let save = batch.save.as_ref().filter(|save| {
            !(save.state == RunState::Running
                && save.tail.is_empty()
                && save.unchanged as u64 == count)
        });
        if let Some(save) = save {
            if save.unchanged as u64 > count {
                return Err(RunLogError::new(format!(
                    "the run saved thread {} taking {} messages as written, but {count} are",
                    self.thread, save.unchanged
                )));
            }
            let (status, pending) = thread_state(save.state);
            ops = ops.write(ThreadWrite {
                thread: &self.thread,
                expected: version,
                keep: save.unchanged as u64,
                messages: save.tail,
                status,
                pending,
            });
            // Handed back: still running, held by no process.
            if save.state == RunState::HandedBack {
                ops = ops.release(&self.thread);
            }
            if let Some(end) = &event_end {
                ops = ops.settle_event(end);
            }
        }
        // After the write: `[Write, Intend]` is one statement where a backend has such shapes.
        for (entry, _) in settled.iter().zip(&recorded_now).filter(|(_, now)| **now) {
            ops = ops.intend(entry);
        }
        if let Planned::Attempt(entry) = &planned {
            ops = ops.intend(entry);
        }
        if let Some(key) = &claim_key {
            ops = ops.claim_key(key, &self.thread);
        }
        let committed = match ops.is_empty() {
            true => crate::Committed::default(),
            false => self.store.commit(ops).await.map_err(failed)?,
        };
        if recorded_now.contains(&true) {
            let mut unwritten = lock(&self.unwritten);
            for entry in &settled {
                unwritten.remove(&entry.tool_call_id);
            }
        }
        for entry in settled {
            self.remember(entry);
        }
        if let (Some(save), Some(next)) = (save, committed.version) {
            *lock(&self.written) = (next, (save.unchanged + save.tail.len()) as u64);
        }
        // The planned call's claim comes last.
        let claim = committed.claims.into_iter().last().unwrap_or(Claim::New);
        let intent = match planned {
            Planned::Nothing => return Ok(Committed::default()),
            Planned::Refused(e) => return Err(e),
            Planned::Recorded(outcome) => Intent::Recorded(Box::new(outcome)),
            Planned::Attempt(entry) => {
                self.remember(entry.clone());
                self.decide(entry, claim).await?
            }
            Planned::Later(entry) => {
                lock(&self.unwritten).insert(entry.tool_call_id.clone());
                self.remember(entry);
                Intent::Execute
            }
            Planned::Claim(entry) => self.decide(entry, claim).await?,
        };
        Ok(Committed {
            intent: Some(intent),
        })
    }
}

impl StoredRun {
    /// What to write for `call`, from this run's journal.
    fn plan(&self, call: &LoggedCall) -> Planned {
        let Some(latest) = self.latest(&call.tool_call_id) else {
            return Planned::Attempt(self.new_entry(call, 1, self.next_seq()));
        };
        if latest.tool_name != call.tool_name || latest.input != call.input {
            return Planned::Refused(RunLogError::new(format!(
                "tool call id {} of run {} was used before for another call ({}); the journal \
                 cannot tell the two apart",
                call.tool_call_id, self.run_id, latest.tool_name
            )));
        }
        match latest.status {
            EffectStatus::Succeeded | EffectStatus::Failed | EffectStatus::Unknown => {
                let output = latest.output.unwrap_or(Value::Null);
                Planned::Recorded(outcome_of(latest.status, &output))
            }
            // Started, never settled: the process died during the call.
            EffectStatus::Intended if call.unsafe_to_repeat() => Planned::Claim(latest),
            EffectStatus::Intended => {
                Planned::Attempt(self.new_entry(call, latest.attempt + 1, latest.seq))
            }
        }
    }

    /// The journal entry of a new attempt of `call`, intended.
    fn new_entry(&self, call: &LoggedCall, attempt: u32, seq: u64) -> JournalEntry {
        JournalEntry {
            thread_id: self.thread.clone(),
            run_id: self.run_id.clone(),
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            seq,
            attempt,
            input: call.input.clone(),
            side_effect: call.side_effect,
            idempotent: call.idempotent,
            idempotency_key: call.idempotency_key.clone(),
            accepts_idempotency_key: call.accepts_idempotency_key,
            has_revert: call.has_revert,
            status: EffectStatus::Intended,
            output: None,
        }
    }

    /// What a claim of the call's key decides.
    async fn decide(&self, entry: JournalEntry, claim: Claim) -> Result<Intent, RunLogError> {
        match claim {
            Claim::New => Ok(Intent::Execute),
            Claim::Existing {
                status:
                    status @ (EffectStatus::Succeeded | EffectStatus::Failed | EffectStatus::Unknown),
                output: Some(output),
            } => {
                // Settled under this key, but not in this journal entry (a crash between the
                // two writes, where a backend has no transactions): the journal catches up, the
                // call does not run again.
                let mut entry = entry;
                entry.status = status;
                entry.output = Some(output.clone());
                let batch = Batch::new().settle(settlement(&entry));
                self.store.commit(batch).await.map_err(failed)?;
                self.remember(entry);
                Ok(Intent::Recorded(Box::new(outcome_of(status, &output))))
            }
            Claim::Existing { .. } => Ok(Intent::Unsettled {
                attempt: entry.attempt,
                seq: entry.seq,
            }),
        }
    }

    /// The journal entry of a call that ended, as it stands once settled.
    fn settled_entry(&self, done: &SettledCall) -> Result<JournalEntry, RunLogError> {
        let (status, output) = match &done.settled {
            Settled::Succeeded(output) => (
                EffectStatus::Succeeded,
                serde_json::to_value(output).map_err(|e| RunLogError::new(e.to_string()))?,
            ),
            Settled::Failed(e) => (EffectStatus::Failed, error_json(e)),
            Settled::Unknown(e) => (EffectStatus::Unknown, error_json(e)),
        };
        let id = &done.call.tool_call_id;
        let mut entry = self.latest(id).ok_or_else(|| {
            RunLogError::new(format!("call {id} was settled without being intended"))
        })?;
        entry.status = status;
        entry.output = Some(output);
        Ok(entry)
    }
}

/// Whether a save in `state` ends the run.
fn ends(state: RunState<'_>) -> bool {
    matches!(
        state,
        RunState::Finished | RunState::Paused(_) | RunState::Failed
    )
}

/// The thread's status, and what it waits for, where the run stands.
fn thread_state<'a>(state: RunState<'a>) -> (ThreadStatus, &'a [Pause]) {
    match state {
        RunState::Running | RunState::HandedBack => (ThreadStatus::Running, &[]),
        RunState::Paused(pending) => (ThreadStatus::Paused, pending),
        RunState::Finished => (ThreadStatus::Idle, &[]),
        RunState::Failed => (ThreadStatus::Failed, &[]),
    }
}

/// A settled journal entry as the store takes it.
fn settlement(entry: &JournalEntry) -> Settlement<'_> {
    static NULL: Value = Value::Null;
    Settlement {
        entry,
        status: entry.status,
        output: entry.output.as_ref().unwrap_or(&NULL),
    }
}

/// How the journal keeps an error: what the model saw of it.
fn error_json(e: &ToolError) -> Value {
    json!({"code": e.code(), "message": e.message()})
}

/// The outcome a settled journal entry (or ledger key) recorded.
fn outcome_of(status: EffectStatus, output: &Value) -> CallOutcome {
    if status == EffectStatus::Succeeded
        && let Ok(output) = serde_json::from_value::<ToolOutput>(output.clone())
    {
        return CallOutcome::Output(output);
    }
    let text = |key: &str| output.get(key).and_then(Value::as_str).map(str::to_string);
    let code = text("code").unwrap_or_else(|| EFFECT_UNKNOWN.to_string());
    let message = text("message").unwrap_or_else(|| {
        "The outcome of this call was recorded in a form this version cannot read.".to_string()
    });
    CallOutcome::Error(ToolError::new(code, message))
}
