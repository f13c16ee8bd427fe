//! One run of the loop.

mod answer;
mod durable;
mod outcome;
mod record;
mod setup;
mod start;
pub(crate) mod telemetry;

use std::collections::HashSet;
use std::sync::Arc;

use toolsmith_core::layer::LayerStack;
use toolsmith_core::{
    CancellationToken, ErrorInfo, EventSink, FinishReason, Message, ModelError, ModelErrorKind,
    ModelRequest, ModelToolCall, Pause, Role, RunPart, RunScope, ToolApprovalResponse,
    ToolCallPart, ToolError, ToolResultPart, Toolset, Usage,
};

use futures::FutureExt;
use futures::future::{join, join_all};
use tracing::Instrument;

use crate::agent::AgentInner;
use crate::approval;
use crate::emit::Emitter;
use crate::execute::cancelled_in_flight;
use crate::input::flag_is_on;
use crate::journal::Journal;
use crate::output::model_error_code;
use crate::prepare::{Action, PreparedCall};
use crate::resume::{WaitingCall, always_approved, place_results, waiting_calls};
use crate::step::{ModelTurn, consume};
use durable::SavePoint;
use outcome::{
    apply_verdict, approval_pause, emit_outcome, fatal_error, model_output, reporter, result_part,
    verdict_outcome,
};
use record::Stopwatch;
use setup::{Sources, missing_variables, not_started, variable_cell};

use crate::{
    CallOutcome, ExecutionPolicy, RunError, RunErrorKind, RunInput, RunOutput, StepResult,
    ToolCallResult, repair_orphans,
};

/// The result given to calls that never ran because the run stopped first.
const NOT_RUN_FATAL: &str =
    "Not executed: the run stopped after a fatal error in another tool call.";
const NOT_RUN_ABORTED: &str = "Not executed: the run was cancelled.";
/// The reason of the abort part a run handed back ends its stream with.
const HANDED_BACK: &str =
    "The run was handed back: it goes on where it stopped in another process.";

/// A run in progress.
pub(crate) struct Run {
    agent: Arc<AgentInner>,
    scope: Arc<RunScope>,
    tools: Toolset,
    stack: Arc<LayerStack>,
    request: ModelRequest,
    /// How many instruction messages lead `request.messages`.
    prefix: usize,
    input_len: usize,
    steps: Vec<StepResult>,
    usage: Usage,
    finish_reason: FinishReason,
    pending: Vec<Pause>,
    /// Calls of the loaded thread that wait for an answer, and the caller's approval answers.
    waiting: Vec<WaitingCall>,
    answers: Vec<ToolApprovalResponse>,
    /// The caller's results for client calls waiting inside paused sub-agents.
    nested_results: Vec<ToolResultPart>,
    /// Tools approved with `always` in this thread.
    always: HashSet<String>,
    cancel: CancellationToken,
    /// Hands the run back ([`RunInput::handback`]): no model call after it fires.
    handback: CancellationToken,
    emit: Emitter,
    /// Calls the tools asked the run to make before the first step
    /// ([`StartCalls`](toolsmith_core::StartCalls)).
    start_calls: Vec<ModelToolCall>,
    /// The tools not offered in the last request ([`Tool::offered`](toolsmith_core::Tool)).
    hidden: Vec<String>,
    /// The tools the run declares: all of `tools`, or the router's pick.
    declared: Toolset,
    /// The run's journal, when it has a log.
    journal: Option<Arc<Journal>>,
    /// How many leading messages (after the instructions) the log holds as they are.
    saved: usize,
    /// Calls of the loaded thread that a crash interrupted (a run with a log): run again
    /// under the journal before anything else.
    interrupted: Vec<ToolCallPart>,
}

impl Run {
    pub(crate) async fn new(
        agent: Arc<AgentInner>,
        input: RunInput,
        events: EventSink,
    ) -> Result<Run, RunError> {
        let RunInput {
            mut messages,
            run_id,
            thread_id,
            metadata,
            state,
            deps,
            variables,
            approvals,
            tool_results,
            start_calls: asked,
            inherited,
            defaults,
            parent,
            cancellation,
            handback,
            log,
        } = input;
        let sources = Sources {
            defaults: &defaults,
            inherited: inherited.as_ref(),
            own: &variables,
        };
        let run_id = run_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let cancel = cancellation.unwrap_or_default();
        let mut tools = agent.tools();
        let scope = Arc::new(RunScope {
            variables: variable_cell(&agent, &sources, &tools),
            run_id: run_id.as_str().into(),
            thread_id: thread_id.map(Into::into),
            metadata: Arc::new(metadata),
            state,
            deps: deps.unwrap_or_default(),
            events: events.clone(),
            parent,
            ..Default::default()
        });
        let missing = scope.variables.current().missing(&agent.declared);
        if !missing.is_empty() {
            let message = format!(
                "VARIABLES_REQUIRED: the agent needs the variable{} {}, which {} not set.",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" },
            );
            return Err(not_started(message, run_id, messages));
        }
        let mut scope = scope;
        if let Some(resolver) = &agent.resolver {
            match resolver.resolve(&scope).await {
                Ok(resolved) => {
                    tools = tools.with_resolved(resolved);
                    // The resolved tools' declarations count too (their secrets are masked).
                    scope = Arc::new(RunScope {
                        variables: variable_cell(&agent, &sources, &tools),
                        ..(*scope).clone()
                    });
                }
                Err(e) => {
                    let message = format!("The tool resolver failed: {e}");
                    return Err(not_started(message, run_id, messages));
                }
            }
        }
        // A flag resolves like any variable (the run's own, the agent's, inherited, defaults):
        // reading only the run's own values ignored a flag the agent or a config set.
        if tools.iter().any(|t| t.meta().optional.is_some()) {
            let resolved = scope.variables.current();
            tools = tools.filter(|t| {
                t.meta()
                    .optional
                    .as_deref()
                    .is_none_or(|flag| resolved.get(flag).is_some_and(flag_is_on))
            });
        }

        // With a log, what the run changes of its input is saved first.
        let loaded = log.as_ref().map(|_| messages.clone());
        let nested_results = match place_results(&mut messages, tool_results, &tools) {
            Ok(nested) => nested,
            Err(message) => return Err(not_started(message, run_id, messages)),
        };
        let (tools, mut start_calls) =
            start::prepare_tools(tools, &messages, &scope.variables.current());
        start_calls.extend(asked);
        // Calls waiting for an answer are not orphans: repair leaves them unanswered.
        let waiting = waiting_calls(&messages, &tools);
        // With a log, calls a crash interrupted are neither orphans: the journal decides what
        // becomes of them.
        let interrupted = match &log {
            Some(_) => {
                durable::warn_unkeyed_side_effects(&tools);
                durable::interrupted_calls(&messages, &waiting)
            }
            None => Vec::new(),
        };
        let ids: Vec<&str> = waiting
            .iter()
            .map(|w| w.call.tool_call_id.as_str())
            .chain(interrupted.iter().map(|c| c.tool_call_id.as_str()))
            .collect();
        repair_orphans(&mut messages, &ids);
        let saved = loaded.map_or(0, |loaded| durable::common_prefix(&loaded, &messages));
        let input_len = messages.len();
        let always = always_approved(&messages, &agent.approval.key);

        let resumed = waiting
            .iter()
            .map(|w| w.call.tool_name.clone())
            .chain(interrupted.iter().map(|c| c.tool_name.clone()));
        let (declared, routing) = setup::declared(&agent, &tools, &messages, resumed).await;
        let mut request = ModelRequest {
            tools: declared.declarations(),
            tool_choice: agent.tool_choice.clone(),
            settings: agent.settings.clone(),
            ..Default::default()
        };
        setup::parallel_tool_calls(&mut request, &agent);
        let prefix = usize::from(agent.instructions.is_some());
        if let Some(instructions) = &agent.instructions {
            request.messages.push(Message::system(instructions.clone()));
        }
        request.messages.extend(messages);

        let journal = log.map(|log| Arc::new(Journal::new(log, agent.snapshot.is_some())));
        Ok(Run {
            stack: agent.run_stack(journal.as_ref()),
            agent,
            scope,
            tools,
            request,
            prefix,
            input_len,
            steps: Vec::new(),
            usage: routing,
            finish_reason: FinishReason::default(),
            pending: Vec::new(),
            waiting,
            answers: approvals,
            nested_results,
            always,
            cancel,
            handback: handback.unwrap_or_default(),
            emit: Emitter::new(events),
            start_calls,
            hidden: Vec::new(),
            declared,
            journal,
            saved,
            interrupted,
        })
    }

    /// Drives the loop to its end, in the run's `invoke_agent` span.
    pub(crate) async fn drive(self) -> Result<RunOutput, RunError> {
        let span = telemetry::run_span(&self.agent, &self.scope);
        let inbox = self.scope.inbox.clone();
        // Boxed: the loop's future is ~4.9 KiB, and moving it into `Instrumented` and that into
        // this future copied it twice per run, and this future (~6.4 KiB with it inline) once
        // more into the caller's; ~16 KiB of copies and of stack a run touched, for one
        // allocation.
        let result = Box::pin(self.drive_in_span())
            .instrument(span.clone())
            .await;
        telemetry::record_run(&span, &result, inbox.expected());
        result
    }

    async fn drive_in_span(mut self) -> Result<RunOutput, RunError> {
        let run_id = self.scope.run_id.to_string();
        self.emit.emit(|| RunPart::Start { run_id });
        if let Err(kind) = self.drive_steps().await {
            // Best effort: the log keeps the thread as the failure left it (a run handed back:
            // as it stopped, for another process to go on with).
            let at = match kind {
                RunErrorKind::HandedBack => SavePoint::HandedBack,
                _ => SavePoint::Failed,
            };
            if let Err(e) = self.save(at).await {
                tracing::error!(error = ?e, "the run log could not record the failed run");
            }
            return Err(self.fail(kind));
        }
        if let Err(kind) = self.save(SavePoint::End).await {
            return Err(self.fail(kind));
        }
        let (usage, finish_reason) = (self.usage, self.finish_reason.unified);
        self.emit.emit(|| RunPart::Finish {
            usage,
            finish_reason,
        });
        Ok(self.into_output())
    }

    async fn drive_steps(&mut self) -> Result<(), RunErrorKind> {
        self.save(SavePoint::Progress).await?;
        if !self.interrupted.is_empty() {
            self.run_interrupted().await?;
        }
        if !self.waiting.is_empty() || !self.answers.is_empty() {
            self.resume().await?;
            self.save(SavePoint::Progress).await?;
        }
        let start_calls = std::mem::take(&mut self.start_calls);
        if !start_calls.is_empty() {
            self.make_start_calls(start_calls).await?;
        }
        // Calls still waiting: the model is not called until they are answered.
        let max_steps = if self.pending.is_empty() {
            self.agent.max_steps
        } else {
            0
        };
        for step in 0..max_steps {
            if !self.step(step).await? {
                break;
            }
        }
        Ok(())
    }

    /// Runs one step; `Ok(true)` to go on.
    async fn step(&mut self, step: u32) -> Result<bool, RunErrorKind> {
        if let Some(kind) = self.stop_asked() {
            return Err(kind);
        }
        self.emit.emit(|| RunPart::StartStep { step });
        // Results of non-blocking sub-agents that arrived since the last step.
        self.request.messages.extend(self.scope.inbox.take());
        self.refresh_offered();
        let clock = Stopwatch::start();
        let turn = self.call_model().await?;
        let meta = self.step_meta(&turn, &clock);
        self.usage += turn.usage;
        self.finish_reason = turn.finish_reason.clone();

        let mut result = StepResult {
            step,
            text: turn.text(),
            reasoning: turn.reasoning(),
            tool_calls: turn.tool_calls(),
            sources: turn.sources(),
            usage: turn.usage,
            finish_reason: turn.finish_reason.clone(),
            tool_results: Vec::new(),
            warnings: turn.warnings.clone(),
        };
        let ModelTurn { content, calls, .. } = turn;
        let message = Message::new(Role::Assistant, content).with_meta(meta);
        self.request.messages.push(message);
        let had_calls = !calls.is_empty();
        // The step's calls are on record before any of them runs.
        if had_calls {
            let at = match self.agent.policy {
                ExecutionPolicy::Sequential => SavePoint::BeforeCalls,
                ExecutionPolicy::Parallel { .. } => SavePoint::Progress,
            };
            self.save(at).await?;
        }
        let executed = self.execute(step, calls, &mut result).await;
        // What the step's sub-agents spent, into the run's total (not the step's: that is the
        // model call's own).
        self.usage += self.scope.usage.take();

        let (usage, unified, raw) = (
            result.usage,
            result.finish_reason.unified,
            result.finish_reason.raw.clone(),
        );
        self.emit.emit(|| RunPart::FinishStep {
            step,
            usage,
            finish_reason: unified,
            raw_finish_reason: raw,
        });
        self.steps.push(result);
        executed?;
        let stop_condition = self
            .agent
            .stop_when
            .iter()
            .any(|c| c.should_stop(&self.steps));
        if !self.pending.is_empty() || stop_condition {
            return Ok(false);
        }
        if had_calls {
            return Ok(true);
        }
        // The model is done; non-blocking sub-agents still running get the last word: wait for
        // their results and go on with them (as in the Standard Agents spec: results queued to the
        // parent).
        if self.scope.inbox.is_idle() {
            return Ok(false);
        }
        tokio::select! {
            biased;
            kind = self.stopped() => return Err(kind),
            () = self.scope.inbox.changed() => {}
        }
        Ok(!self.scope.inbox.is_idle())
    }

    /// Declares the tools again when the set of tools that hide themselves
    /// ([`Tool::offered`](toolsmith_core::Tool::offered)) changed.
    fn refresh_offered(&mut self) {
        let hidden: Vec<String> = self
            .declared
            .iter()
            .filter(|t| !t.offered(&self.scope))
            .map(|t| t.spec().name().to_string())
            .collect();
        if hidden != self.hidden {
            self.request.tools = self
                .declared
                .clone()
                .filter(|t| !hidden.iter().any(|h| h == t.spec().name()))
                .declarations();
            setup::parallel_tool_calls(&mut self.request, &self.agent);
            self.hidden = hidden;
        }
    }

    /// Whether the run was asked to stop before its next model call: cancelled, or handed back.
    fn stop_asked(&self) -> Option<RunErrorKind> {
        if self.cancel.is_cancelled() {
            Some(RunErrorKind::Cancelled)
        } else if self.handback.is_cancelled() {
            Some(RunErrorKind::HandedBack)
        } else {
            None
        }
    }

    /// Resolves once the run is asked to stop ([`stop_asked`](Self::stop_asked)): why.
    async fn stopped(&self) -> RunErrorKind {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => RunErrorKind::Cancelled,
            () = self.handback.cancelled() => RunErrorKind::HandedBack,
        }
    }

    /// Streams the model, unless the run is cancelled or handed back first (a model call
    /// changes nothing: the process that resumes the run makes it again).
    async fn call_model(&mut self) -> Result<ModelTurn, RunErrorKind> {
        let model = self.agent.model.clone();
        let span = telemetry::chat_span(&self.agent);
        let call = async {
            let stream = model.stream(&self.request).await?;
            consume(stream, &self.tools, &self.emit, &span).await
        }
        .instrument(span.clone())
        .inspect(|result| telemetry::record_chat(&span, result));
        tokio::select! {
            biased;
            kind = self.stopped() => Err(kind),
            result = call => result.map_err(|e: ModelError| match e.kind {
                ModelErrorKind::Cancelled => RunErrorKind::Cancelled,
                _ => RunErrorKind::Model(e),
            }),
        }
    }

    /// Executes a step's calls under the policy and records every result in call order.
    async fn execute(
        &mut self,
        step: u32,
        calls: Vec<PreparedCall>,
        result: &mut StepResult,
    ) -> Result<(), RunErrorKind> {
        if calls.is_empty() {
            return Ok(());
        }
        let runner = self.runner(step);
        // Sequential execution saves each result as soon as its call ends.
        if let Some(journal) = &self.journal {
            journal.outcomes_wait_for_save(self.agent.policy == ExecutionPolicy::Sequential);
        }
        // The results go into one tool message right after the assistant message.
        self.request
            .messages
            .push(Message::new(Role::Tool, Vec::new()));
        let clock = Stopwatch::start();
        let mut outcomes: Vec<Option<CallOutcome>> = vec![None; calls.len()];
        let mut jobs = Vec::new();
        // Callback mode: the calls the approval handler decides, and its answers to record.
        let handler = self.agent.approval.handler.clone();
        let (mut asks, mut answers) = (Vec::new(), vec![None; calls.len()]);
        for (index, call) in calls.iter().enumerate() {
            match &call.action {
                Action::Fail(e) => outcomes[index] = Some(CallOutcome::Error(e.clone())),
                Action::Pause(p) => outcomes[index] = Some(CallOutcome::Paused((**p).clone())),
                Action::Run(tool) => {
                    let job = runner.job(index, &call.id, tool.clone(), call.input.clone());
                    if let Some(error) = missing_variables(tool, &self.scope.variables.current()) {
                        outcomes[index] = Some(CallOutcome::Error(error));
                    // Fail closed: a call that needs approval never runs unapproved.
                    } else if self.agent.approval.required(tool, &job.input, &job.cx)
                        && !self.always.contains(&call.name)
                    {
                        if handler.is_some() {
                            asks.push(job);
                        } else {
                            let pause = approval_pause(call, &self.agent.approval.key);
                            outcomes[index] = Some(CallOutcome::Paused(pause));
                        }
                    } else {
                        jobs.push(job);
                    }
                }
            }
        }
        let (timeout, action) = (
            self.agent.approval.timeout,
            self.agent.approval.timeout_action,
        );
        let ask = |request, stop| {
            let handler = handler.clone().expect("only asked with a handler");
            async move { approval::ask(&*handler, request, timeout, action, &stop).await }
        };

        let cancel = self.cancel.clone();
        let mut fatal = None;
        let mut emitted = vec![false; calls.len()];
        match self.agent.policy {
            ExecutionPolicy::Sequential => {
                // Each result is appended before the next call starts (the Standard Agents spec's
                // conformance rule).
                let mut jobs = jobs.into_iter().peekable();
                let mut asks = asks.into_iter().peekable();
                for index in 0..calls.len() {
                    let mut job = jobs.next_if(|j| j.index == index);
                    // The handler is asked in call order, right before the call would run.
                    if let Some(asked) = asks.next_if(|j| j.index == index)
                        && fatal.is_none()
                        && !cancel.is_cancelled()
                    {
                        let request = self.approval_request(&calls[index]);
                        let verdict = ask(request, cancel.clone()).await;
                        let (outcome, answer) = (&mut outcomes[index], &mut answers[index]);
                        job = apply_verdict(asked, verdict, outcome, answer);
                    }
                    if let Some(job) = job.filter(|_| fatal.is_none() && !cancel.is_cancelled()) {
                        outcomes[index] = Some(tokio::select! {
                            biased;
                            (_, outcome) = runner.run(job) => outcome,
                            () = cancel.cancelled() => cancelled_in_flight(),
                        });
                    }
                    let outcome = self.settle(&mut outcomes[index], &mut fatal);
                    self.note_answer(answers[index].take());
                    self.append(&calls[index], &outcome, result, true);
                    // Each result is on record before the next call starts.
                    self.record_times(&runner, &clock);
                    self.save(SavePoint::Progress).await?;
                }
            }
            ExecutionPolicy::Parallel { max } => {
                // Calls that cannot run are reported at once, before the others finish.
                for (index, call) in calls.iter().enumerate() {
                    if let Some(outcome) = &outcomes[index] {
                        emit_outcome(&self.emit, &call.id, &call.name, &call.input, outcome);
                        emitted[index] = true;
                    }
                }
                // Callback mode: the handler is asked about every call at once, while the calls
                // that need no approval run; the approved ones run after both, under the same
                // window. A fatal error or cancellation ends the waiting.
                let requests: Vec<_> = asks
                    .iter()
                    .map(|job| self.approval_request(&calls[job.index]))
                    .collect();
                let (emit, stop) = (self.emit.clone(), cancel.child_token());
                let asking = join_all(asks.iter().zip(requests).map(|(job, request)| {
                    let (call, emit, asked) =
                        (&calls[job.index], &emit, ask(request, stop.clone()));
                    async move {
                        let verdict = asked.await;
                        // A call that will not run is reported as soon as it is decided.
                        if let Some(outcome) = verdict.as_ref().and_then(verdict_outcome) {
                            emit_outcome(emit, &call.id, &call.name, &call.input, &outcome);
                        }
                        verdict
                    }
                }));
                // Reported as soon as it finishes; appended in call order below. Returns at once
                // on cancellation, keeping the results of finished calls.
                let ((), verdicts) = {
                    let mut done = reporter(&emit, &calls, &mut outcomes, &mut emitted, &stop);
                    join(runner.run_parallel(jobs, max, &mut done), asking).await
                };
                let mut approved = Vec::new();
                for (job, verdict) in asks.into_iter().zip(verdicts) {
                    let index = job.index;
                    let (outcome, answer) = (&mut outcomes[index], &mut answers[index]);
                    approved.extend(apply_verdict(job, verdict, outcome, answer));
                    emitted[index] = outcomes[index].is_some();
                }
                if !stop.is_cancelled() {
                    let mut done = reporter(&emit, &calls, &mut outcomes, &mut emitted, &stop);
                    runner.run_parallel(approved, max, &mut done).await;
                }
                for (index, call) in calls.iter().enumerate() {
                    let outcome = self.settle(&mut outcomes[index], &mut fatal);
                    self.note_answer(answers[index].take());
                    self.append(call, &outcome, result, !emitted[index]);
                }
                // The step's results are on record before the next step.
                self.record_times(&runner, &clock);
                self.save(SavePoint::Progress).await?;
            }
        }
        self.drop_empty_tool_message();
        if self.cancel.is_cancelled() {
            return Err(RunErrorKind::Cancelled);
        }
        fatal.map_or(Ok(()), |e| Err(RunErrorKind::Tool(e)))
    }

    /// The outcome of a call once execution is over: its own, or `NOT_EXECUTED` when a fatal
    /// error or cancellation stopped the step before it ran. Notes the first fatal error.
    fn settle(
        &self,
        outcome: &mut Option<CallOutcome>,
        fatal: &mut Option<ToolError>,
    ) -> CallOutcome {
        let outcome = outcome.take().unwrap_or_else(|| {
            let reason = if self.cancel.is_cancelled() {
                NOT_RUN_ABORTED
            } else {
                NOT_RUN_FATAL
            };
            CallOutcome::Error(ToolError::new("NOT_EXECUTED", reason))
        });
        if fatal.is_none() {
            *fatal = fatal_error(&outcome);
        }
        outcome
    }

    /// Appends a result to the thread and the step, and emits it unless already reported.
    fn append(
        &mut self,
        call: &PreparedCall,
        outcome: &CallOutcome,
        result: &mut StepResult,
        emit: bool,
    ) {
        if emit {
            emit_outcome(&self.emit, &call.id, &call.name, &call.input, outcome);
        }
        match model_output(outcome) {
            Some(output) => {
                let message = self
                    .request
                    .messages
                    .last_mut()
                    .expect("the tool message was pushed");
                message
                    .content
                    .push(result_part(&call.id, &call.name, output));
            }
            None => {
                if let CallOutcome::Paused(pause) = outcome {
                    self.note_pause(pause.clone());
                }
            }
        }
        result.tool_results.push(ToolCallResult {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.input.clone(),
            outcome: outcome.clone(),
        });
    }

    fn drop_empty_tool_message(&mut self) {
        if self
            .request
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool && m.content.is_empty())
        {
            self.request.messages.pop();
        }
    }

    /// Ends the run with an error part, keeping everything so far.
    fn fail(self, kind: RunErrorKind) -> RunError {
        match &kind {
            RunErrorKind::Cancelled => self.emit.emit(|| RunPart::Abort { reason: None }),
            RunErrorKind::HandedBack => self.emit.emit(|| RunPart::Abort {
                reason: Some(HANDED_BACK.to_string()),
            }),
            RunErrorKind::Model(e) => {
                let error = ErrorInfo::new(model_error_code(e), e.message.clone());
                self.emit.emit(|| RunPart::Error { error });
            }
            RunErrorKind::Tool(e) => {
                let error = ErrorInfo::from(e);
                self.emit.emit(|| RunPart::Error { error });
            }
            RunErrorKind::Config(message) | RunErrorKind::Internal(message) => {
                let error = ErrorInfo::new("CONFIG", message.clone());
                self.emit.emit(|| RunPart::Error { error });
            }
            RunErrorKind::Store(message) => {
                let error = ErrorInfo::new(crate::STORE_FAILED, message.clone());
                self.emit.emit(|| RunPart::Error { error });
            }
        }
        RunError {
            kind,
            output: Box::new(self.into_output()),
        }
    }

    fn into_output(self) -> RunOutput {
        let text = self
            .steps
            .last()
            .map(|s| s.text.clone())
            .unwrap_or_default();
        let mut messages = self.request.messages;
        messages.drain(..self.prefix);
        RunOutput {
            run_id: self.scope.run_id.to_string(),
            text,
            steps: self.steps,
            messages,
            input_len: self.input_len,
            usage: self.usage,
            finish_reason: self.finish_reason,
            pending: self.pending,
            variables_set: self.scope.variables.changes(),
        }
    }
}
