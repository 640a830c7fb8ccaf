"""Conversation history (API.md "Sessions"), always scoped to the caller."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.store.base import StoredTurn

router = APIRouter(prefix="/session", tags=["sessions"])

ConversationId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,128}$")]


class ConversationRecord(BaseModel):
    conversationId: str
    question: str
    agentType: str
    fileid: str | None
    createTime: str
    updateTime: str


class ConversationPage(BaseModel):
    records: list[ConversationRecord]
    total: int
    pageNum: int
    pageSize: int


class MessageRecord(BaseModel):
    id: int
    question: str
    answer: str | None
    thinking: str | None
    tools: list[dict[str, Any]]
    reference: list[dict[str, str]]
    recommend: list[str]
    fileid: str | None
    status: str
    error: str | None
    firstResponseTime: int | None
    totalResponseTime: int | None
    promptTokens: int
    completionTokens: int
    createTime: str


class ConversationDetail(BaseModel):
    conversationId: str
    agentType: str
    fileid: str | None
    messages: list[MessageRecord]


class Deleted(BaseModel):
    conversationId: str
    deleted: int


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _message(turn: StoredTurn) -> MessageRecord:
    return MessageRecord(
        id=turn.id,
        question=turn.question,
        answer=turn.answer,
        thinking=turn.thinking,
        tools=turn.tools,
        reference=turn.reference,
        recommend=turn.recommend,
        fileid=turn.fileid,
        status=turn.status,
        error=turn.error,
        firstResponseTime=turn.first_response_time,
        totalResponseTime=turn.total_response_time,
        promptTokens=turn.prompt_tokens,
        completionTokens=turn.completion_tokens,
        createTime=iso(turn.create_time),
    )


@router.get("/list", summary="List conversations, newest activity first")
async def list_conversations(
    user: UserDep,
    services: ServicesDep,
    page_num: Annotated[int, Query(alias="pageNum", ge=1)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 10,
) -> Envelope[ConversationPage]:
    """One record per conversation: its first question, agent and file."""
    items, total = await services.store.list_conversations(user, page_num, page_size)
    records = [
        ConversationRecord(
            conversationId=c.session_id,
            question=c.question,
            agentType=c.agent_type,
            fileid=c.fileid,
            createTime=iso(c.create_time),
            updateTime=iso(c.update_time),
        )
        for c in items
    ]
    return ok(ConversationPage(records=records, total=total, pageNum=page_num, pageSize=page_size))


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
            conversationId=conversation_id,
            agentType=turns[0].agent_type,
            fileid=next((t.fileid for t in turns if t.fileid), None),
            messages=[_message(t) for t in turns],
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
    return ok(Deleted(conversationId=conversation_id, deleted=deleted.turns))
