"""User memory as `/memory` asks for it: the caller's items and switch, their errors mapped.

With `MEMORY_ENABLED=false` there is no memory anywhere: every call is `NotFound`, so
the routes answer 404 as for a path that does not exist. An item of another user, admins
included, is `NotFound` too; a new item past `MEMORY_MAX_ITEMS` is `Conflict` (409).
"""

from __future__ import annotations

from app.documents.user_memory import BadMemoryText, MemoryFull, UserMemory
from app.service.errors import BadRequest, Conflict, NotFound
from app.service.projects import ProjectService
from app.store.memory_models import UserMemoryItem

MEMORY_OFF = "Memory is not enabled on this server (MEMORY_ENABLED=false)"


class MemoryService:
    def __init__(self, memory: UserMemory | None, projects: ProjectService) -> None:
        self._memory = memory
        self._projects = projects

    def _on(self) -> UserMemory:
        if self._memory is None:
            raise NotFound(MEMORY_OFF)
        return self._memory

    async def items(self, user_id: str, project_id: str | None) -> list[UserMemoryItem]:
        return await self._on().items(user_id, project_id)

    async def add(self, user_id: str, content: str, project_id: str | None) -> UserMemoryItem:
        memory = self._on()
        if project_id is not None:
            await self._projects.project(user_id, project_id)
        try:
            return await memory.add(user_id, content, "user", project_id)
        except MemoryFull as exc:
            raise Conflict(str(exc)) from exc
        except BadMemoryText as exc:
            raise BadRequest(str(exc)) from exc

    async def change(self, user_id: str, item_id: str, content: str) -> UserMemoryItem:
        try:
            changed = await self._on().change(user_id, item_id, content)
        except BadMemoryText as exc:
            raise BadRequest(str(exc)) from exc
        if changed is None:
            raise NotFound("Memory item not found")
        return changed[1]

    async def forget(self, user_id: str, item_id: str) -> None:
        if await self._on().forget(user_id, item_id) is None:
            raise NotFound("Memory item not found")

    async def forget_all(self, user_id: str) -> int:
        return await self._on().forget_all(user_id)

    async def enabled(self, user_id: str) -> bool:
        return await self._on().enabled(user_id)

    async def set_enabled(self, user_id: str, enabled: bool) -> None:
        await self._on().set_enabled(user_id, enabled)
