"""Finding a user's turns by a piece of their text, on an index of trigrams.

A substring, not a word: `向量数据库` must be found inside Chinese text that
has no spaces, so both backends index trigrams (migration 0007):
PostgreSQL's `pg_trgm` GIN indexes serve `ILIKE '%text%'` on the question
and the answer; SQLite's FTS5 table with the trigram tokenizer serves a
phrase query (folding case in every script). A trigram index cannot serve
fewer than three characters: on SQLite such a search is a LIKE over the
user's own rows, spelled in each case of its one or two characters (SQLite's
LIKE folds ASCII only). Every query is scoped to the user first.

The index's cost is paid by the writes, not by the app's statements: on
PostgreSQL the GIN entries of each inserted or updated text (GIN's pending
list batches them), on SQLite the triggers that re-index a turn's texts on
its INSERT and on each UPDATE of its answer.

A hit is a turn with its versions (the turns of one parent: an edited
question, a regenerated answer), listed once, in the place of its newest
matching version: it shows the version the active path goes through when
that one matches, else that newest one; `total` counts the hits so listed.
The grouping is one GROUP BY in the page's statement; only a hit on the
page with two matching versions has its conversation's active path walked
(store/active_paths.py), in one more statement.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
    text,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from app.store.active_paths import active_first_questions, active_paths
from app.store.base import SearchHit
from app.store.db import Database
from app.store.models import AI_CONVERSATION_TITLE as TITLES
from app.store.models import AI_SESSION as TURNS
from app.store.titles import title_of

SNIPPET_CHARS = 200
TRIGRAM = 3
"""The fewest characters a trigram index can look up."""

_FTS = table("ai_session_fts", literal_column("rowid"))


def like_pattern(fragment: str) -> str:
    """`%fragment%` with LIKE's own characters taken literally (escape: backslash)."""
    escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def snippet(question: str, answer: str | None, fragment: str) -> str:
    """Up to `SNIPPET_CHARS` of the question, or else the answer, around the first match."""
    found = re.compile(re.escape(fragment), re.IGNORECASE)
    for field in (question, answer or ""):
        match = found.search(field)
        if match is not None:
            before = (SNIPPET_CHARS - len(match.group())) // 2
            start = max(0, min(match.start() - before, len(field) - SNIPPET_CHARS))
            return field[start : start + SNIPPET_CHARS]
    # The database folds case in places Python's `re` does not: show the question's start.
    return question[:SNIPPET_CHARS]


class SqlTurnSearch:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._postgres = db.dialect.name == "postgresql"

    def _matches(self, fragment: str) -> ColumnElement[bool]:
        if self._postgres and len(fragment) < TRIGRAM:
            # Not ILIKE, which PostgreSQL would answer by reading the whole trigram index
            # (a pattern without a trigram matches every entry): the user's rows, read.
            folded = func.lower(literal(fragment))
            return or_(
                *(
                    func.strpos(func.lower(column), folded) > 0
                    for column in (TURNS.c.question, TURNS.c.answer)
                )
            )
        if self._postgres:
            pattern = like_pattern(fragment)
            return or_(
                TURNS.c.question.ilike(pattern, escape="\\"),
                TURNS.c.answer.ilike(pattern, escape="\\"),
            )
        if len(fragment) >= TRIGRAM:
            phrase = '"' + fragment.replace('"', '""') + '"'
            in_index = select(_FTS.c.rowid).where(text("ai_session_fts MATCH :phrase"))
            return TURNS.c.id.in_(in_index.params(phrase=phrase))
        spellings = {
            "".join(letters)
            for letters in itertools.product(*({c, c.lower(), c.upper()} for c in fragment))
        }
        return or_(
            *(
                column.like(like_pattern(spelling), escape="\\")
                for spelling in sorted(spellings)
                for column in (TURNS.c.question, TURNS.c.answer)
            )
        )

    async def search(
        self, user_id: str, text: str, page: int, size: int
    ) -> tuple[list[SearchHit], int]:
        if page < 1 or size < 1:
            raise ValueError("page and size start at 1")
        mine = and_(TURNS.c.user_id == user_id, self._matches(text))
        # Planned apart from the page's LIMIT (MATERIALIZED): with it, PostgreSQL walks the
        # whole table newest first rather than look the text up in its trigram indexes.
        matches = (
            select(TURNS.c.id, TURNS.c.session_id, TURNS.c.parent_id)
            .where(mine)
            .cte("matches")
            .prefix_with("MATERIALIZED", dialect="postgresql")
        )
        # A turn with its versions (one parent) is one hit, in the place of its newest match.
        turns = (
            select(func.max(matches.c.id).label("id"), func.count().label("versions"))
            .group_by(matches.c.session_id, matches.c.parent_id)
            .cte("turns")
        )
        hits = (
            # Counted over every hit before the LIMIT: the total in the same trip.
            select(turns.c.id, turns.c.versions, func.count().over().label("total"))
            .order_by(turns.c.id.desc())
            .limit(size)
            .offset((page - 1) * size)
            .subquery("hits")
        )
        first = TURNS.alias("first_turn")
        roots = TURNS.alias("roots")
        # Only for the page's rows: a conversation's first question, its default title, and
        # whether there are others (the first question was edited: the active one titles it).
        first_question = (
            select(first.c.question)
            .where(first.c.user_id == user_id, first.c.session_id == TURNS.c.session_id)
            .order_by(first.c.id)
            .limit(1)
            .scalar_subquery()
        )
        second_root = (
            select(roots.c.id)
            .where(
                roots.c.user_id == user_id,
                roots.c.session_id == TURNS.c.session_id,
                roots.c.parent_id.is_(None),
            )
            .order_by(roots.c.id)
            .limit(1)
            .offset(1)
            .scalar_subquery()
        )
        stmt = (
            select(
                *_SHOWN,
                hits.c.versions,
                hits.c.total,
                TITLES.c.title,
                first_question.label("first_question"),
                second_root.label("second_root"),
            )
            .join_from(hits, TURNS, TURNS.c.id == hits.c.id)
            .outerjoin(
                TITLES,
                and_(TITLES.c.user_id == user_id, TITLES.c.conversation_id == TURNS.c.session_id),
            )
            .order_by(TURNS.c.id.desc())
        )
        async with self._db.statement() as conn:
            rows: Any = (await conn.execute(stmt)).mappings().all()
            if rows:
                total = int(rows[0]["total"])
            else:
                # A page past the end has no row to carry the total.
                count = select(func.count()).select_from(turns)
                total = int((await conn.execute(count)).scalar_one())
            several = [row["id"] for row in rows if row["versions"] > 1]
            shown = await _matching_on_active_path(conn, user_id, self._matches(text), several)
            edited = [row["id"] for row in rows if row["second_root"] is not None]
            firsts = await active_first_questions(conn, user_id, edited)
        records = []
        for row in rows:
            # The version the conversation shows, where it matches, stands for the turn.
            turn = shown.get((row["session_id"], row["parent_id"]), row)
            first_asked = firsts.get(row["session_id"], row["first_question"])
            records.append(
                SearchHit(
                    conversation_id=row["session_id"],
                    title=title_of(row["title"], first_asked),
                    turn_id=turn["id"],
                    snippet=snippet(turn["question"], turn["answer"], text),
                    create_time=turn["create_time"],
                )
            )
        return records, total


_SHOWN = (
    TURNS.c.id,
    TURNS.c.session_id,
    TURNS.c.parent_id,
    TURNS.c.question,
    TURNS.c.answer,
    TURNS.c.create_time,
)
"""What a hit shows of its turn, and where the turn stands in its conversation."""


async def _matching_on_active_path(
    conn: AsyncConnection, user_id: str, matching: ColumnElement[bool], turn_ids: list[int]
) -> dict[tuple[str, int | None], Any]:
    """The turns that match on the active path of the conversations of these turns (the
    user's), by their place (conversation, parent)."""
    if not turn_ids:
        return {}
    path = active_paths(user_id, turn_ids)
    # By primary key: the path holds the user's turns only.
    stmt = select(*_SHOWN).where(TURNS.c.id.in_(select(path.c.id)), matching)
    rows = (await conn.execute(stmt)).mappings().all()
    return {(row["session_id"], row["parent_id"]): row for row in rows}
