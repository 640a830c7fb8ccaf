"""Spans for the database and the Redis task manager, made only when tracing is on.

SQL: SQLAlchemy's cursor events on the app's engine give one span per
statement (the statement's text, never its parameters). SQLAlchemy runs an
async engine's driver calls in a greenlet that carries the caller's context,
so a statement nests under the span of the run or request that made it.

Redis: one span per call at the `TaskManager` interface (claim, refresh,
release, stop requests), so a claim that waits on Redis shows in the request
that waited. The shared run logs' stream copies are not traced per command:
they follow a run's events in batches, and a span each would trace the
event path, which the rest of the tracing leaves alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from sqlalchemy import event
from sqlalchemy.engine import Engine

from app.store.db import Database
from app.tasks.base import Claim, QueueState, StopHandler, TaskManager, Ticket

QUERY_TEXT_MAX_CHARS = 2000
"""Longest statement text kept on a span: generated statements get long, the start says enough."""
SYSTEM_NAMES = {"postgresql": "postgresql", "sqlite": "sqlite"}
"""SQLAlchemy dialects by their `db.system.name` in the semantic conventions."""
_SPAN = "_dodo_span"
"""The execution context's attribute that holds its statement's span until the cursor returns."""

T = TypeVar("T")


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


class TracedTaskManager:
    """A `TaskManager` whose every call to the backend is a span."""

    def __init__(self, inner: TaskManager, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    async def start(self, on_stop: StopHandler) -> None:
        await self._inner.start(on_stop)

    async def close(self) -> None:
        await self._inner.close()

    async def claim(self, claim: Claim, ttl: float, ticket: Ticket | None = None) -> bool:
        return await self._traced("claim", lambda: self._inner.claim(claim, ttl, ticket))

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        return await self._traced("refresh", lambda: self._inner.refresh(claim, ttl))

    async def release(self, claim: Claim) -> None:
        await self._traced("release", lambda: self._inner.release(claim))

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        return await self._traced("current", lambda: self._inner.current(user_id, conversation_id))

    async def request_stop(self, user_id: str, conversation_id: str, wait: float) -> bool:
        return await self._traced(
            "request_stop", lambda: self._inner.request_stop(user_id, conversation_id, wait)
        )

    async def ping(self) -> None:
        await self._traced("ping", self._inner.ping)

    async def join_queue(self, claim: Claim, ttl: float) -> int:
        return await self._traced("join_queue", lambda: self._inner.join_queue(claim, ttl))

    async def keep_queued(self, claim: Claim, ttl: float) -> bool:
        return await self._traced("keep_queued", lambda: self._inner.keep_queued(claim, ttl))

    async def claim_queued(self, claim: Claim, ttl: float) -> QueueState:
        return await self._traced("claim_queued", lambda: self._inner.claim_queued(claim, ttl))

    async def leave_queue(self, claim: Claim) -> None:
        await self._traced("leave_queue", lambda: self._inner.leave_queue(claim))

    async def clear_queue(self, user_id: str, conversation_id: str) -> int:
        return await self._traced(
            "clear_queue", lambda: self._inner.clear_queue(user_id, conversation_id)
        )

    async def wait_released(self, user_id: str, conversation_id: str, wait: float) -> None:
        """Not a span: a wait, whose length says nothing about the backend."""
        await self._inner.wait_released(user_id, conversation_id, wait)

    async def post(self, ticket: Ticket) -> None:
        await self._traced("post", lambda: self._inner.post(ticket))

    async def unpost(self, ticket: Ticket) -> None:
        await self._traced("unpost", lambda: self._inner.unpost(ticket))

    async def posted(self, user_id: str) -> list[Ticket]:
        return await self._traced("posted", lambda: self._inner.posted(user_id))

    async def _traced(self, operation: str, call: Callable[[], Awaitable[T]]) -> T:
        with self._tracer.start_as_current_span(
            f"tasks.{operation}",
            kind=SpanKind.CLIENT,
            attributes={"db.system.name": "redis", "db.operation.name": operation},
        ):
            return await call()
