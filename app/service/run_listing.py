"""Reading the runs a user has going, for `/agent/runs` and the admins' list.

Kept apart from `turns`, which starts and stops them: this side only reads the
list of runs (`RunsBoard`), the newest event of each running one, and the
paused turns stored, and answers `Unavailable` when what it reads is down.
"""

from __future__ import annotations

import asyncio

from app.service.errors import Unavailable
from app.service.turns import TASKS_UNREADABLE
from app.store.base import StoreError, TurnStore
from app.store.models import StoredTurn
from app.tasks.base import RunsBoard, TaskBackendUnavailable, Ticket
from app.tasks.runs import RunRegistry


class RunListing:
    def __init__(self, board: RunsBoard, runs: RunRegistry, store: TurnStore) -> None:
        self._board = board
        self._runs = runs
        self._store = store

    async def posted(self, user_id: str) -> list[tuple[Ticket, int | None]]:
        """The user's running and queued turns on any instance, oldest first; beside each,
        the newest event id of a running one (None: queued)."""
        try:
            tickets = await self._board.posted(user_id)
            # Read together: on Redis, the running turns' newest ids then share one round trip.
            running = [t for t in tickets if t.status == "running"]
            newest = await asyncio.gather(
                *(self._runs.last_event_id(user_id, t.conversation_id, t.task_id) for t in running)
            )
        except TaskBackendUnavailable as exc:
            raise Unavailable(TASKS_UNREADABLE) from exc
        last_ids = dict(zip((t.task_id for t in running), newest, strict=True))
        return [(t, last_ids.get(t.task_id)) for t in tickets]

    async def everyones(self) -> list[Ticket]:
        """Every user's running and queued turns on any instance, oldest first (admins')."""
        try:
            users = await self._board.users()
            posted = await asyncio.gather(*(self._board.posted(user) for user in users))
        except TaskBackendUnavailable as exc:
            raise Unavailable(TASKS_UNREADABLE) from exc
        return sorted((t for each in posted for t in each), key=lambda t: t.started_at)

    async def paused(self, user_id: str, limit: int) -> list[StoredTurn]:
        """The user's conversations waiting on the user's decision, newest first (`limit`)."""
        try:
            return await self._store.paused_turns(user_id, limit)
        except StoreError as exc:
            raise Unavailable("Service unavailable: the database is down") from exc
