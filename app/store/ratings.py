"""Users' verdicts on answers: a thumb up or down on a turn, with what they said.

A verdict lives on the turn's own row (`ai_session.rating`, `rating_comment`), so
the history shows it and deleting the turn deletes it. It does not touch the
row's `update_time`: rating an old answer does not bring its conversation to
the top of the list. Admins read the verdicts back across users, newest turn
first, through a partial index that holds the rated turns only (migration
0015), so the read costs what there is to read, not the table.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field
from sqlalchemy import func, select, update

from app.core.wire import WireModel, WireTime
from app.store.db import Database
from app.store.models import AI_SESSION as TURNS
from app.store.records import Rating

ANSWER_CHARS = 500
"""How much of a rated answer the admins' list shows: enough to see what it was about."""


class RatedTurn(WireModel):
    """A rated turn as the admins' list gives it (`GET /admin/ratings`)."""

    user_id: str
    conversation_id: str
    turn_id: int
    kind: str
    model: str | None
    question: str
    answer: str = Field(description=f"The answer's first {ANSWER_CHARS} characters.")
    rating: Rating
    comment: str | None
    create_time: WireTime


class SqlRatings:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def rate(
        self,
        user_id: str,
        conversation_id: str,
        turn_id: int,
        rating: Rating | None,
        comment: str | None,
    ) -> bool:
        """Keep the verdict and its comment (None, None takes it back); False when the user
        has no such turn in that conversation."""
        stmt = (
            update(TURNS)
            .where(
                TURNS.c.id == turn_id,
                TURNS.c.user_id == user_id,
                TURNS.c.session_id == conversation_id,
            )
            .values(rating=rating, rating_comment=comment)
        )
        async with self._db.statement() as conn:
            return bool((await conn.execute(stmt)).rowcount)

    async def rated(
        self, start: datetime, end: datetime, rating: Rating | None, limit: int
    ) -> list[RatedTurn]:
        """Every user's rated turns asked in `[start, end)` (only `rating`'s, when given),
        newest first, at most `limit`."""
        stmt = (
            select(
                TURNS.c.user_id,
                TURNS.c.session_id,
                TURNS.c.id,
                TURNS.c.agent_type,
                TURNS.c.model,
                TURNS.c.question,
                func.substr(TURNS.c.answer, 1, ANSWER_CHARS).label("answer"),
                TURNS.c.rating,
                TURNS.c.rating_comment,
                TURNS.c.create_time,
            )
            .where(
                TURNS.c.rating.is_not(None), TURNS.c.create_time >= start, TURNS.c.create_time < end
            )
            .order_by(TURNS.c.create_time.desc(), TURNS.c.id.desc())
            .limit(limit)
        )
        if rating is not None:
            stmt = stmt.where(TURNS.c.rating == rating)
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).all()
        return [
            RatedTurn(
                user_id=row.user_id,
                conversation_id=row.session_id,
                turn_id=row.id,
                kind=row.agent_type,
                model=row.model,
                question=row.question,
                answer=row.answer or "",
                rating=row.rating,
                comment=row.rating_comment,
                create_time=row.create_time,
            )
            for row in rows
        ]
