"""What the caller has going on: running, queued and paused turns across conversations.

A page shows them (a badge in its conversation list) and rejoins a running
one with `/agent/resume`. Running and queued turns come from the task
manager, so every instance answers the same with Redis; paused turns (deep
research waiting for the user) are turns that ended, read from the stored rows.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from pydantic import Field

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import Envelope, ok
from app.core.wire import WireModel, WireTime
from app.service.records import Pending

router = APIRouter(prefix="/agent", tags=["agent"])

PAUSED_SHOWN = 50
"""Paused conversations listed at most, newest first: older ones are in the history."""


class RunInfo(WireModel):
    kind: str = Field(description="The agent, as in `/agent/{kind}/stream`.")
    conversation_id: str
    question: str
    started_at: WireTime = Field(description="When the turn was asked (queued: when it queued).")
    status: Literal["running", "queued", "paused"]
    task_id: str | None = Field(description="The running or queued turn's task; null if paused.")
    session_id: int | None = Field(description="The stored turn's row, for a paused one.")
    last_event_id: int | None = Field(
        description="The newest event of a running turn; `/agent/resume` from 0 replays it all."
    )
    pending: list[Pending] = Field(
        default_factory=list,
        description="What a paused turn waits for the user's decision on (a tool call, a plan).",
    )


@router.get(
    "/runs",
    summary="The caller's running, queued and paused turns",
    responses={503: {"description": "The task backend (Redis) or the database is down"}},
)
async def list_runs(user: UserDep, services: ServicesDep) -> Envelope[list[RunInfo]]:
    """Running and queued turns (oldest first) on any instance, then paused ones (newest first)."""
    runs = [
        RunInfo(
            kind=t.agent_type,
            conversation_id=t.conversation_id,
            question=t.question,
            started_at=t.started_at,
            status=t.status,
            task_id=t.task_id,
            session_id=None,
            last_event_id=last_id,
        )
        for t, last_id in await services.listing.posted(user)
    ]
    busy = {r.conversation_id for r in runs}
    paused = await services.listing.paused(user, PAUSED_SHOWN)
    runs += [
        RunInfo(
            kind=turn.agent_type,
            conversation_id=turn.session_id,
            question=turn.question,
            started_at=turn.create_time,
            status="paused",
            task_id=None,
            session_id=turn.id,
            last_event_id=None,
            pending=turn.pending,
        )
        for turn in paused
        if turn.session_id not in busy
    ]
    return ok(runs)
