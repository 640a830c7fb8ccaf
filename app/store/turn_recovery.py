"""The session store's instance recovery: the turns a dead instance left running.

Each question's row names the instance running it: when that instance dies, another finds
its running turns (`running_turns`) and takes them over (`take_over`) or marks them
`interrupted` (`interrupt_instance`); at start-up, turns no live instance owns are marked
`interrupted` (`mark_interrupted`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update

from app.store.models import AI_SESSION as TURNS
from app.store.models import StoredTurn
from app.store.turn_rows import TurnTableAccess, _now, _turn


class TurnRecovery(TurnTableAccess):
    """Finding and taking over, or interrupting, the turns of instances that died."""

    async def mark_interrupted(
        self,
        conversation_id: str | None = None,
        user_id: str | None = None,
        older_than: datetime | None = None,
        *,
        unowned: bool = False,
    ) -> int:
        stmt = (
            update(TURNS)
            .where(TURNS.c.status == "running")
            .values(status="interrupted", update_time=_now())
        )
        if unowned:
            stmt = stmt.where(TURNS.c.instance_id.is_(None))
        if conversation_id is not None:
            stmt = stmt.where(TURNS.c.session_id == conversation_id)
        if user_id is not None:
            stmt = stmt.where(TURNS.c.user_id == user_id)
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

    async def interrupt_instance(self, instance_id: str) -> list[tuple[str, str]]:
        """Mark the instance's running turns `interrupted`; their (user, conversation) pairs."""
        stmt = (
            update(TURNS)
            .where(TURNS.c.status == "running", TURNS.c.instance_id == instance_id)
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
