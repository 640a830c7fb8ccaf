"""Projects: what the `/projects` routes, a turn's start and other features (schedules) ask.

`project()` answers "is this the user's project, and what does it set" for anyone who
needs it (a schedule checking its `projectId`, the A2A surface choosing `defaultKind`);
another user's project is `NotFound`, as is one that does not exist. `for_turn()` is a
turn's start: the project the request names (or the conversation is in), with the rule
that a conversation stays in the project it was started in (another project: 409).

Deleting a project deletes its schedules first (so none starts a run in it meanwhile),
then its conversations as `DELETE /session/{id}` does (their turns, the files only they
used, what the agents kept of them), then its memory items, its attachments (the files
stay in the library) and itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.agents.turn import InProject
from app.documents.library import DocumentLibrary
from app.llm.models import ModelCatalog
from app.service.errors import BadRequest, Conflict, NotFound
from app.service.turns import TurnService
from app.store.base import ConversationTitles, Marks, TurnStore
from app.store.models import StoredFile
from app.store.project_models import StoredProject
from app.store.projects import SqlProjects
from app.store.user_memory import TurnMemory

OTHER_PROJECT = (
    "The conversation is not in that project: move it with PATCH /session/{conversationId}"
)


@dataclass(frozen=True, slots=True)
class ProjectDetail:
    project: StoredProject
    files: list[StoredFile]
    conversations: int


@dataclass(frozen=True, slots=True)
class TurnInProject:
    """A turn's project as its start found it."""

    project: InProject | None
    place: str | None = None
    """The project to put the new conversation in, once the turn may start."""
    memory: TurnMemory | None = None
    """The user's memory as read with it; None: not read (the turn reads none, or the
    deployment keeps none)."""
    asked: bool = False
    """The conversation had turns when it was read."""


class ProjectService:
    def __init__(
        self,
        projects: SqlProjects,
        *,
        titles: ConversationTitles,
        store: TurnStore,
        turns: TurnService,
        files: DocumentLibrary,
        models: ModelCatalog,
        kinds: Collection[str],
        remembers: bool = False,
    ) -> None:
        """`remembers`: the deployment keeps user memory (`MEMORY_ENABLED`)."""
        self._remembers = remembers
        self._projects = projects
        self._titles = titles
        self._store = store
        self._turns = turns
        self._files = files
        self._models = models
        self._kinds = frozenset(kinds)

    async def project(self, user_id: str, project_id: str) -> StoredProject:
        """The user's project; `NotFound` for another's, or none."""
        found = await self._projects.get(user_id, project_id)
        if found is None:
            raise NotFound("Project not found")
        return found

    async def create(self, user_id: str, fields: dict[str, Any]) -> StoredProject:
        """A new project from `name`, `instructions`, `default_kind`, `default_model`."""
        self._check_defaults(fields)
        now = datetime.now(UTC)
        project = StoredProject(
            project_id=uuid.uuid4().hex,
            user_id=user_id,
            create_time=now,
            update_time=now,
            **fields,
        )
        await self._projects.add(project)
        return project

    async def projects(self, user_id: str) -> list[StoredProject]:
        return await self._projects.of_user(user_id)

    async def detail(self, user_id: str, project_id: str) -> ProjectDetail:
        project = await self.project(user_id, project_id)
        return ProjectDetail(
            project,
            await self._projects.files(user_id, project_id),
            await self._projects.count_conversations(user_id, project_id),
        )

    async def change(self, user_id: str, project_id: str, fields: dict[str, Any]) -> StoredProject:
        self._check_defaults(fields)
        changed = await self._projects.change(user_id, project_id, fields)
        if changed is None:
            raise NotFound("Project not found")
        return changed

    async def delete(self, user_id: str, project_id: str) -> int:
        """Delete the project and all it holds; how many conversations went with it."""
        await self.project(user_id, project_id)
        await self._projects.delete_schedules(user_id, project_id)
        conversations = await self._projects.conversations(user_id, project_id)
        for conversation_id in conversations:
            deleted = await self._store.delete_conversation(user_id, conversation_id)
            await self._files.discard_blobs(deleted.blob_keys)
            await self._turns.forget(user_id, conversation_id, deleted.gone)
        if not await self._projects.delete(user_id, project_id):
            raise NotFound("Project not found")
        return len(conversations)

    async def attach(self, user_id: str, project_id: str, file_id: str) -> StoredFile:
        await self.project(user_id, project_id)
        file = await self._files.get(user_id, file_id)
        if file is None or not await self._projects.attach(user_id, project_id, file_id):
            raise NotFound("File not found")
        return file

    async def detach(self, user_id: str, project_id: str, file_id: str) -> None:
        await self.project(user_id, project_id)
        if not await self._projects.detach(user_id, project_id, file_id):
            raise NotFound("That file is not attached to this project")

    async def move(self, user_id: str, conversation_id: str, project_id: str | None) -> Marks:
        """Put the conversation in the project, or (None) in none; `NotFound` when either is
        not the user's."""
        if project_id is not None:
            await self.project(user_id, project_id)
        marks = await self._titles.mark(user_id, conversation_id, project_id=project_id)
        if marks is None:
            raise NotFound("Conversation not found")
        return marks

    async def for_turn(
        self,
        user_id: str,
        conversation_id: str,
        new: bool,
        project_id: str | None,
        memory: bool = False,
    ) -> TurnInProject:
        """The project a turn is in: the one it names (`NotFound` if not the user's; a
        conversation with turns in another project or none: `Conflict`), else the
        conversation's. `new`: the service made the conversation's id, so it has no turns.
        `memory`: the turn reads the user's memory, which comes in the same statement (when
        the deployment keeps memory)."""
        memory = memory and self._remembers
        if new and project_id is None and not memory:
            return TurnInProject(None)
        read = await self._projects.for_turn(user_id, conversation_id, project_id, memory)
        if project_id is not None:
            if read.project is None:
                raise NotFound("Project not found")
            if read.placed != project_id and read.asked:
                raise Conflict(OTHER_PROJECT)
        if read.project is None:
            return TurnInProject(None, memory=read.memory, asked=read.asked)
        place = project_id if project_id is not None and read.placed != project_id else None
        return TurnInProject(
            InProject(read.project, tuple(read.file_ids)), place, read.memory, read.asked
        )

    async def place(self, user_id: str, conversation_id: str, project_id: str) -> None:
        await self._titles.place(user_id, conversation_id, project_id)

    def default_model(self, project: InProject | None) -> str | None:
        """The project's model for a turn that names none, while the catalog still has it."""
        model = project.project.default_model if project is not None else None
        return model if model in self._models.ids() else None

    def _check_defaults(self, fields: dict[str, Any]) -> None:
        kind = fields.get("default_kind")
        if kind is not None and kind not in self._kinds:
            raise BadRequest(f"Unknown agent kind {kind!r} (GET /agent/kinds)")
        model = fields.get("default_model")
        if model is not None and model not in self._models.ids():
            raise BadRequest(f"Unknown model {model!r} (GET /agent/models)")
