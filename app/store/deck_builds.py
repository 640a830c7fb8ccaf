"""`ai_ppt_inst` and `ai_ppt_template` on SQL: the PowerPoint agent's builds and templates.

A build is one row per version of a conversation's deck. The agent reads the
newest, writes each step's result with the next status in one update, and
adds a row for each new version, so older versions (and their files) stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from sqlalchemy import delete, insert, select, update

from app.store.db import Database
from app.store.models import AI_PPT_INST as BUILDS
from app.store.models import AI_PPT_TEMPLATE as TEMPLATES


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class DeckBuild:
    """A row of `ai_ppt_inst`; JSON columns stay text, the agent reads them with its models."""

    user_id: str
    conversation_id: str
    version: int
    status: str
    query: str
    template_code: str | None = None
    requirement: str | None = None
    search_info: str | None = None
    outline: str | None = None
    ppt_schema: str | None = None
    file_id: str | None = None
    file_url: str | None = None
    failed_step: str | None = None
    error_msg: str | None = None
    create_time: datetime = field(default_factory=_now)
    update_time: datetime = field(default_factory=_now)
    id: int | None = None


@dataclass(frozen=True, slots=True)
class TemplateRow:
    template_code: str
    template_name: str
    template_desc: str
    template_schema: str
    file_path: str
    style_tags: str
    slide_count: int


class SqlDeckBuildStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def versions(self, user_id: str, conversation_id: str) -> list[DeckBuild]:
        """Every build of the conversation, oldest version first."""
        query = (
            select(BUILDS)
            .where(BUILDS.c.user_id == user_id, BUILDS.c.conversation_id == conversation_id)
            .order_by(BUILDS.c.version)
        )
        async with self._db.statement() as conn:
            rows = (await conn.execute(query)).mappings().all()
        return [DeckBuild(**row) for row in rows]

    async def add(self, build: DeckBuild) -> DeckBuild:
        values = asdict(build)
        del values["id"]
        async with self._db.statement() as conn:
            result = await conn.execute(insert(BUILDS).returning(BUILDS.c.id), values)
            build.id = int(result.scalar_one())
        return build

    async def save(self, build: DeckBuild) -> None:
        """Write every column of the build (its id and owner unchanged)."""
        build.update_time = _now()
        values = asdict(build)
        for key in ("id", "user_id", "conversation_id", "create_time"):
            del values[key]
        statement = update(BUILDS).where(BUILDS.c.id == build.id, BUILDS.c.user_id == build.user_id)
        async with self._db.statement() as conn:
            await conn.execute(statement.values(**values))

    async def forget(self, user_id: str, conversation_id: str) -> None:
        """Drop every build of a deleted conversation (its files went with the conversation)."""
        mine = BUILDS.c.user_id == user_id, BUILDS.c.conversation_id == conversation_id
        async with self._db.statement() as conn:
            await conn.execute(delete(BUILDS).where(*mine))

    async def drop(self, user_id: str, build_ids: Sequence[int]) -> None:
        """Drop these builds (of deleted turns: their files went with the turns)."""
        if not build_ids:
            return
        async with self._db.statement() as conn:
            await conn.execute(
                delete(BUILDS).where(BUILDS.c.user_id == user_id, BUILDS.c.id.in_(build_ids))
            )

    async def replace_templates(self, templates: Sequence[TemplateRow]) -> None:
        """Make the table list exactly these templates."""
        now = _now()
        async with self._db.begin() as conn:
            await conn.execute(delete(TEMPLATES))
            await conn.execute(
                insert(TEMPLATES), [{**asdict(t), "update_time": now} for t in templates]
            )

    async def template_codes(self) -> list[str]:
        async with self._db.statement() as conn:
            rows = await conn.execute(
                select(TEMPLATES.c.template_code).order_by(TEMPLATES.c.template_code)
            )
        return [row.template_code for row in rows]
