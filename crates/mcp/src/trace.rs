//! MCP calls' spans per the OpenTelemetry MCP semantic conventions, and the W3C trace context
//! carried in the request's `_meta` (`traceparent`, `tracestate`) both ways.
//!
//! The client's `tools/call {tool}` span (kind client) puts its context in the request's
//! `_meta`; the server's `tools/call {tool}` span (kind server) takes the request's context as
//! its parent, so a run and the tools it called on another process's server are one trace. The
//! spans are plain `tracing` spans: the context exists only when a `tracing-opentelemetry`
//! layer is installed (the binary's OpenTelemetry export), and nothing is injected otherwise.
//! Arguments and results are not recorded.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use rmcp::model::MetaObject;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of a `tools/call` request; `kind` is `client` or `server`.
pub(crate) fn call_span(kind: &'static str, tool: &str) -> Span {
    tracing::info_span!(
        "mcp.tools.call",
        otel.name = format!("tools/call {tool}"),
        otel.kind = kind,
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        error.type = Empty,
    )
}

/// Marks `span` failed with `code`.
pub(crate) fn record_error(span: &Span, code: &str) {
    span.record("error.type", code);
    span.record("otel.status_code", "ERROR");
}

/// Writes `span`'s context into `meta`, when it has one.
pub(crate) fn inject(span: &Span, meta: &mut MetaObject) {
    let context = span.context();
    let span_ref = context.span();
    let sc = span_ref.span_context();
    if !sc.is_valid() {
        return;
    }
    meta.set_traceparent(format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    ));
    let state = sc.trace_state().header();
    if !state.is_empty() {
        meta.set_tracestate(state);
    }
}

/// Makes the context in `meta`, when it holds a valid `traceparent`, `span`'s parent. Call it
/// before the span is first entered.
pub(crate) fn extract(span: &Span, meta: &MetaObject) {
    let Some(parent) = meta.get_traceparent().and_then(parse_traceparent) else {
        return;
    };
    let state = meta
        .get_tracestate()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let parent = SpanContext::new(parent.0, parent.1, parent.2, true, state);
    // A span without an OpenTelemetry layer has nowhere to keep it: nothing to do then.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(parent));
}

/// `version-traceid-spanid-flags`, version `00` (a later version's first four fields are read
/// the same way, as the W3C recommendation says). Read here rather than by opentelemetry_sdk's
/// `TraceContextPropagator`, which (0.33) takes a trace id of fewer than 32 digits
/// (`00-0af7651916cd43dd-00f067aa0ba902b7-01`) where the recommendation refuses it.
fn parse_traceparent(value: &str) -> Option<(TraceId, SpanId, TraceFlags)> {
    let mut parts = value.trim().split('-');
    let version = parts.next()?;
    let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
    if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
        return None;
    }
    if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    let trace = TraceId::from_hex(trace)
        .ok()
        .filter(|t| *t != TraceId::INVALID)?;
    let span = SpanId::from_hex(span)
        .ok()
        .filter(|s| *s != SpanId::INVALID)?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some((trace, span, TraceFlags::new(flags) & TraceFlags::SAMPLED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_read_and_a_malformed_one_refused() {
        let (trace, span, flags) =
            parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01").unwrap();
        assert_eq!(trace.to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(span.to_string(), "00f067aa0ba902b7");
        assert!(flags.is_sampled());
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-extra",
            "00-0af7651916cd43dd-00f067aa0ba902b7-01",
            "garbage",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
    }
}
