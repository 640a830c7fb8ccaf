"""Conversation history (API.md "Sessions"), always scoped to the caller.

A conversation is a tree of turns (API.md "Conversations you can correct"):
its history is the active path, root to leaf, each turn with its siblings,
so a client that knows nothing of branches reads a linear chat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Body, Path, Query
from pydantic import StrictBool, StringConstraints, model_validator
from sqlmodel import Field

from app.api.auth import UserDep
from app.api.deps import Services, ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.core.wire import WireModel, WireTime
from app.llm.errors import stored_error_message
from app.service.records import PUBLIC_CONFIG, Rating, TurnBase, title_of

if TYPE_CHECKING:
    from app.store.shares import Share
    from app.store.tree import ConversationTree

router = APIRouter(prefix="/session", tags=["sessions"])

MAX_PAGE_NUM = 1_000_000
"""Far past any real history, and small enough that the row offset stays an int64."""

ConversationId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
MAX_TURN_ID = 2**63 - 1
"""A turn id is an int64: a larger one is a 422, never a database error."""


Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
"""A title as a user may give it: 1 to 200 characters once trimmed, else 422."""
ProjectId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class ConversationRecord(WireModel):
    conversation_id: str
    title: str
    """The user's title, or the active path's first question cut to 100 characters."""
    question: str
    agent_type: str
    fileid: str | None
    create_time: WireTime
    update_time: WireTime
    pinned: bool = False
    """Pinned by the user: the list gives the pinned conversations first."""
    shared: bool = False
    """Shared by link (`POST /session/{id}/share`)."""
    project_id: str | None = None
    """The project it is in (`/projects`); null: none."""


class ConversationPage(WireModel):
    records: list[ConversationRecord]
    total: int
    page_num: int
    page_size: int


class MessageRecord(TurnBase):
    """One turn as the history shows it: every column of the turn's base (store/models.py).

    The table adds only its keys and owner; a column added to the base reaches here as it is.
    """

    model_config = PUBLIC_CONFIG
    id: int
    create_time: WireTime
    siblings: list[int] = Field(default_factory=list)
    """The turns with the same parent (this one included), oldest first: its other versions."""


class ConversationDetail(WireModel):
    conversation_id: str
    title: str
    agent_type: str
    fileid: str | None
    pinned: bool = False
    project_id: str | None = None
    messages: list[MessageRecord]


class ConversationChange(WireModel):
    """A new title, a pin, a project, or several; at least one."""

    title: Title | None = None
    pinned: StrictBool | None = Field(
        default=None, description="Pin it first in the list, or unpin it."
    )
    project_id: ProjectId | None = Field(
        default=None, description="Move it into this project of the caller's; null: out of any."
    )

    @model_validator(mode="after")
    def _something(self) -> ConversationChange:
        if self.title is None and self.pinned is None and "project_id" not in self.model_fields_set:
            raise ValueError("give a title, pinned or projectId")
        return self


class Renamed(WireModel):
    conversation_id: str
    title: str | None = Field(description="The title the user gave; null: never renamed.")
    pinned: bool
    project_id: str | None = None


class Deleted(WireModel):
    conversation_id: str
    deleted: int


class ActiveTurn(WireModel):
    turn_id: int = Field(ge=0, le=MAX_TURN_ID)


RatingComment = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)]


class RatingBody(WireModel):
    rating: Rating | None = Field(description="`up`, `down`, or null to take the verdict back.")
    comment: RatingComment | None = Field(
        default=None, description="What was good or wrong, up to 2,000 characters; optional."
    )


class Rated(WireModel):
    turn_id: int
    rating: Rating | None
    comment: str | None


async def _detail(
    services: Services,
    user: str,
    conversation_id: str,
    tree: ConversationTree,
    *,
    whole: bool = False,
) -> ConversationDetail:
    active = tree.path()
    path = list(tree.turns) if whole else active
    marks = await services.titles.marks(user, conversation_id)
    return ConversationDetail(
        conversation_id=conversation_id,
        # An edited first question renames a conversation nobody renamed.
        title=title_of(marks.title, active[0].question),
        agent_type=tree.turns[0].agent_type,
        fileid=next((t.fileid for t in path if t.fileid), None),
        pinned=marks.pinned,
        project_id=marks.project_id,
        messages=[
            MessageRecord.model_validate(t).model_copy(
                update={
                    "siblings": tree.siblings(t.id),
                    "error_message": stored_error_message(t.error, t.error_message),
                }
            )
            for t in path
            if t.id is not None
        ],
    )


@router.get("/list", summary="List conversations, newest activity first")
async def list_conversations(
    user: UserDep,
    services: ServicesDep,
    page_num: Annotated[int, Query(alias="pageNum", ge=1, le=MAX_PAGE_NUM)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 10,
    project_id: Annotated[ProjectId | None, Query(alias="projectId")] = None,
) -> Envelope[ConversationPage]:
    """One record per conversation: its first question, agent and file; with `projectId`,
    that project's conversations only."""
    items, total = await services.store.list_conversations(user, page_num, page_size, project_id)
    records = [ConversationRecord.model_validate(c) for c in items]
    return ok(
        ConversationPage(records=records, total=total, page_num=page_num, page_size=page_size)
    )


@router.get("/{conversation_id}", summary="A conversation's active path, oldest first")
async def get_conversation(
    conversation_id: ConversationId, user: UserDep, services: ServicesDep
) -> Envelope[ConversationDetail]:
    """The active path's turns, each with `parentId` and `siblings`; 404 when the conversation
    does not exist or belongs to someone else."""
    return ok(await conversation_detail(services, user, conversation_id))


async def conversation_detail(
    services: Services, user: str, conversation_id: str, *, whole: bool = False
) -> ConversationDetail:
    """The conversation as its history answers it: the active path, or with `whole` every
    turn of the tree (the JSON export); 404 when it is not the user's."""
    tree = await services.store.get_tree(user, conversation_id)
    if not tree.turns:
        raise ApiError(404, "Conversation not found")
    return await _detail(services, user, conversation_id, tree, whole=whole)


@router.post(
    "/{conversation_id}/active",
    summary="Make the path through a turn active",
    responses={404: {"description": "No such turn in the caller's conversation"}},
)
async def choose_path(
    conversation_id: ConversationId,
    active: Annotated[ActiveTurn, Body()],
    user: UserDep,
    services: ServicesDep,
) -> Envelope[ConversationDetail]:
    """The path through `turnId`, then the newest child at each step, becomes the history and
    the memory; the next stream with no `parentId` follows it, on any instance. Answers the
    new history."""
    tree = await services.store.choose_path(user, conversation_id, active.turn_id)
    if tree is None:
        raise ApiError(404, "Turn not found in this conversation")
    return ok(await _detail(services, user, conversation_id, tree))


@router.delete(
    "/{conversation_id}/turns/{turn_id}",
    summary="Delete a turn and every turn below it",
    responses={
        404: {"description": "No such turn in the caller's conversation"},
        409: {"description": "A turn of that subtree is running"},
    },
)
async def delete_turns(
    conversation_id: ConversationId,
    turn_id: Annotated[int, Path(ge=0, le=MAX_TURN_ID)],
    user: UserDep,
    services: ServicesDep,
) -> Envelope[Deleted]:
    """With the files only they used and what the agents kept of them (a research's
    checkpoints); an active path through it moves to the newest remaining sibling, or to the
    parent."""
    deleted = await services.store.delete_turns(user, conversation_id, turn_id)
    if deleted.running:
        raise ApiError(409, "A turn of this branch is running; stop it first")
    if deleted.turns == 0:
        raise ApiError(404, "Turn not found in this conversation")
    await services.files.discard_blobs(deleted.blob_keys)
    await services.turns.forget_turns(user, conversation_id, deleted.gone)
    return ok(Deleted(conversation_id=conversation_id, deleted=deleted.turns))


@router.put(
    "/{conversation_id}/turns/{turn_id}/rating",
    summary="Rate a turn's answer",
    responses={404: {"description": "No such turn in the caller's conversation"}},
)
async def rate_turn(
    conversation_id: ConversationId,
    turn_id: Annotated[int, Path(ge=0, le=MAX_TURN_ID)],
    body: RatingBody,
    user: UserDep,
    services: ServicesDep,
) -> Envelope[Rated]:
    """A thumb up or down, with an optional comment, shown as `messages[].rating` and
    `ratingComment`; a new verdict replaces the last, null takes it back. The conversation's
    place in the list does not move."""
    # A blank comment is none, and a verdict taken back takes its comment with it.
    comment = (body.comment or None) if body.rating is not None else None
    rated = await services.ratings.rate(user, conversation_id, turn_id, body.rating, comment)
    if not rated:
        raise ApiError(404, "Turn not found in this conversation")
    return ok(Rated(turn_id=turn_id, rating=body.rating, comment=comment))


class ShareLink(WireModel):
    token: str = Field(description="The link's secret: whoever holds it reads the conversation.")
    path: str = Field(description="Where this service's page shows it: `/#s=<token>`.")
    turn_id: int = Field(description="The last turn it shows.")
    created_at: WireTime


def _link(share: Share) -> ShareLink:
    return ShareLink(
        token=share.token,
        path=f"/#s={share.token}",
        turn_id=share.turn_id,
        created_at=share.created_at,
    )


@router.post(
    "/{conversation_id}/share",
    summary="Share a conversation by link, up to its latest turn",
    responses={404: {"description": "No such conversation of the caller's"}},
)
async def share_conversation(
    conversation_id: ConversationId, user: UserDep, services: ServicesDep
) -> Envelope[ShareLink]:
    """Anyone with the link reads the active path up to now, without signing in (`GET
    /shared/{token}`): questions, answers and sources, not thinking, tools or files. Shared
    again, the same link moves to the latest turn."""
    share = await services.shares.share(user, conversation_id)
    if share is None:
        raise ApiError(404, "Conversation not found")
    return ok(_link(share))


@router.get(
    "/{conversation_id}/share",
    summary="A conversation's share link",
    responses={404: {"description": "Not shared, or no such conversation of the caller's"}},
)
async def read_share(
    conversation_id: ConversationId, user: UserDep, services: ServicesDep
) -> Envelope[ShareLink]:
    share = await services.shares.of(user, conversation_id)
    if share is None:
        raise ApiError(404, "This conversation is not shared")
    return ok(_link(share))


@router.delete(
    "/{conversation_id}/share",
    summary="Stop sharing a conversation",
    responses={404: {"description": "Not shared, or no such conversation of the caller's"}},
)
async def unshare_conversation(
    conversation_id: ConversationId, user: UserDep, services: ServicesDep
) -> Envelope[None]:
    """The link answers 404 from now on, on every instance; sharing again makes a new one."""
    if not await services.shares.unshare(user, conversation_id):
        raise ApiError(404, "This conversation is not shared")
    return ok(None)


@router.patch(
    "/{conversation_id}",
    summary="Rename, pin or move a conversation",
    responses={404: {"description": "No such conversation, or project, of the caller's"}},
)
async def change_conversation(
    conversation_id: ConversationId,
    body: ConversationChange,
    user: UserDep,
    services: ServicesDep,
) -> Envelope[Renamed]:
    """The title is trimmed; `projectId` moves it into a project of the caller's (null: out of
    any); what the body leaves out stays as it was. 404 when the conversation does not exist
    or is someone else's."""
    marks = None
    if "project_id" in body.model_fields_set:
        marks = await services.projects.move(user, conversation_id, body.project_id)
    if body.title is not None or body.pinned is not None:
        marks = await services.titles.mark(
            user, conversation_id, title=body.title, pinned=body.pinned
        )
    if marks is None:
        raise ApiError(404, "Conversation not found")
    return ok(
        Renamed(
            conversation_id=conversation_id,
            title=marks.title,
            pinned=marks.pinned,
            project_id=marks.project_id,
        )
    )


@router.delete("/{conversation_id}", summary="Delete a conversation")
async def delete_conversation(
    conversation_id: ConversationId, user: UserDep, services: ServicesDep
) -> Envelope[Deleted]:
    """Deletes the conversation's turns in one transaction; 404 when there is nothing to delete."""
    deleted = await services.store.delete_conversation(user, conversation_id)
    if deleted.turns == 0:
        raise ApiError(404, "Conversation not found")
    await services.files.discard_blobs(deleted.blob_keys)
    await services.turns.forget(user, conversation_id, deleted.gone)
    return ok(Deleted(conversation_id=conversation_id, deleted=deleted.turns))
