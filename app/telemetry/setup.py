"""The app's telemetry for the lifespan: built from the settings, flushed and closed with it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from opentelemetry.sdk.trace.export import SpanExporter

from app.config import Settings
from app.telemetry.metrics import Metrics
from app.telemetry.observers import Telemetry
from app.telemetry.tracing import TraceIdFilter, build_tracer_provider

APP_LOGGER = "app"
"""The logger whose handlers print the service's log lines (main.py sets them up)."""


@asynccontextmanager
async def build_telemetry(
    settings: Settings, exporter: SpanExporter | None = None
) -> AsyncIterator[Telemetry]:
    """Metrics always; a tracer when the settings (or `exporter`) turn tracing on.

    While tracing is on, the app's log lines end with the trace id of the
    request or run they were written in. At exit the spans still buffered are
    exported before the provider closes.
    """
    provider = build_tracer_provider(settings, exporter)
    if provider is None:
        yield Telemetry(Metrics(), None)
        return
    handlers = logging.getLogger(APP_LOGGER).handlers
    log_filter = TraceIdFilter()
    for handler in handlers:
        handler.addFilter(log_filter)
    try:
        yield Telemetry(Metrics(), provider.get_tracer("app"))
    finally:
        for handler in handlers:
            handler.removeFilter(log_filter)
        # Off the event loop: the last export is a blocking HTTP call (OTLP), and the
        # collector may be served by this very loop (a test's, a sidecar in-process).
        await asyncio.to_thread(provider.shutdown)
