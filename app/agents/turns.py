"""Starting a turn: claim the conversation, store the question, launch the run.

This is the one place that orders those steps, so that a busy conversation
(409) or a dependency that is down (503) is answered before any byte of the
stream and before anything is written, and a claim is never left behind by
a request that failed half-way.

    TurnError            base: routes map each kind to a status
    ├── UnknownAgent     no such agent is available (501)
    ├── ConversationBusy a task already runs for this conversation (409)
    └── DependencyDown   the database or the task backend is down (503)
"""

from __future__ import annotations

import contextlib
import uuid

from app.agents.base import BaseAgent, Turn
from app.core.run import ConversationKey
from app.core.tools import GenerateOptions
from app.store.base import StoreError
from app.tasks.base import Claim, TaskBackendUnavailable, TaskManager
from app.tasks.runs import OnEnd, Run, RunRegistry


class TurnError(Exception):
    pass


class UnknownAgent(TurnError):
    pass


class ConversationBusy(TurnError):
    pass


class DependencyDown(TurnError):
    pass


class TurnService:
    def __init__(
        self, agents: dict[str, BaseAgent], tasks: TaskManager, runs: RunRegistry, ttl: float
    ) -> None:
        self._agents = agents
        self._tasks = tasks
        self._runs = runs
        self._ttl = ttl

    def kinds(self) -> frozenset[str]:
        """The agents this service runs; a stream for any other kind answers 501."""
        return frozenset(self._agents)

    async def forget(self, user_id: str, conversation_id: str) -> None:
        """A conversation was deleted: each agent drops what it kept of it."""
        key = ConversationKey(user_id, conversation_id)
        for agent in self._agents.values():
            await agent.forget(key)

    async def start(
        self,
        kind: str,
        user_id: str,
        conversation_id: str,
        question: str,
        file_id: str | None = None,
        options: GenerateOptions | None = None,
        on_end: OnEnd | None = None,
    ) -> Run:
        """Claim, store the question, launch; `on_end` runs when the run has stored its turn."""
        agent = self._agents.get(kind)
        if agent is None:
            raise UnknownAgent(kind)
        claim = Claim(user_id, conversation_id, uuid.uuid4().hex, kind)
        try:
            claimed = await self._tasks.claim(claim, self._ttl)
        except TaskBackendUnavailable as exc:
            raise DependencyDown("the task backend (Redis) is unavailable") from exc
        if not claimed:
            raise ConversationBusy(conversation_id)
        turn = Turn(
            key=claim.key,
            question=question,
            task_id=claim.task_id,
            file_id=file_id,
            options=options or GenerateOptions(),
        )
        try:
            await agent.begin(turn)
        except BaseException as exc:
            with contextlib.suppress(TaskBackendUnavailable):
                await self._tasks.release(claim)
            if isinstance(exc, StoreError):
                raise DependencyDown("the database is unavailable") from exc
            raise
        return self._runs.launch(claim, agent.start(turn), on_end)
