"""The service as the benchmark runs it: `app.main:app`, plus a count of SQL statements.

The count is the app's own `Database.statements` (every statement, whether
SQLAlchemy or the driver ran it), read at `GET /_bench/statements`
(`{"INSERT": n, "WITH": n, ...}`), so the benchmark can say how many
statements a turn costs on any database. It counts a handful of times per
turn, never per token. `BENCH_HTTPX=httpx` runs the app on httpx instead of the
`httpx2` fork it depends on (imported under the name `httpx2`), to price
the HTTP client. `BENCH_SPANS=1` turns the app's own tracing on, into memory
(`bench.spans`), read at `GET /_bench/spans`: what `bench.startbreakdown` reads
a turn's start from.

    uvicorn bench.service:bench_app --port 8888
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request

if os.environ.get("BENCH_HTTPX", "httpx2") != "httpx2":
    sys.modules["httpx2"] = importlib.import_module(os.environ["BENCH_HTTPX"])

import app.main
from bench.spans import KeptSpans, mark_model_request


def build() -> FastAPI:
    served: FastAPI = app.main.app  # built as `uvicorn app.main:app` builds it

    @served.get("/_bench/statements", include_in_schema=False)
    async def read_statements(request: Request) -> dict[str, int]:
        return dict(request.app.state.database.statements)

    if os.environ.get("BENCH_SPANS") == "1":
        trace_into_memory(served)
    # The chat page is mounted at `/` and would answer these paths first.
    bench_routes = [
        r for r in served.router.routes if getattr(r, "path", "").startswith("/_bench/")
    ]
    served.router.routes[:] = bench_routes + [
        r for r in served.router.routes if r not in bench_routes
    ]
    return served


def trace_into_memory(served: FastAPI) -> None:
    """The app traced into `KeptSpans`, each model request's steps marked on its run's span."""
    kept = KeptSpans()
    served.state.span_exporter = kept  # read by the lifespan, which has not run yet
    opened = served.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        async with opened(application) as state:
            for model in application.state.services.models.models().values():
                model.client.event_hooks["request"].append(mark_model_request)
            yield state

    served.router.lifespan_context = lifespan

    @served.get("/_bench/spans", include_in_schema=False)
    async def read_spans() -> list[dict[str, Any]]:
        return kept.take()


bench_app = build()
