//! Resuming: answering the calls a loaded thread left waiting, before the first step.

use toolsmith_core::{Message, ModelOutput, ModelToolCall, Part, Role, RunPart, ToolError};

use super::Run;
use super::outcome::{emit_outcome, fatal_error, model_output, result_part};
use super::record::Stopwatch;
use super::setup::missing_variables;
use crate::CallOutcome;
use crate::RunErrorKind;
use crate::approval::now_millis;
use crate::execute::cancelled_in_flight;
use crate::prepare::{Action, prepare};
use crate::repair_orphans;
use crate::resume::{Decision, decide};

impl Run {
    /// Answers the calls the loaded thread left waiting, before the first step: approved calls
    /// run (with the reviewer's input, validated again), denied ones get the reason as their
    /// error result, and calls without an answer keep waiting (then the model is not called).
    /// Results and answers go into the tool message after the calls, in call order.
    pub(super) async fn resume(&mut self) -> Result<(), RunErrorKind> {
        let waiting = std::mem::take(&mut self.waiting);
        let answers = std::mem::take(&mut self.answers);
        let results = std::mem::take(&mut self.nested_results);
        let decisions = decide(
            &waiting,
            &answers,
            &results,
            &self.agent.approval,
            now_millis(),
        )
        .map_err(RunErrorKind::Config)?;
        let runner = self.runner(0);
        let clock = Stopwatch::start();
        let mut parts = Vec::new();
        for (index, (waiting, decision)) in waiting.iter().zip(decisions).enumerate() {
            let call = &waiting.call;
            let outcome = match decision {
                Decision::Wait(pause) => {
                    self.pending.push(pause);
                    continue;
                }
                Decision::Deny { reason, answer } => {
                    self.emit.emit(|| RunPart::ToolOutputDenied {
                        tool_call_id: call.tool_call_id.clone(),
                        tool_name: call.tool_name.clone(),
                        reason: Some(reason.clone()),
                    });
                    parts.push(Part::ToolApprovalResponse(answer));
                    // Recorded as a denial with its reason; the model sees `[DENIED] <reason>`.
                    let output = ModelOutput::ExecutionDenied {
                        reason: Some(reason),
                    };
                    parts.push(result_part(&call.tool_call_id, &call.tool_name, output));
                    continue;
                }
                Decision::Fail(error) => CallOutcome::Error(error),
                Decision::Resume(resume) => match self.tools.get(&call.tool_name) {
                    Some(tool) => {
                        let mut job =
                            runner.job(index, &call.tool_call_id, tool.clone(), call.input.clone());
                        job.cx = job.cx.with_resume(resume);
                        tokio::select! {
                            biased;
                            (_, outcome) = runner.run(job) => outcome,
                            () = self.cancel.cancelled() => cancelled_in_flight(),
                        }
                    }
                    None => CallOutcome::Error(ToolError::new(
                        "TOOL_NOT_FOUND",
                        format!(
                            "The sub-agent tool \"{}\" that this paused call belongs to is no \
                             longer available.",
                            call.tool_name
                        ),
                    )),
                },
                Decision::Run { input, answer } => {
                    if let Some(answer) = answer {
                        if answer.always {
                            self.always.insert(call.tool_name.clone());
                        }
                        parts.push(Part::ToolApprovalResponse(answer));
                    }
                    let model_call =
                        ModelToolCall::new(&call.tool_call_id, &call.tool_name, input.to_string());
                    match prepare(&model_call, &self.tools).action {
                        Action::Run(tool)
                            if let Some(error) =
                                missing_variables(&tool, &self.scope.variables.current()) =>
                        {
                            CallOutcome::Error(error)
                        }
                        Action::Run(tool) => {
                            let job = runner.job(index, &call.tool_call_id, tool, input);
                            tokio::select! {
                                biased;
                                (_, outcome) = runner.run(job) => outcome,
                                () = self.cancel.cancelled() => cancelled_in_flight(),
                            }
                        }
                        Action::Fail(error) => CallOutcome::Error(error),
                        Action::Pause(pause) => CallOutcome::Paused(*pause),
                    }
                }
            };
            emit_outcome(
                &self.emit,
                &call.tool_call_id,
                &call.tool_name,
                &call.input,
                &outcome,
            );
            match model_output(&outcome) {
                Some(output) => {
                    parts.push(result_part(&call.tool_call_id, &call.tool_name, output));
                }
                None => {
                    if let CallOutcome::Paused(pause) = outcome {
                        self.note_pause(pause);
                        continue;
                    }
                }
            }
            if let Some(error) = fatal_error(&outcome) {
                return Err(RunErrorKind::Tool(error));
            }
        }
        if !parts.is_empty() {
            // Into the tool message after the calls (or a new one); repair puts the results in
            // call order and leaves the calls that still wait unanswered.
            let messages = &mut self.request.messages;
            match messages.last_mut() {
                Some(last) if last.role == Role::Tool => last.content.extend(parts),
                _ => messages.push(Message::new(Role::Tool, parts)),
            }
            // A sub-agent's pending item waits on the run's own call at the head of its path.
            let still: Vec<&str> = self
                .pending
                .iter()
                .map(|p| p.path.first().unwrap_or(&p.tool_call_id).as_str())
                .collect();
            repair_orphans(messages, &still);
            self.record_times(&runner, &clock);
        }
        self.usage += self.scope.usage.take();
        if self.cancel.is_cancelled() {
            return Err(RunErrorKind::Cancelled);
        }
        Ok(())
    }
}
