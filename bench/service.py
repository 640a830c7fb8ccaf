"""The service as the benchmark runs it: `app.main:app`, plus a count of SQL statements.

The count is a SQLAlchemy `before_cursor_execute` listener on every engine,
read at `GET /_bench/statements` (`{"INSERT": n, "SELECT": n, ...}`), so the
benchmark can say how many statements a turn costs on any database without
the app carrying a switch for it. It fires a handful of times per turn,
never per token. `BENCH_HTTPX=httpx` runs the app on httpx instead of the
`httpx2` fork it depends on (imported under the name `httpx2`), to price
the HTTP client.

    uvicorn bench.service:bench_app --port 8888
"""

from __future__ import annotations

import importlib
import os
import sys
from collections import Counter
from typing import Any

from fastapi import FastAPI

if os.environ.get("BENCH_HTTPX", "httpx2") != "httpx2":
    sys.modules["httpx2"] = importlib.import_module(os.environ["BENCH_HTTPX"])

from sqlalchemy import event
from sqlalchemy.engine import Engine

import app.main


def build() -> FastAPI:
    statements: Counter[str] = Counter()

    def count(*args: Any) -> None:
        statement: str = args[2]
        statements[statement.lstrip().split(None, 1)[0].upper()] += 1

    event.listen(Engine, "before_cursor_execute", count)
    served: FastAPI = app.main.app  # built as `uvicorn app.main:app` builds it

    @served.get("/_bench/statements", include_in_schema=False)
    async def read_statements() -> dict[str, int]:
        return dict(statements)

    # The chat page is mounted at `/` and would answer this path first.
    served.router.routes.insert(0, served.router.routes.pop())
    return served


bench_app = build()
