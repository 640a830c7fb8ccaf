"""Searching the caller's own turns (API.md §4): `GET /session/search`.

Its own router, included before the sessions' one: `/session/{conversationId}`
would otherwise take `search` for a conversation id.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import Envelope, ok
from app.api.sessions import MAX_PAGE_NUM
from app.core.wire import WireModel, WireTime

router = APIRouter(prefix="/session", tags=["sessions"])


class SearchRecord(WireModel):
    conversation_id: str
    title: str
    turn_id: int
    snippet: str
    """Up to 200 characters of the matching question or answer, around the first match."""
    create_time: WireTime


class SearchPage(WireModel):
    records: list[SearchRecord]
    total: int
    page_num: int
    page_size: int


@router.get("/search", summary="Find your turns by a piece of their text")
async def search_turns(
    user: UserDep,
    services: ServicesDep,
    q: Annotated[str, Query(min_length=1, max_length=200)],
    page_num: Annotated[int, Query(alias="pageNum", ge=1, le=MAX_PAGE_NUM)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 10,
) -> Envelope[SearchPage]:
    """Turns whose question or answer contains `q` in any case and any script, newest first.

    A turn with versions (an edited question, a regenerated answer: turns of one parent)
    is one record, in the place of its newest matching version: the version on the active
    path when it matches, else that newest one; `total` counts the records so listed.
    """
    hits, total = await services.search.search(user, q, page_num, page_size)
    records = [SearchRecord.model_validate(hit, from_attributes=True) for hit in hits]
    return ok(SearchPage(records=records, total=total, page_num=page_num, page_size=page_size))
