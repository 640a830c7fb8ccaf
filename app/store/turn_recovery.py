"""The turn store's instance recovery: the turns a dead instance left running.

Each question's row names the instance running it: when that instance dies, another finds
its running turns (`running_turns`) and takes them over (`take_over`) or marks them
`interrupted` (`interrupt_turns`); at start-up, turns no live instance owns are marked
`interrupted` (`mark_interrupted`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, or_, select, update

from app.store.models import AI_SESSION as TURNS
from app.store.models import StoredTurn
from app.store.turn_rows import TurnTableAccess, _now, _turn


class TurnRecovery(TurnTableAccess):
    """Finding and taking over, or interrupting, the turns of instances that died."""

    async def mark_interrupted(
        self, older_than: datetime | None = None, *, unowned: bool = False
    ) -> int:
        stmt = (
            update(TURNS)
            .where(TURNS.c.status == "running")
            .values(status="interrupted", update_time=_now())
        )
        if unowned:
            stmt = stmt.where(TURNS.c.instance_id.is_(None))
        if older_than is not None:
            stmt = stmt.where(TURNS.c.update_time < older_than)
        async with self._db.statement() as conn:
            return (await conn.execute(stmt)).rowcount

    async def running_instances(self) -> set[str]:
        """The instances with turns stored `running` (read from the running rows' own index)."""
        stmt = select(TURNS.c.instance_id).where(TURNS.c.status == "running").distinct()
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).scalars().all()
        return {row for row in rows if row is not None}

    async def interrupt_turns(self, turns: Sequence[StoredTurn]) -> list[tuple[str, str]]:
        """Mark `turns` `interrupted` where each is still `running` on the instance it was
        read with; the (user, conversation) pairs of those marked.

        One conditional UPDATE, as `take_over` is: a turn another instance took over since
        it was read (its row names that instance now) or that ended is left as it is, so a
        turn is carried on or interrupted, never both.
        """
        read = [
            and_(
                TURNS.c.id == turn.id,
                TURNS.c.instance_id.is_(None)
                if turn.instance_id is None
                else TURNS.c.instance_id == turn.instance_id,
            )
            for turn in turns
            if turn.id is not None
        ]
        if not read:
            return []
        stmt = (
            update(TURNS)
            .where(TURNS.c.status == "running", or_(*read))
            .values(status="interrupted", update_time=_now())
            .returning(TURNS.c.user_id, TURNS.c.session_id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).all()
        return sorted({(row.user_id, row.session_id) for row in rows})

    async def running_turns(self, instance_id: str) -> list[StoredTurn]:
        """The instance's turns stored `running`, oldest first."""
        stmt = (
            select(TURNS)
            .where(TURNS.c.status == "running", TURNS.c.instance_id == instance_id)
            .order_by(TURNS.c.id)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_turn(row) for row in rows]

    async def take_over(self, turn_id: int, dead: str, takeovers: int) -> StoredTurn | None:
        """Make the `dead` instance's running turn this instance's, as its move `takeovers + 1`.

        One conditional UPDATE: of instances racing for the same move, one gets the row
        back, the others None (as does a turn that ended or moved meanwhile).
        """
        stmt = (
            update(TURNS)
            .where(
                TURNS.c.id == turn_id,
                TURNS.c.status == "running",
                TURNS.c.instance_id == dead,
                TURNS.c.takeovers == takeovers,
            )
            .values(instance_id=self._instance_id, takeovers=takeovers + 1, update_time=_now())
            .returning(*TURNS.c)
        )
        async with self._db.statement() as conn:
            row = (await conn.execute(stmt)).mappings().one_or_none()
        return None if row is None else _turn(row)
