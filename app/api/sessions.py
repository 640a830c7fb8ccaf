"""Conversation history (API.md "Sessions"), always scoped to the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.core.wire import WireModel, WireTime
from app.store.models import PUBLIC_CONFIG, TurnBase

router = APIRouter(prefix="/session", tags=["sessions"])

MAX_PAGE_NUM = 1_000_000
"""Far past any real history, and small enough that the row offset stays an int64."""

ConversationId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,128}$")]


class ConversationRecord(WireModel):
    conversation_id: str
    question: str
    agent_type: str
    fileid: str | None
    create_time: WireTime
    update_time: WireTime


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


class ConversationDetail(WireModel):
    conversation_id: str
    agent_type: str
    fileid: str | None
    messages: list[MessageRecord]


class Deleted(WireModel):
    conversation_id: str
    deleted: int


@router.get("/list", summary="List conversations, newest activity first")
async def list_conversations(
    user: UserDep,
    services: ServicesDep,
    page_num: Annotated[int, Query(alias="pageNum", ge=1, le=MAX_PAGE_NUM)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 10,
) -> Envelope[ConversationPage]:
    """One record per conversation: its first question, agent and file."""
    items, total = await services.store.list_conversations(user, page_num, page_size)
    records = [ConversationRecord.model_validate(c) for c in items]
    return ok(
        ConversationPage(records=records, total=total, page_num=page_num, page_size=page_size)
    )


@router.get("/{conversation_id}", summary="A conversation's turns, oldest first")
async def get_conversation(
    conversation_id: ConversationId, user: UserDep, services: ServicesDep
) -> Envelope[ConversationDetail]:
    """404 when the conversation does not exist or belongs to someone else."""
    turns = await services.store.get_conversation(user, conversation_id)
    if not turns:
        raise ApiError(404, "Conversation not found")
    return ok(
        ConversationDetail(
            conversation_id=conversation_id,
            agent_type=turns[0].agent_type,
            fileid=next((t.fileid for t in turns if t.fileid), None),
            messages=[MessageRecord.model_validate(t) for t in turns],
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
    await services.turns.forget(user, conversation_id)
    return ok(Deleted(conversation_id=conversation_id, deleted=deleted.turns))
