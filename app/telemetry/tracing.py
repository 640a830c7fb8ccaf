"""The tracer provider, built from the standard `OTEL_*` settings, or nothing at all.

Tracing is off unless `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_TRACES_EXPORTER`
is set: then no provider exists, no span is ever made, and the hooks of
`Telemetry` take their untraced branch. The provider is the app's own, never
installed as OpenTelemetry's global one, so tests can build several apps
with different exporters side by side; the SDK still reads the other
standard variables itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
`OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`, ...).
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import format_trace_id

from app.config import Settings

EXPORTERS = ("otlp", "console", "none")
"""What `OTEL_TRACES_EXPORTER` may name (OTLP over HTTP/protobuf)."""


def build_tracer_provider(
    settings: Settings, exporter: SpanExporter | None = None
) -> TracerProvider | None:
    """The provider the settings ask for; None when tracing is off.

    `exporter` (a test's in-memory one, a benchmark's) turns tracing on and is
    fed span by span as each ends, so a test reads its spans when a turn is over.
    """
    processor: SpanProcessor
    if exporter is not None:
        processor = SimpleSpanProcessor(exporter)
    else:
        chosen = _chosen_exporter(settings)
        if chosen is None:
            return None
        processor = BatchSpanProcessor(chosen)
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.otel_service_name}))
    provider.add_span_processor(processor)
    return provider


def _chosen_exporter(settings: Settings) -> SpanExporter | None:
    name = settings.otel_traces_exporter.strip().lower()
    if not name:
        name = "otlp" if settings.otel_exporter_otlp_endpoint else "none"
    if name not in EXPORTERS:
        raise ValueError(f"OTEL_TRACES_EXPORTER must be one of {', '.join(EXPORTERS)}")
    if name == "none":
        return None
    if name == "console":
        return ConsoleSpanExporter()
    # Imported only when used: it brings protobuf and requests along.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = settings.otel_exporter_otlp_endpoint.rstrip("/")
    # The base endpoint gets the signal's path (the OTLP spec); without one the
    # exporter reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or its default itself.
    return OTLPSpanExporter(endpoint=f"{base}/v1/traces" if base else None)


def current_trace_id() -> str | None:
    """The trace of the current span as 32 hex digits, or None outside any trace."""
    context = trace.get_current_span().get_span_context()
    return format_trace_id(context.trace_id) if context.is_valid else None


class TraceIdFilter(logging.Filter):
    """Gives each log record a ` trace_id=…` suffix for the app's log format, inside a trace.

    Added to the app's log handlers only while tracing is on, so with it off a
    record costs what it did before.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        trace_id = current_trace_id()
        record.trace_id = f" trace_id={trace_id}" if trace_id else ""
        return True
