//! The run's and its model calls' spans, named and attributed per the OpenTelemetry GenAI
//! semantic conventions, emitted as plain `tracing` spans.
//!
//! - `invoke_agent {agent name}` wraps a run: `gen_ai.operation.name`, `gen_ai.agent.name`,
//!   `gen_ai.conversation.id` (the thread), `gen_ai.provider.name`, `gen_ai.request.model`,
//!   `toolsmith.run.id`, then at its end `toolsmith.run.outcome` (`completed`, `paused`,
//!   `failed`, `cancelled` or `handed_back`), `toolsmith.run.async_pending` (the calls a run
//!   that ended without failing left to finish outside it: its pauses on an external result,
//!   and the results still expected in its inbox — async tools and non-blocking sub-agents
//!   still running when it paused) and, on failure, `error.type`.
//! - `chat {model}` wraps each model call, the stream included: the request's provider and
//!   model, then the response's id and model, its finish reason and token usage (input,
//!   output, cache reads and writes, reasoning), `error.type` on failure.
//!
//! The dynamic names go in the `otel.name` field, which `tracing-opentelemetry` uses as the
//! span's name; without a subscriber that wants them these spans cost a disabled callsite.
//! Neither records prompts, arguments or results: they may hold secrets.

use toolsmith_core::{ModelError, PauseKind, RunScope, Usage};
use tracing::Span;
use tracing::field::Empty;

use crate::agent::AgentInner;
use crate::output::{RunError, RunErrorKind, RunOutput, model_error_code};
use crate::step::ModelTurn;

/// The `invoke_agent` span of a run, a child of the current span (a sub-agent's run: its tool
/// call's `execute_tool` span).
pub(super) fn run_span(agent: &AgentInner, scope: &RunScope) -> Span {
    let name = agent.name.as_deref();
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = match name {
            Some(name) => format!("invoke_agent {name}"),
            None => "invoke_agent".to_owned(),
        },
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = name,
        gen_ai.conversation.id = scope.thread_id.as_deref(),
        gen_ai.provider.name = agent.model.provider(),
        gen_ai.request.model = agent.model.model_id(),
        toolsmith.run.id = &*scope.run_id,
        toolsmith.run.outcome = Empty,
        toolsmith.run.async_pending = Empty,
        error.type = Empty,
    );
    span
}

/// Records how the run ended on its span; `expected` results were still due in its inbox.
pub(super) fn record_run(span: &Span, result: &Result<RunOutput, RunError>, expected: usize) {
    match result {
        Ok(output) => {
            let outcome = if output.pending.is_empty() {
                "completed"
            } else {
                "paused"
            };
            let external = output
                .pending
                .iter()
                .filter(|p| p.kind == PauseKind::External)
                .count();
            let pending = external.saturating_add(expected);
            span.record("toolsmith.run.outcome", outcome);
            span.record("toolsmith.run.async_pending", as_i64(pending as u64));
        }
        Err(e) => {
            let (outcome, error) = match &e.kind {
                RunErrorKind::Cancelled => ("cancelled", None),
                RunErrorKind::HandedBack => ("handed_back", None),
                RunErrorKind::Model(m) => ("failed", Some(model_error_code(m))),
                RunErrorKind::Tool(t) => ("failed", Some(t.code().to_owned())),
                RunErrorKind::Config(_) => ("failed", Some("CONFIG".to_owned())),
                RunErrorKind::Internal(_) => ("failed", Some("INTERNAL".to_owned())),
                RunErrorKind::Store(_) => ("failed", Some("STORE".to_owned())),
            };
            span.record("toolsmith.run.outcome", outcome);
            if let Some(error) = error {
                span.record("error.type", error);
                span.record("otel.status_code", "ERROR");
            }
        }
    }
}

/// The `chat` span of one model call.
pub(super) fn chat_span(agent: &AgentInner) -> Span {
    let model = agent.model.model_id();
    tracing::info_span!(
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = agent.model.provider(),
        gen_ai.request.model = model,
        gen_ai.response.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        error.type = Empty,
    )
}

/// Records the response's id and model on `span`, from its `ResponseMetadata` part. Called by
/// [`consume`](crate::step::consume) as the part passes: wrapping the stream in an `inspect`
/// for it cost a boxed stream, one more dynamic poll and two moves of every part per model call.
pub(crate) fn record_response(span: &Span, id: Option<&str>, model: Option<&str>) {
    if let Some(id) = id {
        span.record("gen_ai.response.id", id);
    }
    if let Some(model) = model {
        span.record("gen_ai.response.model", model);
    }
}

/// Records the call's outcome on its span: the turn's finish reason and usage, or the error.
pub(super) fn record_chat(span: &Span, result: &Result<ModelTurn, ModelError>) {
    match result {
        Ok(turn) => {
            // The conventions' `finish_reasons` is an array; one call has one reason, and a
            // `tracing` field holds no array, so it is recorded as that one string.
            span.record(
                "gen_ai.response.finish_reasons",
                turn.finish_reason.unified.as_str(),
            );
            record_usage(span, &turn.usage);
        }
        Err(e) => {
            span.record("error.type", model_error_code(e));
            span.record("otel.status_code", "ERROR");
        }
    }
}

fn record_usage(span: &Span, usage: &Usage) {
    let fields = [
        ("gen_ai.usage.input_tokens", usage.input.total),
        ("gen_ai.usage.output_tokens", usage.output.total),
        (
            "gen_ai.usage.cache_read.input_tokens",
            usage.input.cache_read,
        ),
        (
            "gen_ai.usage.cache_creation.input_tokens",
            usage.input.cache_write,
        ),
        (
            "gen_ai.usage.reasoning.output_tokens",
            usage.output.reasoning,
        ),
    ];
    for (field, value) in fields {
        if let Some(value) = value {
            span.record(field, as_i64(value));
        }
    }
}

/// Counts are recorded as `i64`: OpenTelemetry's integers are signed, and `tracing-opentelemetry`
/// turns a `u64` field into a string.
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
