"""A fake OpenTelemetry collector: OTLP over HTTP with protobuf bodies, as the exporter sends.

It answers `POST /v1/traces` the way a collector does (an empty
`ExportTraceServiceResponse`) and keeps each request, decoded with the
protocol's own generated classes, so a test reads the spans a service shipped.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.server import serve


class FakeCollector:
    def __init__(self) -> None:
        self.exports: list[ExportTraceServiceRequest] = []
        self.base_url = ""

    @property
    def resource_spans(self) -> list[ResourceSpans]:
        return [rs for export in self.exports for rs in export.resource_spans]

    async def _traces(self, request: Request) -> Response:
        if request.headers.get("content-type") != "application/x-protobuf":
            return Response(status_code=415)
        self.exports.append(ExportTraceServiceRequest.FromString(await request.body()))
        return Response(
            ExportTraceServiceResponse().SerializeToString(),
            media_type="application/x-protobuf",
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FakeCollector]:
        app = Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])])
        async with serve(app) as url:
            self.base_url = url
            yield self
