"""A traced service's spans, kept in its own memory for `bench.startbreakdown` to read.

The service traces itself through OpenTelemetry (app/telemetry): the request,
the claim, each SQL statement, the run, the model call with its time to the
first chunk. `KeptSpans` is the exporter `bench.service` gives it under
`BENCH_SPANS=1`: each span, as it ends, kept as a small dict (the few
attributes the breakdown reads), read and emptied at `GET /_bench/spans`.

The model call's span does not split the call itself, so `mark_model_request`
(an httpx request hook on each model's client) asks httpcore for its trace
of the request: the TCP connect, when the pool opens a connection, the
request's head going out, and the response's head coming in, each an event
on the run's span. It stops listening once the response's head is in, so no
event of the stream's body passes through it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx2
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

KEPT_ATTRIBUTES = ("gen_ai.conversation.id", "gen_ai.response.time_to_first_chunk")
MODEL_TRACE = ("connect_tcp", "send_request_headers", "receive_response_headers")
"""The steps of httpcore's request trace kept as events (`connection.connect_tcp.started`, ...)."""
LAST_MODEL_EVENT = "http11.receive_response_headers.complete"


class KeptSpans(SpanExporter):
    def __init__(self) -> None:
        self._spans: list[dict[str, Any]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._spans.extend(_kept(span) for span in spans)
        return SpanExportResult.SUCCESS

    def take(self) -> list[dict[str, Any]]:
        """Every span ended since the last call."""
        taken, self._spans = self._spans, []
        return taken


def _kept(span: ReadableSpan) -> dict[str, Any]:
    context, parent = span.get_span_context(), span.parent
    assert context is not None  # a span the SDK made and ended has one
    attributes = span.attributes or {}
    return {
        "trace": f"{context.trace_id:032x}",
        "id": context.span_id,
        "parent": None if parent is None else parent.span_id,
        "name": span.name,
        "start": span.start_time,
        "end": span.end_time,
        "attributes": {key: attributes[key] for key in KEPT_ATTRIBUTES if key in attributes},
        "events": [[event.name, event.timestamp] for event in span.events],
    }


async def mark_model_request(request: httpx2.Request) -> None:
    """Ask httpcore to trace this request into events of the current (the run's) span."""
    span = trace.get_current_span()
    extensions = request.extensions

    async def on_step(name: str, _info: dict[str, Any]) -> None:
        if any(step in name for step in MODEL_TRACE):
            span.add_event(name, timestamp=time.time_ns())
        if name == LAST_MODEL_EVENT:
            extensions.pop("trace", None)

    extensions["trace"] = on_step
