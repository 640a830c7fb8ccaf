"""`/shared/{token}`: a conversation shared by link, for anyone holding it, signed in or not.

What a stranger may read: the questions, the answers and their sources, along
the shared path (app/store/shares.py). Not the thinking, the tool calls, the
files or anything of the owner's, who is not named. The token is a secret, so
the access log writes this path without it (app/api/access_log.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.core.wire import WireModel, WireTime
from app.service.records import title_of

router = APIRouter(prefix="/shared", tags=["sessions"])

Token = Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{16,64}$")]


class SharedMessage(WireModel):
    question: str
    answer: str
    reference: list[dict[str, str]]
    create_time: WireTime


class SharedConversationView(WireModel):
    title: str
    shared_at: WireTime
    messages: list[SharedMessage]


@router.get(
    "/{token}",
    summary="A conversation shared by link (public)",
    responses={404: {"description": "No such link: never made, unshared, or its turn deleted"}},
)
async def read_shared(token: Token, services: ServicesDep) -> Envelope[SharedConversationView]:
    shared = await services.shares.shared(token)
    if shared is None:
        raise ApiError(404, "This link is not shared, or no longer")
    marks = await services.titles.marks(shared.user_id, shared.conversation_id)
    return ok(
        SharedConversationView(
            title=title_of(marks.title, shared.turns[0].question),
            shared_at=shared.shared_at,
            messages=[
                SharedMessage(
                    question=turn.question,
                    answer=turn.answer or "",
                    reference=turn.reference,
                    create_time=turn.create_time,
                )
                for turn in shared.turns
            ],
        )
    )
