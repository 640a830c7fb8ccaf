"""A stream request checked and its turn started, or a run's log found: every surface's path.

Everything a request can get wrong is answered here, before anything is
written or any model is called, as a `TurnRefused` the surface maps to its
own answer (an HTTP status, an A2A error). A started turn comes back with
what to call when its client goes away: a stop, or nothing when the run goes
on without it (`onDisconnect`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from app.agents.registry import AgentEntry
from app.config import DisconnectPolicy, SettingsPart
from app.documents.library import DocumentLibrary
from app.limits import LimitExceeded, UserLimits
from app.service.errors import (
    BadRequest,
    Gone,
    NotAvailable,
    NotFound,
    OverLimit,
    TooLong,
    Unavailable,
)
from app.service.turns import Strategy, TurnService
from app.tasks.base import EventsGone, TaskBackendUnavailable
from app.tasks.log import EventLogReader
from app.tasks.runs import Run, RunRegistry
from app.tasks.webhooks import WebhookRefused, Webhooks

CONVERSATION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """A stream request as every surface reads it into our terms."""

    query: str | None
    conversation_id: str | None = None
    """None or empty: a new conversation."""
    file_id: str | None = None
    on_disconnect: DisconnectPolicy | None = None
    """None: the service's default (`ON_DISCONNECT`)."""
    strategy: Strategy | None = None
    """On a busy conversation; None: `reject`."""
    webhook: str | None = None


class StreamSettings(SettingsPart):
    query_max_chars: int
    on_disconnect: DisconnectPolicy


class StreamService:
    """Starts turns and finds runs to read, for every surface; built once in the lifespan."""

    def __init__(
        self,
        settings: StreamSettings,
        turns: TurnService,
        runs: RunRegistry,
        files: DocumentLibrary,
        limits: UserLimits,
        webhooks: Webhooks,
    ) -> None:
        self._settings = settings
        self._turns = turns
        self._runs = runs
        self._files = files
        self._limits = limits
        self._webhooks = webhooks

    async def open(
        self, entry: AgentEntry, request: TurnRequest, user: str
    ) -> tuple[Run, Callable[[], object] | None]:
        """Check the request and start its turn; the run, and what to call if its client leaves."""
        question = (request.query or "").strip()
        if not question:
            raise BadRequest("query is required and must not be empty")
        limit = self._settings.query_max_chars
        if len(request.query or "") > limit:
            raise TooLong(f"query is longer than {limit} characters")
        conversation_id = request.conversation_id or uuid.uuid4().hex
        valid_conversation_id(conversation_id)
        await self._check_file(entry, request.file_id, user)
        if entry.kind not in self._turns.kinds():
            raise NotAvailable(f"The {entry.kind} agent is not available in this version")
        try:
            webhook = await self._webhooks.target(request.webhook)
        except WebhookRefused as exc:
            raise BadRequest(f"webhook refused: {exc}") from exc
        try:
            slot = await self._limits.open_stream(user, uuid.uuid4().hex)
        except LimitExceeded as exc:
            raise OverLimit(str(exc), exc.retry_after) from exc
        try:
            run = await self._turns.start(
                entry.kind,
                user,
                conversation_id,
                question,
                request.file_id,
                on_end=slot.release,
                strategy=request.strategy or "reject",
            )
        except BaseException:
            await slot.release()
            raise
        if webhook is not None:
            self._webhooks.notify(run, webhook)
        if (request.on_disconnect or self._settings.on_disconnect) != "cancel":
            return run, None
        return run, lambda: run.stop("client_gone")

    async def reader(self, user: str, conversation_id: str, after: int) -> EventLogReader | None:
        """The log of the conversation's running or recent run, on any instance; None if none."""
        valid_conversation_id(conversation_id)
        try:
            return await self._runs.reader(user, conversation_id, after)
        except TaskBackendUnavailable as exc:
            raise Unavailable("Service unavailable: the task backend (Redis) is down") from exc
        except EventsGone as exc:
            raise Gone(f"Cannot resume: {exc}; read the conversation's history") from exc

    async def _check_file(self, entry: AgentEntry, file_id: str | None, user: str) -> None:
        """A named file must be the caller's (another user's is not found); some agents need one."""
        if file_id:
            if await self._files.get(user, file_id) is None:
                raise NotFound("File not found")
        elif entry.needs_file:
            raise BadRequest(f"fileId is required for the {entry.kind} agent")


def valid_conversation_id(value: str) -> str:
    if not CONVERSATION_ID.fullmatch(value):
        raise BadRequest("conversationId must match ^[A-Za-z0-9_-]{1,128}$")
    return value
