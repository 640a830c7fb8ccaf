"""`/projects`: groups of conversations with their own instructions, files and defaults
(API.md §4).

Only the caller's own projects, whoever the caller is (an admin too): another user's id
answers 404. A conversation joins one with the stream field `projectId` or `PATCH
/session/{id} {projectId}`. Docs: docs/use/projects.md, docs/integrate/memory-and-projects.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body, Path
from pydantic import StringConstraints, model_validator
from sqlmodel import Field

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import Envelope, ok
from app.core.wire import WireModel, WireTime
from app.service.projects import ProjectDetail
from app.service.records import PUBLIC_CONFIG, ProjectBase

if TYPE_CHECKING:
    from app.store.models import StoredFile
    from app.store.project_models import StoredProject

router = APIRouter(prefix="/projects", tags=["projects"])
Responses = dict[int | str, dict[str, Any]]

ProjectId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
FileId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Instructions = Annotated[str, StringConstraints(max_length=8000)]
Kind = Annotated[str, StringConstraints(min_length=1, max_length=32)]
ModelId = Annotated[str, StringConstraints(min_length=1, max_length=64)]
NOT_FOUND: Responses = {404: {"description": "No such project of the caller's"}}
BAD_DEFAULT: Responses = {400: {"description": "An unknown `defaultKind` or `defaultModel`"}}


class ProjectRecord(ProjectBase):
    """A project as its owner sees it (every column of the project's base)."""

    model_config = PUBLIC_CONFIG
    project_id: str
    create_time: WireTime
    update_time: WireTime


class ProjectFileRecord(WireModel):
    file_id: str
    file_name: str


class ProjectView(ProjectRecord):
    files: list[ProjectFileRecord]
    """The files attached, in the order they were."""
    conversations: int
    """How many conversations it holds."""


class NewProject(WireModel):
    name: Name
    instructions: Instructions = ""
    default_kind: Kind | None = Field(
        default=None, description="The agent a new chat in it starts with (`GET /agent/kinds`)."
    )
    default_model: ModelId | None = Field(
        default=None, description="The model its turns take when they name none."
    )


class ProjectChange(WireModel):
    """What to change; a default set to null is cleared, a field left out stays."""

    name: Name | None = None
    instructions: Instructions | None = None
    default_kind: Kind | None = None
    default_model: ModelId | None = None

    @model_validator(mode="after")
    def _something(self) -> ProjectChange:
        if not self.model_fields_set:
            raise ValueError("give at least one of name, instructions, defaultKind, defaultModel")
        if "name" in self.model_fields_set and self.name is None:
            raise ValueError("name cannot be null")
        if "instructions" in self.model_fields_set and self.instructions is None:
            raise ValueError("instructions cannot be null (send an empty string)")
        return self


class Attachment(WireModel):
    file_id: FileId


class DeletedProject(WireModel):
    project_id: str
    deleted_conversations: int


def _record(project: StoredProject) -> ProjectRecord:
    return ProjectRecord.model_validate(project)


def _file(file: StoredFile) -> ProjectFileRecord:
    return ProjectFileRecord(file_id=file.id, file_name=file.file_name)


def _view(detail: ProjectDetail) -> ProjectView:
    return ProjectView.model_validate(
        {
            **_record(detail.project).model_dump(),
            "files": [_file(f) for f in detail.files],
            "conversations": detail.conversations,
        }
    )


@router.post("", summary="Make a project", responses=BAD_DEFAULT)
async def create_project(
    body: NewProject, user: UserDep, services: ServicesDep
) -> Envelope[ProjectRecord]:
    fields: dict[str, Any] = body.model_dump()
    return ok(_record(await services.projects.create(user, fields)))


@router.get("", summary="Your projects, newest first")
async def list_projects(user: UserDep, services: ServicesDep) -> Envelope[list[ProjectRecord]]:
    return ok([_record(p) for p in await services.projects.projects(user)])


@router.get("/{project_id}", summary="A project, with its files", responses=NOT_FOUND)
async def read_project(
    project_id: ProjectId, user: UserDep, services: ServicesDep
) -> Envelope[ProjectView]:
    """With its attached files and how many conversations it holds (list them with
    `GET /session/list?projectId=`)."""
    return ok(_view(await services.projects.detail(user, project_id)))


@router.patch("/{project_id}", summary="Change a project", responses={**NOT_FOUND, **BAD_DEFAULT})
async def change_project(
    project_id: ProjectId,
    body: Annotated[ProjectChange, Body()],
    user: UserDep,
    services: ServicesDep,
) -> Envelope[ProjectRecord]:
    fields = {name: getattr(body, name) for name in body.model_fields_set}
    return ok(_record(await services.projects.change(user, project_id, fields)))


@router.delete(
    "/{project_id}", summary="Delete a project and its conversations", responses=NOT_FOUND
)
async def delete_project(
    project_id: ProjectId, user: UserDep, services: ServicesDep
) -> Envelope[DeletedProject]:
    """Its conversations go as `DELETE /session/{id}` deletes one, and its schedules, memory
    items and attachments with it; the attached files stay in the caller's library."""
    count = await services.projects.delete(user, project_id)
    return ok(DeletedProject(project_id=project_id, deleted_conversations=count))


@router.post(
    "/{project_id}/files",
    summary="Attach one of your files to a project",
    responses={404: {"description": "No such project, or file, of the caller's"}},
)
async def attach_file(
    project_id: ProjectId, body: Attachment, user: UserDep, services: ServicesDep
) -> Envelope[ProjectFileRecord]:
    """Its turns search it (`search_project_files`); attaching it again changes nothing."""
    return ok(_file(await services.projects.attach(user, project_id, body.file_id)))


@router.delete(
    "/{project_id}/files/{file_id}",
    summary="Detach a file from a project",
    responses={404: {"description": "No such project of the caller's, or the file is not in it"}},
)
async def detach_file(
    project_id: ProjectId,
    file_id: Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")],
    user: UserDep,
    services: ServicesDep,
) -> Envelope[None]:
    """The file stays in the caller's library."""
    await services.projects.detach(user, project_id, file_id)
    return ok(None)
