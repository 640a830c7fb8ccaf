"""Who may run a conversation right now, and how a stop reaches the run's owner.

The task backend plays three roles, each its own narrow interface, so a
consumer depends on the one it uses:

- `Claims`: one claim per (user, conversation). A second claim fails (the
  API answers 409). The owner refreshes its claim while the run lives; a
  claim not refreshed within the TTL expires, so a crashed instance never
  blocks a conversation for longer than that (with Redis, no longer than
  `INSTANCE_DEAD_SECONDS`: see `redis.liveness`). A stop request may arrive
  at any instance: it is delivered to the instance holding the claim, whose
  registered stop handler cancels the run.
- `ConversationQueue`: a request that asked to wait joins the conversation's
  queue and takes the claim once it is at the head and the conversation is
  free (`claim_queued`).
- `RunsBoard`: the caller's list of running and queued turns (`/agent/runs`).

`Tasks` holds one backend's roles, as `build_tasks` (`factory`) makes them:
in-process (`in_process`: one process, the default and the test reference)
or Redis (`redis`: keys with TTL, pub/sub), whose extra parts (releasing in
a run log's batch, the dead-instance sweep) are there only with Redis.

With Redis a running turn also outlives its instance (`TakeOvers`): one that
died, or drained on a deploy, is taken over by another, which carries the turn
on under the same task id; `app/service/takeover.py` does the carrying on.

    TaskError                  base
    ├── TaskBackendUnavailable the backend (Redis) cannot be reached (answer 503)
    ├── EventsGone             a resume asked for events no longer kept (answer 410)
    └── ClaimLost              another instance took the run over: this one stops writing it
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from app.core.run import ConversationKey


class TaskError(Exception):
    pass


class TaskBackendUnavailable(TaskError):
    pass


class EventsGone(TaskError):
    pass


class ClaimLost(TaskError):
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


QueueState = Literal["claimed", "waiting", "gone"]
"""What `claim_queued` found: the claim is ours; not our turn yet; our ticket was removed."""

TicketStatus = Literal["running", "queued"]


@dataclass(frozen=True, slots=True)
class Ticket:
    """A turn as the caller's list of runs shows it, on whichever instance it runs."""

    user_id: str
    conversation_id: str
    task_id: str
    agent_type: str
    question: str
    started_at: datetime
    """When the request came (aware UTC); for a queued turn, when it joined the queue."""
    status: TicketStatus


StopHandler = Callable[[str, str], Awaitable[bool]]
"""Called on the owning instance with (user_id, conversation_id); True if it stopped a run."""
LostClaim = Callable[[Claim], object]
"""Called with a claim of this instance's that another instance took over."""


class TaskBackend(Protocol):
    """Connecting to the backend and listening for stops; shared by the roles."""

    async def start(self, on_stop: StopHandler) -> None:
        """Connect and begin delivering stop requests for local runs to `on_stop`."""
        ...

    async def close(self) -> None:
        """Stop listening; claims still held are released by their runs, or expire."""
        ...

    async def ping(self) -> None:
        """Raise `TaskBackendUnavailable` when the backend cannot be reached."""
        ...


class Claims(Protocol):
    """Who runs each conversation, and stops delivered to them."""

    async def claim(self, claim: Claim, ttl: float, ticket: Ticket | None = None) -> bool:
        """Take the conversation for this task; False when another task holds it.

        With `ticket`, a claim taken also shows the turn in its user's list of runs,
        in the same step (no round trip of its own before the turn's first event).
        """
        ...

    async def refresh(self, claim: Claim, ttl: float) -> bool:
        """Extend the claim; False when it is no longer ours (expired and taken)."""
        ...

    async def release(self, claim: Claim) -> None:
        """Drop the claim if it is still ours, and wake anyone waiting for it to end.

        The turn leaves its user's list of runs in the same step (no round trip of its own).
        """
        ...

    async def current(self, user_id: str, conversation_id: str) -> Claim | None:
        """The claim holding the conversation, if any."""
        ...

    async def request_stop(self, user_id: str, conversation_id: str, wait: float) -> bool:
        """Ask the owner to stop; wait up to `wait` seconds for the claim to be released.

        True when a running task was found and signalled.
        """
        ...


class ConversationQueue(Protocol):
    """Turns waiting for their conversation, in arrival order (double texting)."""

    async def join_queue(self, claim: Claim, ttl: float) -> int:
        """Queue the claim behind the conversation's run; its place (1: next).

        The ticket lives `ttl` seconds unless `keep_queued` extends it, so a
        waiter on an instance that died leaves the queue on its own.
        """
        ...

    async def keep_queued(self, claim: Claim, ttl: float) -> bool:
        """Extend the ticket; False when it was removed (a stop cleared the queue)."""
        ...

    async def claim_queued(self, claim: Claim, ttl: float) -> QueueState:
        """Take the claim if the ticket heads the queue and the conversation is free.

        Tickets ahead whose waiters are gone (expired) are dropped on the way.
        """
        ...

    async def leave_queue(self, claim: Claim) -> None:
        """Drop the ticket, and wake the other waiters: the head may have moved."""
        ...

    async def clear_queue(self, user_id: str, conversation_id: str) -> int:
        """Drop every ticket of the conversation (a stop); how many there were."""
        ...

    async def wait_released(self, user_id: str, conversation_id: str, wait: float) -> None:
        """Return when the conversation's claim or queue changes, or after `wait` seconds."""
        ...


class RunsBoard(Protocol):
    """Each user's running and queued turns, on whichever instance they run."""

    async def post(self, ticket: Ticket) -> None:
        """Show the turn in its user's list of runs (a queued one, or one that started)."""
        ...

    async def unpost(self, ticket: Ticket) -> None:
        """Take the turn off the list: it ended, or left the queue."""
        ...

    async def posted(self, user_id: str) -> list[Ticket]:
        """The user's running and queued turns, oldest first; stale ones are dropped on the way."""
        ...

    async def users(self) -> list[str]:
        """Every user with a turn listed, maybe a stale one: an admin's view of all runs."""
        ...


class BatchRelease(Protocol):
    """Claims released by a run log's last batch, in Redis's own step (Redis only)."""

    def let_go(self, claim: Claim) -> None:
        """Keep the claim alive no more: the run log's last batch releases it (or the run
        goes on at another instance)."""
        ...


class DeadInstances(Protocol):
    """Which instances died, and freeing what they held (Redis only: see `sweeper`)."""

    @property
    def instance_id(self) -> str: ...

    @property
    def beat_interval(self) -> float:
        """Seconds between this instance's heartbeats, and between sweeps."""
        ...

    async def lead_sweep(self, interval: float) -> bool:
        """Whether this instance sweeps for dead instances now: one at a time, each `interval`."""
        ...

    async def dead_instances(self, holding: set[str], kept: float) -> list[str]:
        """The instances past their deadline, other than this one.

        `holding` are instances with turns stored `running`; `kept` is how long a
        dead one is still reported (its claims live that long at most).
        """
        ...

    async def give_up(
        self, instance: str, conversations: Iterable[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """Of the dead `instance`'s `conversations`, those whose turns are this sweep's to end:
        their claims, the dead one's, are this instance's now, or nobody held them. One that
        another instance holds is missing: it took the turn over."""
        ...

    async def free(self, conversations: Iterable[tuple[str, str]]) -> None:
        """Drop the claims given up to this instance (`give_up`), waking whoever waits on them."""
        ...


class TakeOvers(Protocol):
    """Turns that outlive their instance (Redis only): taken over, handed over.

    A run keeps its task id when it moves; its claim names the instance that runs it
    now, so the one that ran it before, if it was only slow, finds it lost (`on_lost`).
    """

    async def take_over(
        self, user_id: str, conversation_id: str, agent_type: str, dead: str, ttl: float
    ) -> Claim | None:
        """Take the conversation's claim from the `dead` instance, for the run it held (or,
        held by nobody, for the conversation's latest run kept); None when it is not to be
        had: another instance holds it, or nothing of the run is kept."""
        ...

    async def hand_back(self, claim: Claim, dead: str) -> None:
        """Give a claim `take_over` took back to the `dead` instance (the take-over met an
        outage past it), for the next sweep to take over again."""
        ...

    async def resign(self) -> None:
        """Count as dead from now on, so the others take over the turns this one handed over."""
        ...

    def on_lost(self, lost: LostClaim) -> None:
        """Call `lost` with each claim of this instance's that another one took over."""
        ...


@dataclass(frozen=True, slots=True)
class Tasks:
    """One backend's roles, built once in the lifespan; each consumer takes the role it uses."""

    backend: TaskBackend
    claims: Claims
    queue: ConversationQueue
    board: RunsBoard
    batch_release: BatchRelease | None = None
    """Set where a run's last log batch can release its claim (the shared logs, Redis)."""
    instances: DeadInstances | None = None
    """Set where other instances may die holding claims (Redis): the sweeper's side."""
    takeovers: TakeOvers | None = None
    """Set where another instance can carry a turn on (Redis)."""
