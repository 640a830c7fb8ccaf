"""What a tool is to an agent: a schema the model sees and an async call.

A tool that says what it is about to do ("Searching the web: …") implements
`notice()`: the ReAct loop shows that thinking note before the call's
`tool_start`, so a notice about an action always comes before it. Events a
tool has while it runs go through `ToolContext.emit`; the loop interleaves
them with the other concurrent calls' events. Sources a tool used travel back in
`ToolOutput.references` and end up in the turn's single `reference` event.

A tool is one class::

    class Clock:
        schema = ToolSchema("clock", "The current UTC time.")

        async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            return ToolOutput(datetime.now(UTC).isoformat())
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from app.core.events import Event, Reference
from app.core.tools import ToolSchema


@dataclass(slots=True)
class ToolOutput:
    text: str
    is_error: bool = False
    references: list[Reference] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ToolContext:
    user_id: str
    conversation_id: str
    emit: Callable[[Event], None]


class Tool(Protocol):
    @property
    def schema(self) -> ToolSchema: ...

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Do the work; raise on failure (the loop turns it into an error result)."""
        ...


@runtime_checkable
class Announced(Protocol):
    """A tool whose calls are announced: `notice()` is shown before the call's `tool_start`."""

    def notice(self, args: dict[str, Any]) -> str | None:
        """The thinking note for a call with these arguments; None shows nothing."""
        ...
