"""A conversation's reads search its turns by the conversation, never through all the user's.

Every statement that reads one conversation's turns names its user too. Given an index on
the conversation and one on the user, SQLite's planner took the user's for some of them (a
turn's start asking whether the conversation has turns), so a turn's start walked every turn
its user ever had: 1 ms a turn at 4,500 turns, growing with the history, on the embedded
defaults. The plans are read from SQLite itself, for every statement a conversation's turn,
history and tree send (SQLAlchemy's through its events, the per-turn ones through the
database's statement hook).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import event

from app.store.db import Database
from app.store.projects import SqlProjects
from app.store.titles import SqlTitles
from app.store.turns import SqlTurnStore
from tests.integration.test_turn_store import new_turn, outcome

USER_WIDE = re.compile(r"SEARCH ai_session USING (COVERING )?INDEX \w+ \(user_id=\?")
"""A search of the turns by their user alone (or their user and time): the whole history."""


async def test_a_conversations_reads_search_by_the_conversation(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    sent: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *rest: object) -> None:
        sent.append(statement)

    @contextlib.contextmanager
    def span(verb: str, sql: str) -> Iterator[None]:
        sent.append(sql)
        yield

    async with Database.open(f"sqlite+aiosqlite:///{path}", pool_size=5, migrate=True) as db:
        event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
        db.statement_span = span
        turns, projects, titles = SqlTurnStore(db), SqlProjects(db), SqlTitles(db)
        for memory in (False, True):
            await projects.for_turn("alice", "conv-1", None, memory=memory)
            await projects.for_turn("alice", "conv-1", "project-1", memory=memory)
        first, _ = await turns.begin_turn(new_turn(), memory_turns=10)
        await turns.finish_turn(first, outcome())
        await turns.begin_turn(new_turn(), memory_turns=10, parent_id=first)
        await turns.latest_status("alice", "conv-1")
        await turns.recent_turns("alice", "conv-1", 10)
        await turns.get_conversation("alice", "conv-1")
        await turns.get_turn("alice", "conv-1", first)
        await turns.get_tree("alice", "conv-1")
        await titles.marks("alice", "conv-1")
        await turns.delete_conversation("alice", "conv-1")

    reads = [sql for sql in sent if "ai_session" in sql and "session_id = ?" in sql]
    assert len(reads) >= 10, sent
    with contextlib.closing(sqlite3.connect(path)) as conn:
        plans = {sql: plan(conn, sql) for sql in reads}
    assert {sql: steps for sql, steps in plans.items() if any(map(USER_WIDE.match, steps))} == {}


def plan(conn: sqlite3.Connection, sql: str) -> list[str]:
    """SQLite's steps for `sql` (the plan does not depend on the values bound)."""
    return [step for *_, step in conn.execute(f"EXPLAIN QUERY PLAN {sql}", [None] * sql.count("?"))]
