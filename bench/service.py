"""The service as the benchmark runs it: `app.main:app`, plus a count of SQL statements.

The count is the app's own `Database.statements` (every statement, whether
SQLAlchemy or the driver ran it), read at `GET /_bench/statements`
(`{"INSERT": n, "WITH": n, ...}`), so the benchmark can say how many
statements a turn costs on any database. It counts a handful of times per
turn, never per token. `BENCH_HTTPX=httpx` runs the app on httpx instead of the
`httpx2` fork it depends on (imported under the name `httpx2`), to price
the HTTP client.

    uvicorn bench.service:bench_app --port 8888
"""

from __future__ import annotations

import importlib
import os
import sys

from fastapi import FastAPI, Request

if os.environ.get("BENCH_HTTPX", "httpx2") != "httpx2":
    sys.modules["httpx2"] = importlib.import_module(os.environ["BENCH_HTTPX"])

import app.main


def build() -> FastAPI:
    served: FastAPI = app.main.app  # built as `uvicorn app.main:app` builds it

    @served.get("/_bench/statements", include_in_schema=False)
    async def read_statements(request: Request) -> dict[str, int]:
        return dict(request.app.state.database.statements)

    # The chat page is mounted at `/` and would answer this path first.
    served.router.routes.insert(0, served.router.routes.pop())
    return served


bench_app = build()
