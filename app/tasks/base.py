"""Who may run a conversation right now, and how a stop reaches the run's owner.

A `TaskManager` holds one claim per (user, conversation): a second claim
fails (the API answers 409). The owner refreshes its claim while the run
lives; a claim not refreshed within the TTL expires, so a crashed instance
never blocks a conversation for longer than that. A stop request may arrive
at any instance: the manager delivers it to the instance holding the claim,
whose registered stop handler cancels the run.

Backends: `InProcessTaskManager` (one process, the default and the test
reference) and `RedisTaskManager` (keys with TTL, pub/sub), both in this
package.

    TaskError                  base
    ├── TaskBackendUnavailable the backend (Redis) cannot be reached (answer 503)
    └── EventsGone             a resume asked for events no longer kept (answer 410)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from app.core.run import ConversationKey


class TaskError(Exception):
    pass


class TaskBackendUnavailable(TaskError):
    pass


class EventsGone(TaskError):
    pass


@dataclass(frozen=True, slots=True)
class Claim:
    user_id: str
    conversation_id: str
    task_id: str
    agent_type: str

    @property
    def key(self) -> ConversationKey:
        return ConversationKey(self.user_id, self.conversation_id)


StopHandler = Callable[[str, str], Awaitable[bool]]
"""Called on the owning instance with (user_id, conversation_id); True if it stopped a run."""


class TaskManager(Protocol):
    async def start(self, on_stop: StopHandler) -> None:
        """Connect and begin delivering stop requests for local runs to `on_stop`."""
        ...

    async def close(self) -> None:
        """Stop listening; claims still held are released by their runs, or expire."""
        ...

    async def claim(self, claim: Claim, ttl: float) -> bool:
        """Take the conversation for this task; False when another task holds it."""
        ...

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        """Extend the claim; False when it is no longer ours (expired and taken)."""
        ...

    async def release(self, claim: Claim) -> None:
        """Drop the claim if it is still ours, and wake anyone waiting for it to end."""
        ...

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        """The claim holding the conversation, if any."""
        ...

    async def request_stop(self, user_id: str, conversation_id: str, wait: float) -> bool:
        """Ask the owner to stop; wait up to `wait` seconds for the claim to be released.

        True when a running task was found and signalled.
        """
        ...

    async def ping(self) -> None:
        """Raise `TaskBackendUnavailable` when the backend cannot be reached."""
        ...
