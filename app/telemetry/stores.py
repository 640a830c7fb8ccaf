"""Spans for the database and the Redis task backend, made only when tracing is on.

SQL: SQLAlchemy's cursor events on the app's engine give one span per
statement (the statement's text, never its parameters). SQLAlchemy runs an
async engine's driver calls in a greenlet that carries the caller's context,
so a statement nests under the span of the run or request that made it.

Redis: one span per call at the task roles' interfaces (claim, refresh,
release, stop requests, the queue, the list of runs), so a claim that waits
on Redis shows in the request that waited. The shared run logs' stream
copies are not traced per command: they follow a run's events in batches,
and a span each would trace the event path, which the rest of the tracing
leaves alone.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, cast

from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from sqlalchemy import event
from sqlalchemy.engine import Engine

from app.store.db import Database
from app.tasks.base import Claims, ConversationQueue, RunsBoard, TaskBackend, Tasks

QUERY_TEXT_MAX_CHARS = 2000
"""Longest statement text kept on a span: generated statements get long, the start says enough."""
SYSTEM_NAMES = {"postgresql": "postgresql", "sqlite": "sqlite"}
"""SQLAlchemy dialects by their `db.system.name` in the semantic conventions."""
_SPAN = "_dodo_span"
"""The execution context's attribute that holds its statement's span until the cursor returns."""


@dataclass(frozen=True, slots=True)
class StoreTracing:
    """What the lifespan hands the store's and the tasks' builds: their calls become spans
    while tracing is on (`tracer`), the task backend's only when it is Redis (`remote_tasks`):
    the in-process one makes no call worth a span."""

    tracer: Tracer | None
    remote_tasks: bool

    def database(self, db: Database) -> None:
        if self.tracer is not None:
            trace_database(db, self.tracer)

    def tasks(self, tasks: Tasks) -> Tasks:
        if self.tracer is None or not self.remote_tasks:
            return tasks
        return trace_tasks(tasks, self.tracer)


def trace_database(db: Database, tracer: Tracer) -> None:
    """Give every statement `db` sends a span: SQLAlchemy's through its events, and the
    per-turn statements `Database.run` sends on the driver itself through its hook."""
    engine = db.engine.sync_engine
    trace_engine(engine, tracer)
    attributes = _statement_attributes(engine)

    def span(operation: str, sql: str) -> AbstractContextManager[object]:
        return tracer.start_as_current_span(
            operation, kind=SpanKind.CLIENT, attributes=attributes(operation, sql)
        )

    db.statement_span = span


def _statement_attributes(engine: Engine) -> Callable[[str, str], dict[str, str]]:
    """A statement span's attributes on `engine`, by the database semantic conventions."""
    system = SYSTEM_NAMES.get(engine.dialect.name, engine.dialect.name)
    namespace = engine.url.database or ""

    def attributes(operation: str, sql: str) -> dict[str, str]:
        return {
            "db.system.name": system,
            "db.namespace": namespace,
            "db.operation.name": operation,
            "db.query.text": sql[:QUERY_TEXT_MAX_CHARS],
        }

    return attributes


def trace_engine(engine: Engine, tracer: Tracer) -> None:
    """Give every statement `engine` runs a span (pass an async engine's `sync_engine`)."""
    attributes = _statement_attributes(engine)

    def before(
        _conn: Any, _cursor: Any, statement: str, _params: Any, context: Any, _many: bool
    ) -> None:
        operation = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "SQL"
        span = tracer.start_span(
            operation, kind=SpanKind.CLIENT, attributes=attributes(operation, statement)
        )
        setattr(context, _SPAN, span)

    def after(
        _conn: Any, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool
    ) -> None:
        span = getattr(context, _SPAN, None)
        if span is not None:
            span.end()

    def failed(exception_context: Any) -> None:
        span = getattr(exception_context.execution_context, _SPAN, None)
        if span is not None:
            error = exception_context.original_exception
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            span.end()

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    event.listen(engine, "handle_error", failed)


def trace_tasks(tasks: Tasks, tracer: Tracer) -> Tasks:
    """The same roles, each call to the backend a span; waits and the backend's life are not.

    A wait (`wait_released`) lasts as long as the run ahead, which says nothing
    about the backend; `start` and `close` are the app's own start-up and
    shutdown. The unwrapped parts that only Redis has go along as they are.
    """
    return replace(
        tasks,
        backend=cast(TaskBackend, _Traced(tasks.backend, tracer, untraced={"start", "close"})),
        claims=cast(Claims, _Traced(tasks.claims, tracer)),
        queue=cast(ConversationQueue, _Traced(tasks.queue, tracer, untraced={"wait_released"})),
        board=cast(RunsBoard, _Traced(tasks.board, tracer)),
    )


class _Traced:
    """Any role of the task backend, whose coroutine methods each run inside a span."""

    def __init__(self, inner: object, tracer: Tracer, untraced: Collection[str] = ()) -> None:
        self._inner = inner
        self._tracer = tracer
        self._untraced = untraced

    def __getattr__(self, operation: str) -> Any:
        call = getattr(self._inner, operation)
        if operation in self._untraced or not inspect.iscoroutinefunction(call):
            return call

        @functools.wraps(call)
        async def traced(*args: Any, **kwargs: Any) -> Any:
            with self._tracer.start_as_current_span(
                f"tasks.{operation}",
                kind=SpanKind.CLIENT,
                attributes={"db.system.name": "redis", "db.operation.name": operation},
            ):
                return await call(*args, **kwargs)

        return traced
