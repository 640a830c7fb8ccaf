"""What a tool is to an agent: a schema the model sees and an async call.

A tool may emit events while it runs (the web search names its query as a
thinking note) through `ToolContext.emit`; the ReAct loop interleaves them
with the other concurrent calls' events. Sources a tool used travel back in
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
from typing import Any, Protocol

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
