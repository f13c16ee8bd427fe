"""Exports one span with the official OpenTelemetry Python SDK's OTLP/HTTP exporter to the
endpoint in OTEL_EXPORTER_OTLP_ENDPOINT, then flushes: the receiver's check."""

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider(resource=Resource.create({"service.name": "python-peer"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
tracer = provider.get_tracer("peer")
with tracer.start_as_current_span("chat gpt-4o") as span:
    span.set_attribute("gen_ai.operation.name", "chat")
    span.set_attribute("gen_ai.usage.input_tokens", 12)
    with tracer.start_as_current_span("execute_tool lookup"):
        pass
provider.shutdown()
