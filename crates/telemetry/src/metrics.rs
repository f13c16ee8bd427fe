//! Metrics derived from the spans the libraries emit, so that they keep emitting plain
//! `tracing` and record nothing twice.
//!
//! | instrument | kind, unit | from | attributes |
//! | --- | --- | --- | --- |
//! | `gen_ai.client.operation.duration` | histogram, s | `chat` spans | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `error.type` |
//! | `gen_ai.client.token.usage` | histogram, `{token}` | `chat` spans | the same and `gen_ai.token.type` (`input`, `output`) |
//! | `toolsmith.tool.duration` | histogram, s | `execute_tool` spans | `gen_ai.tool.name`, `error.type` |
//! | `toolsmith.tool.errors` | counter, `{call}` | failed `execute_tool` spans | `gen_ai.tool.name`, `error.type` |
//! | `toolsmith.runs` | counter, `{run}` | `invoke_agent` spans | `gen_ai.agent.name`, `toolsmith.run.outcome` (`paused` counts paused runs) |
//! | `toolsmith.tool.pending` | counter, `{call}` | paused `invoke_agent` spans; `execute_tool` spans of calls handed to an outside worker (`toolsmith.tool.dispatched`) | `gen_ai.agent.name` (calls a paused run left running), `gen_ai.tool.name` (calls dispatched) |

use std::collections::HashMap;
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The instruments, fed by the spans' closes.
pub(crate) struct SpanMetrics {
    operation_duration: Histogram<f64>,
    token_usage: Histogram<u64>,
    tool_duration: Histogram<f64>,
    tool_errors: Counter<u64>,
    runs: Counter<u64>,
    pending: Counter<u64>,
}

impl SpanMetrics {
    pub(crate) fn new(meter: &Meter) -> Self {
        // The conventions' advised buckets for GenAI durations (s) and token counts.
        let seconds = vec![
            0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
        ];
        let tokens = vec![
            1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0,
            4194304.0, 16777216.0, 67108864.0,
        ];
        SpanMetrics {
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(seconds.clone())
                .build(),
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(tokens)
                .build(),
            tool_duration: meter
                .f64_histogram("toolsmith.tool.duration")
                .with_unit("s")
                .with_description("Tool call duration.")
                .with_boundaries(seconds)
                .build(),
            tool_errors: meter
                .u64_counter("toolsmith.tool.errors")
                .with_unit("{call}")
                .with_description("Tool calls that failed.")
                .build(),
            runs: meter
                .u64_counter("toolsmith.runs")
                .with_unit("{run}")
                .with_description("Agent runs, by outcome.")
                .build(),
            pending: meter
                .u64_counter("toolsmith.tool.pending")
                .with_unit("{call}")
                .with_description("Async tool calls a paused run left running outside it.")
                .build(),
        }
    }
}

/// What a measured span recorded, kept in its extensions until it closes.
struct Measured {
    started: Instant,
    fields: HashMap<&'static str, Value>,
}

#[derive(Clone)]
enum Value {
    Str(String),
    U64(u64),
}

impl Value {
    fn key_value(&self, key: &'static str) -> KeyValue {
        match self {
            Value::Str(s) => KeyValue::new(key, s.clone()),
            Value::U64(n) => KeyValue::new(key, *n as i64),
        }
    }
}

impl Visit for Measured {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.fields
            .insert(field.name(), Value::Str(value.to_owned()));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.fields.insert(field.name(), Value::U64(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.fields
            .insert(field.name(), Value::U64(value.max(0) as u64));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.fields
            .insert(field.name(), Value::Str(format!("{value:?}")));
    }
}

impl Measured {
    fn attributes(&self, keys: &[&'static str]) -> Vec<KeyValue> {
        keys.iter()
            .filter_map(|k| self.fields.get(k).map(|v| v.key_value(k)))
            .collect()
    }

    fn count(&self, key: &str) -> Option<u64> {
        match self.fields.get(key) {
            Some(Value::U64(n)) => Some(*n),
            _ => None,
        }
    }
}

/// The spans measured, by their static name.
fn measured(name: &str) -> bool {
    matches!(name, "chat" | "execute_tool" | "invoke_agent")
}

impl<S> Layer<S> for SpanMetrics
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !measured(attrs.metadata().name()) {
            return;
        }
        let mut m = Measured {
            started: Instant::now(),
            fields: HashMap::new(),
        };
        attrs.record(&mut m);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(m);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(m) = span.extensions_mut().get_mut::<Measured>()
        {
            values.record(m);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(m) = span.extensions_mut().remove::<Measured>() else {
            return;
        };
        let seconds = m.started.elapsed().as_secs_f64();
        match span.name() {
            "chat" => {
                let attributes = m.attributes(&[
                    "gen_ai.operation.name",
                    "gen_ai.provider.name",
                    "gen_ai.request.model",
                    "gen_ai.response.model",
                    "error.type",
                ]);
                self.operation_duration.record(seconds, &attributes);
                for (field, kind) in [
                    ("gen_ai.usage.input_tokens", "input"),
                    ("gen_ai.usage.output_tokens", "output"),
                ] {
                    if let Some(n) = m.count(field) {
                        let mut attributes = attributes.clone();
                        attributes.push(KeyValue::new("gen_ai.token.type", kind));
                        self.token_usage.record(n, &attributes);
                    }
                }
            }
            "execute_tool" => {
                let attributes = m.attributes(&["gen_ai.tool.name", "error.type"]);
                self.tool_duration.record(seconds, &attributes);
                if m.fields.contains_key("error.type") {
                    self.tool_errors.add(1, &attributes);
                } else if m.fields.contains_key("toolsmith.tool.dispatched") {
                    self.pending.add(1, &m.attributes(&["gen_ai.tool.name"]));
                }
            }
            _ => {
                let attributes = m.attributes(&["gen_ai.agent.name", "toolsmith.run.outcome"]);
                self.runs.add(1, &attributes);
                if let Some(n) = m.count("toolsmith.run.async_pending").filter(|n| *n > 0) {
                    self.pending.add(n, &m.attributes(&["gen_ai.agent.name"]));
                }
            }
        }
    }
}
