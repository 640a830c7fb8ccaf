"""The turn store's approvals: turns paused for the user's yes, and the decision."""

from __future__ import annotations

from sqlalchemy import select, update

from app.store.active_paths import active_leaf
from app.store.models import AI_SESSION as TURNS
from app.store.models import StoredTurn
from app.store.turn_rows import TurnTableAccess, _now, _turn


class TurnApprovals(TurnTableAccess):
    """Turns waiting for the user's yes, and the yes or no that resumes them."""

    async def paused_turns(self, user_id: str, limit: int) -> list[StoredTurn]:
        """A paused turn is listed while it is the active leaf (what a plain next message
        answers); one on a branch switched away from waits there, unlisted, until switched back."""
        stmt = (
            select(TURNS)
            .where(
                TURNS.c.user_id == user_id,
                TURNS.c.status == "paused",
                TURNS.c.id == active_leaf(user_id, TURNS.c.session_id),
            )
            .order_by(TURNS.c.id.desc())
            .limit(limit)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def decide(
        self, user_id: str, conversation_id: str, approval_id: str, agent_type: str | None = None
    ) -> StoredTurn | None:
        mine = [] if agent_type is None else [TURNS.c.agent_type == agent_type]
        stmt = (
            update(TURNS)
            .where(
                TURNS.c.user_id == user_id,
                TURNS.c.session_id == conversation_id,
                TURNS.c.approval_id == approval_id,
                TURNS.c.status == "paused",
                *mine,
            )
            .values(
                status="running",
                approval_id=None,
                instance_id=self._instance_id,
                update_time=_now(),
            )
            .returning(*TURNS.c)
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _turn(row)
