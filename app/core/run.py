"""What a run and its agent say to each other, in both directions, and nothing more.

The runner (tasks/runs.py) owns the task: it cancels it on a stop, decides
which status a stop is stored with, and knows when the turn is past the
point a stop could change. The agent owns its outcome: it reads whether a
stop was asked through `StopSignal` (to end a long step early, say) and
hands back a `Conclusion` once it has stored the turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from app.core.events import CompleteEvent, Event


@dataclass(frozen=True, slots=True)
class ConversationKey:
    """Whose conversation: the one key a task claim, a run and a turn share."""

    user_id: str
    conversation_id: str


class StopSignal(Protocol):
    @property
    def stop_requested(self) -> bool:
        """True once someone asked the run to stop; the cancel follows at once."""
        ...

    async def durable(self) -> None:
        """Return once every event the run has shown is kept where another instance would
        carry the run on from (at once, where none would): what must not happen twice (a
        tool call) waits for its announcement to be there first."""
        ...


class NeverStopped:
    """The signal of a run nobody can stop (a turn driven directly, in a test or a script)."""

    @property
    def stop_requested(self) -> bool:
        return False

    async def durable(self) -> None:
        return None


Notice = Callable[[Event], object]
"""Shows an event on the run's stream while the agent concludes (that storing waits, say)."""


@dataclass(slots=True)
class Conclusion:
    """How a stored turn ends on the wire: `events` (an error, say), then `complete`."""

    complete: CompleteEvent
    events: list[Event] = field(default_factory=list)
