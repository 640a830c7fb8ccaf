"""A stream request checked and its turn started, or a run's log found: every surface's path.

Everything a request can get wrong is answered here, before anything is
stored or any model is called, as a `TurnRefused` the surface maps to its
own answer (an HTTP status, an A2A error); the conversation's claim, taken
meanwhile, is given back. A started turn comes back with
what to call when its client goes away: a stop, or nothing when the run goes
on without it (`onDisconnect`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from app.agents.approvals import ApprovalAnswer, ApprovalMode
from app.agents.registry import AgentEntry
from app.agents.turn import InProject
from app.config import DisconnectPolicy, SettingsPart
from app.documents.extract import PPTX, UnreadableFile
from app.documents.library import DocumentLibrary
from app.limits import LimitExceeded, StreamSlot, UserLimits
from app.llm.models import ModelCatalog, UnknownModel
from app.service.errors import (
    BadRequest,
    Gone,
    ModelUnknown,
    NotAvailable,
    NotFound,
    OverLimit,
    TemplateUnusable,
    TooLong,
    Unavailable,
)
from app.service.projects import ProjectService, TurnInProject
from app.service.turns import DATABASE_DOWN, TASKS_UNREADABLE, Strategy, TurnService
from app.store.base import StoreError, TurnStore
from app.store.models import StoredTurn
from app.tasks.base import EventsGone, TaskBackendUnavailable
from app.tasks.log import EventLogReader
from app.tasks.runs import Run, RunRegistry
from app.tasks.webhooks import WebhookRefused, Webhooks

CONVERSATION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
DECIDING = "(a decision on a paused turn)"
"""What the list of runs shows as the question while a decision is taken (the turn's own
question replaces it as the turn goes on)."""
TURN_ID = re.compile(r"[0-9]{1,18}")
"""A turn id as a string: digits, and short enough to stay an int64."""
MemoryMode = Literal["on", "off"]


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
    parent_id: int | str | None = None
    """The turn the new one follows (`0`: none, a new first question); None: the active leaf.
    As the client sent it: checked here (not an integer: 400; not a turn of theirs: 404)."""
    regenerate: int | str | None = None
    """A turn whose question (and file) to answer again, as its new sibling; `query` is not
    needed, and not used."""
    model: str | None = None
    """The catalog id of the model to answer with; None: the kind's (`AGENT_MODELS`)."""
    tool_approval: ApprovalMode | None = None
    """`ask`: every acting tool waits for the user's yes; `auto`: only those `TOOL_APPROVAL`
    names; None: the settings' policy."""
    approval: ApprovalAnswer | None = None
    """A decision on the conversation's paused turn, which goes on: `query` is not needed."""
    review_plan: bool = False
    """Deep research: each round's plan waits for the user's decision."""
    template_file_id: str | None = None
    """PPT builder: the uploaded .pptx to build the deck on."""
    project_id: str | None = None
    """The project a new conversation starts in (a later turn stays in the conversation's)."""
    memory: MemoryMode | None = None
    """`off`: a temporary turn, which neither reads nor writes the user's memory."""


@dataclass(frozen=True, slots=True)
class _Checked:
    """A stream request that passed its checks, and its slot under the limits."""

    found: TurnInProject
    model_id: str
    webhook: str | None
    slot: StreamSlot


class StreamSettings(SettingsPart):
    query_max_chars: int
    on_disconnect: DisconnectPolicy


class StreamService:
    """Starts turns and finds runs to read, for every surface; built once in the lifespan."""

    def __init__(
        self,
        settings: StreamSettings,
        *,
        turns: TurnService,
        runs: RunRegistry,
        files: DocumentLibrary,
        limits: UserLimits,
        webhooks: Webhooks,
        store: TurnStore,
        models: ModelCatalog,
        projects: ProjectService,
    ) -> None:
        self._settings = settings
        self._models = models
        self._projects = projects
        self._store = store
        self._turns = turns
        self._runs = runs
        self._files = files
        self._limits = limits
        self._webhooks = webhooks

    async def open(
        self, entry: AgentEntry, request: TurnRequest, user: str, limit_key: str | None = None
    ) -> tuple[Run, Callable[[], object] | None]:
        """Check the request and start its turn; the run, and what to call if its client leaves.

        The turn counts against the limits of `limit_key` (default: the user's)."""
        conversation_id = request.conversation_id or uuid.uuid4().hex
        valid_conversation_id(conversation_id)
        regenerates = None
        if request.approval is not None:
            if not request.conversation_id:
                raise BadRequest("an approval needs the conversationId of its paused turn")
            parent_id = None
            question = DECIDING
        else:
            request, parent_id, regenerates = await self._place(request, conversation_id, user)
            question = (request.query or "").strip()
        if not question:
            raise BadRequest("query is required and must not be empty")
        limit = self._settings.query_max_chars
        if len(request.query or "") > limit:
            raise TooLong(f"query is longer than {limit} characters")
        claiming = self._turns.claim(entry.kind, user, conversation_id, question)
        try:
            checked = await self._check(entry, request, user, conversation_id, limit_key)
        except BaseException:
            await self._turns.withdraw(claiming)
            raise
        found, slot = checked.found, checked.slot
        try:
            if found.place is not None:
                await self._projects.place(user, conversation_id, found.place)
            claimed = await claiming
        except BaseException:
            await self._turns.withdraw(claiming)
            await slot.release()
            raise
        try:
            run = await self._turns.start(
                claimed,
                question,
                request.file_id,
                on_end=slot.release,
                strategy=request.strategy or "reject",
                parent_id=parent_id,
                first=request.approval is None and parent_id is None and not found.asked,
                regenerates=regenerates,
                model_id=checked.model_id,
                model_named=request.model is not None,
                tool_approval=request.tool_approval,
                answer=request.approval,
                review_plan=request.review_plan,
                template_file_id=request.template_file_id,
                project=found.project,
                temporary=request.memory == "off",
                remembered=found.memory,
                webhook=checked.webhook,
            )
        except BaseException:
            await slot.release()
            raise
        if checked.webhook is not None:
            self._webhooks.notify(run, checked.webhook)
        if (request.on_disconnect or self._settings.on_disconnect) != "cancel":
            return run, None
        return run, lambda: run.stop("client_gone")

    async def reader(self, user: str, conversation_id: str, after: int) -> EventLogReader | None:
        """The log of the conversation's running or recent run, on any instance; None if none."""
        valid_conversation_id(conversation_id)
        try:
            return await self._runs.reader(user, conversation_id, after)
        except TaskBackendUnavailable as exc:
            raise Unavailable(TASKS_UNREADABLE) from exc
        except EventsGone as exc:
            raise Gone(f"Cannot resume: {exc}; read the conversation's history") from exc

    async def _check(
        self,
        entry: AgentEntry,
        request: TurnRequest,
        user: str,
        conversation_id: str,
        limit_key: str | None,
    ) -> _Checked:
        """What the turn is asked in (its project, the user's memory), checked against what
        it names, and its stream's slot under the limits, taken last: a refused request
        takes none."""
        try:
            found = await self._projects.for_turn(
                user,
                conversation_id,
                not request.conversation_id,
                request.project_id,
                memory=request.memory != "off",
            )
        except StoreError as exc:
            raise Unavailable(DATABASE_DOWN) from exc
        await self._check_file(entry, request.file_id, user, found.project)
        await self._check_template(entry, request.template_file_id, user)
        try:
            model_id = self._models.choose(
                entry.kind, request.model or self._projects.default_model(found.project)
            )
        except UnknownModel as exc:
            raise ModelUnknown(str(exc)) from exc
        if entry.kind not in self._turns.kinds():
            raise NotAvailable(f"The {entry.kind} agent is not available in this version")
        try:
            webhook = await self._webhooks.target(request.webhook)
        except WebhookRefused as exc:
            raise BadRequest(f"webhook refused: {exc}") from exc
        try:
            slot = await self._limits.open_stream(limit_key or user, uuid.uuid4().hex)
        except LimitExceeded as exc:
            raise OverLimit(str(exc), exc.retry_after) from exc
        return _Checked(found, model_id, webhook, slot)

    async def _place(
        self, request: TurnRequest, conversation_id: str, user: str
    ) -> tuple[TurnRequest, int | None, int | None]:
        """Where the turn goes in the conversation's tree: the request as it will be asked
        (a regeneration's question and file are its turn's), the parent to store, and the
        turn it answers again (None: not a regeneration)."""
        regenerate = _turn_id(request.regenerate, "regenerate")
        if regenerate is not None:
            again = await self._turn(user, conversation_id, regenerate)
            # That turn's question, as it was asked: a `query` sent beside it is not a new one;
            # by the model that answered it, unless the request names another (or it is gone).
            model = request.model or (again.model if again.model in self._models.ids() else None)
            request = replace(request, query=again.question, file_id=again.fileid, model=model)
            return request, again.parent_id or 0, regenerate
        parent_id = _turn_id(request.parent_id, "parentId")
        if parent_id:
            await self._turn(user, conversation_id, parent_id)
        return request, parent_id, None

    async def _turn(self, user: str, conversation_id: str, turn_id: int) -> StoredTurn:
        try:
            turn = await self._store.get_turn(user, conversation_id, turn_id)
        except StoreError as exc:
            raise Unavailable(DATABASE_DOWN) from exc
        if turn is None:
            raise NotFound("Turn not found in this conversation")
        return turn

    async def _check_file(
        self, entry: AgentEntry, file_id: str | None, user: str, project: InProject | None
    ) -> None:
        """A named file must be the caller's (another user's is not found); some agents need
        one, unless the turn's project has files (they are searched instead)."""
        if file_id:
            if await self._files.get(user, file_id) is None:
                raise NotFound("File not found")
        elif entry.needs_file and (project is None or not project.file_ids):
            raise BadRequest(f"fileId is required for the {entry.kind} agent")

    async def _check_template(self, entry: AgentEntry, file_id: str | None, user: str) -> None:
        """A deck template must be the caller's readable .pptx, for the PPT builder, with
        the layouts the builder needs.

        Its layouts are read here in the isolated reader (a fraction of a second), so an
        unusable template is refused before anything is stored; the build reads them again
        when it first uses them (after a restart, say), and fails the same way."""
        if not file_id:
            return
        if entry.kind != "pptx":
            raise BadRequest("templateFileId is for the pptx agent only")
        file = await self._files.get(user, file_id)
        if file is None:
            raise NotFound("File not found")
        if file.mime_type != PPTX.mime_type:
            raise BadRequest("templateFileId must name a .pptx file")
        if file.status != "ready":
            raise BadRequest(f"The template could not be read: {file.error or file.status}")
        # Here, not at the top: the deck builder's package (python-pptx, Pillow, pdfium)
        # loads only once a deck is asked for, as the agents do (agents/on_demand.py).
        from app.agents.pptx.layouts import TemplateLayouts, UnusableTemplate, match

        try:
            match(TemplateLayouts.model_validate(await self._files.layouts(file)), "", "")
        except (UnreadableFile, UnusableTemplate) as exc:
            raise TemplateUnusable(str(exc)) from exc


def _turn_id(value: int | str | None, name: str) -> int | None:
    """A turn id as a client sent it (a JSON number, or digits in a query string)."""
    if value is None:
        return None
    if isinstance(value, bool) or not TURN_ID.fullmatch(str(value)):
        raise BadRequest(f"{name} must be a turn id (a non-negative integer)")
    return int(value)


def valid_conversation_id(value: str) -> str:
    if not CONVERSATION_ID.fullmatch(value):
        raise BadRequest("conversationId must match ^[A-Za-z0-9_-]{1,128}$")
    return value
