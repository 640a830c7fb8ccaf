"""What agents tell the service's telemetry, as hooks that cost nothing when nobody listens.

Agents and tools must not know OpenTelemetry or Prometheus (they live in
`app/telemetry`, an outer layer), yet the telemetry needs to see
inside a turn: which tool ran and how it ended, a store that had to be
retried, the trace a run belongs to. This module is the narrow interface
between the two; `NO_OBSERVER` is what an agent core built without
telemetry (a unit test, a benchmark) gets.

Model calls have their own hook beside the model (`app/llm/base.py`,
`ModelObserver`), and runs theirs beside the turn service.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

ToolEnded = Callable[[bool], None]
"""Told whether a tool call ended in an error (its result `is_error`)."""


class AgentObserver(Protocol):
    def tool_call(self, name: str, call_id: str) -> AbstractContextManager[ToolEnded]:
        """Entered around one tool call, in the task that runs it."""
        ...

    def store_retried(self) -> None:
        """The final store of a turn failed and will be tried again."""
        ...

    def trace_id(self) -> str | None:
        """The current trace's id (32 hex digits) when tracing is on, else None."""
        ...


def _ignore(is_error: bool) -> None:
    return None


class NoObserver:
    """Sees nothing: each hook is one call that returns at once."""

    def tool_call(self, name: str, call_id: str) -> AbstractContextManager[ToolEnded]:
        return contextlib.nullcontext(_ignore)

    def store_retried(self) -> None:
        return None

    def trace_id(self) -> str | None:
        return None


NO_OBSERVER = NoObserver()
