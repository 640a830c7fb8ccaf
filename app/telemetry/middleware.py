"""Per request: the open-streams gauge, and the request's span when tracing is on.

A pure ASGI middleware, so an event stream's frames pass through untouched:
`send` is wrapped only to see the response's start (to count a stream), and
nothing after it is looked at. The request's span stays current while the app
handles the request, so the run it starts, and everything that run does, nests
under it. A `traceparent` header from the caller makes it part of the caller's
trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry.trace import SpanKind, Status, StatusCode, use_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from app.telemetry.observers import Telemetry

_PROPAGATOR = TraceContextTextMapPropagator()


def is_event_stream(message: Message) -> bool:
    """A response that opens an event stream, whatever the wire format or path (ours,
    AG-UI, the AI SDK's, A2A's): what the open-streams gauge counts. A refusal (4xx) is not."""
    if message["status"] != 200:
        return False
    return any(
        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
        for name, value in message.get("headers", ())
    )


class TelemetryMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        telemetry: Telemetry | None = (
            getattr(scope["app"].state, "telemetry", None) if scope["type"] == "http" else None
        )
        if telemetry is None:
            await self.app(scope, receive, send)
            return
        gauge = telemetry.metrics.open_streams
        streaming = False

        async def send_counted(message: Message) -> None:
            nonlocal streaming
            if message["type"] == "http.response.start" and is_event_stream(message):
                streaming = True
                gauge.inc()
            await send(message)

        try:
            if telemetry.tracer is None:
                await self.app(scope, receive, send_counted)
            else:
                await self._traced(telemetry, scope, receive, send_counted)
        finally:
            if streaming:
                gauge.dec()

    async def _traced(
        self, telemetry: Telemetry, scope: Scope, receive: Receive, send: Send
    ) -> None:
        assert telemetry.tracer is not None
        method = scope["method"]
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        span = telemetry.tracer.start_span(
            method,
            context=_PROPAGATOR.extract(headers),
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": method,
                "url.path": scope["path"],
                "url.scheme": scope.get("scheme", "http"),
            },
        )

        async def send_watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = int(message["status"])
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
            await send(message)

        with use_span(span, end_on_exit=True):
            try:
                await self.app(scope, receive, send_watched)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.set_attribute("http.route", route)
                    span.update_name(f"{method} {route}")
