"""`/memory`: what the agents know about the caller, to see, add, edit and delete (API.md §4).

Only the caller's own items, whoever the caller is (an admin too): another user's id
answers 404. With `MEMORY_ENABLED=false` every route answers 404. Docs:
docs/use/memory.md, docs/integrate/memory-and-projects.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body, Path, Query
from pydantic import StrictBool, StringConstraints
from sqlmodel import Field

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import Envelope, ok
from app.core.wire import WireModel, WireTime
from app.service.records import PUBLIC_CONFIG, UserMemoryBase

if TYPE_CHECKING:
    from app.store.memory_models import UserMemoryItem

router = APIRouter(prefix="/memory", tags=["memory"])

ItemId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
ProjectId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
Content = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1000)]
"""An item's text: 1 to 1,000 characters once trimmed, else 422."""
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such item of the caller's, or memory is off (server)"}
}


class MemoryRecord(UserMemoryBase):
    """One item as the caller sees it (every column of the item's base, app/store/memory_models)."""

    model_config = PUBLIC_CONFIG
    id: str
    create_time: WireTime
    update_time: WireTime


class NewMemory(WireModel):
    content: Content
    project_id: ProjectId | None = Field(
        default=None, description="Keep it for this project's turns only; null: general."
    )


class MemoryEdit(WireModel):
    content: Content


class MemorySwitch(WireModel):
    enabled: StrictBool = Field(description="false: no turn of the caller reads or writes memory.")


class Forgotten(WireModel):
    deleted: int


def _record(item: UserMemoryItem) -> MemoryRecord:
    return MemoryRecord.model_validate(item)


@router.get("", summary="Your memory items, newest first", responses=NOT_FOUND)
async def list_memory(
    user: UserDep,
    services: ServicesDep,
    project_id: Annotated[ProjectId | None, Query(alias="projectId")] = None,
) -> Envelope[list[MemoryRecord]]:
    """The caller's items (general ones have `projectId: null`); `projectId` keeps one
    project's."""
    return ok([_record(i) for i in await services.memory.items(user, project_id)])


@router.post(
    "",
    summary="Add a memory item",
    responses={
        **NOT_FOUND,
        409: {"description": "The caller has MEMORY_MAX_ITEMS items already"},
    },
)
async def add_memory(
    body: NewMemory, user: UserDep, services: ServicesDep
) -> Envelope[MemoryRecord]:
    """A fact or preference in the caller's words; with `projectId` (a project of theirs,
    else 404) it is read only in that project."""
    return ok(_record(await services.memory.add(user, body.content, body.project_id)))


@router.get("/settings", summary="Your memory switch", responses=NOT_FOUND)
async def read_memory_settings(user: UserDep, services: ServicesDep) -> Envelope[MemorySwitch]:
    return ok(MemorySwitch(enabled=await services.memory.enabled(user)))


@router.patch("/settings", summary="Turn your memory on or off", responses=NOT_FOUND)
async def change_memory_settings(
    body: MemorySwitch, user: UserDep, services: ServicesDep
) -> Envelope[MemorySwitch]:
    """Off: no turn of the caller reads or writes memory (the items are kept, and editable)."""
    await services.memory.set_enabled(user, body.enabled)
    return ok(body)


@router.patch("/{item_id}", summary="Edit a memory item", responses=NOT_FOUND)
async def change_memory(
    item_id: ItemId,
    body: Annotated[MemoryEdit, Body()],
    user: UserDep,
    services: ServicesDep,
) -> Envelope[MemoryRecord]:
    return ok(_record(await services.memory.change(user, item_id, body.content)))


@router.delete("/{item_id}", summary="Delete a memory item", responses=NOT_FOUND)
async def delete_memory(item_id: ItemId, user: UserDep, services: ServicesDep) -> Envelope[None]:
    await services.memory.forget(user, item_id)
    return ok(None)


@router.delete("", summary="Delete all your memory items", responses=NOT_FOUND)
async def delete_all_memory(user: UserDep, services: ServicesDep) -> Envelope[Forgotten]:
    return ok(Forgotten(deleted=await services.memory.forget_all(user)))
