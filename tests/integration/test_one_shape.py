"""Adding a column is one edit plus one migration: every column reaches the wire by rule.

The rule (store/models.py): a column declared in an entity's base class is
shown, camelCase, by the history and the file routes; only the keys and
owner the table adds are not. These tests take the columns from the table
itself, not from a list kept by hand, so a column that the store does not
write, read, or hand to the wire fails here the day it is added.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic.alias_generators import to_camel
from sqlalchemy import Column, ColumnClause, literal_column, select

from app.agents.base import BaseAgent
from app.agents.turn import Turn, TurnState
from app.core.events import (
    CritiqueEvent,
    DeckEvent,
    DeckSlide,
    Event,
    PlanEvent,
    PlannedTask,
    Reference,
    StepEvent,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from app.documents.library import generated_event
from app.store.columns import JsonList, JsonRecord, UTCDateTime
from app.store.db import Database
from app.store.models import AI_FILE, AI_SESSION, FileBase, TurnBase
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import (
    Backend,
    ask,
    history,
    running_service,
    settings_for,
    with_agent,
)


class EverythingAgent(BaseAgent):
    """A turn that fills every column a run can fill: text, thinking, tools, files, plan,
    deck."""

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        assert self.core.documents is not None
        yield PlanEvent(1, [PlannedTask("t1", "Look it up")])
        yield ThinkingEvent("Looking it up.")
        yield DeckEvent("outline", 1, "SSE", "Ocean", [DeckSlide("What is SSE", "title")])
        yield ToolStartEvent("web_search", "call_1", '{"query": "sse"}')
        yield ToolEndEvent("web_search", "call_1", "Server-sent events.")
        yield StepEvent("t1", "completed", "Found it.")
        yield CritiqueEvent(1, True, "Enough.")
        state.add_references([Reference("https://example.org/sse", "SSE", "An event stream.")])
        stored = await self.core.documents.add_generated(
            turn.user_id, turn.conversation_id, "notes.txt", b"notes", "text/plain"
        )
        yield generated_event(stored)
        yield TextEvent("An event stream.")


def shown(table_columns: list[Column[Any]], base: type[Any], key: str) -> list[Column[Any]]:
    """The columns the rule says the wire shows: the base's, and the row's own id."""
    return [c for c in table_columns if c.name in base.model_fields or c.name == key]


def as_read(column: Column[Any], raw: Any) -> Any:
    """A raw database value as the wire should carry it, decoded here without the app's models."""
    if isinstance(column.type, JsonList):
        return orjson.loads(raw) if raw else []
    if isinstance(column.type, JsonRecord):
        return orjson.loads(raw) if raw else None
    if isinstance(column.type, UTCDateTime):
        moment = raw if isinstance(raw, datetime) else datetime.fromisoformat(raw)
        return moment.replace(tzinfo=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return raw


async def raw_rows(database_url: str, table: Any, where: Any) -> list[dict[str, Any]]:
    """The table's rows as the driver returns them: no column type decodes anything."""
    plain: list[ColumnClause[Any]] = [literal_column(c.name) for c in table.c]
    async with Database.open(database_url, pool_size=1, migrate=False) as db, db.begin() as conn:
        query = select(*plain).select_from(table).where(where)
        rows = (await conn.execute(query)).mappings().all()
    return [dict(row) for row in rows]


async def test_every_column_of_a_turn_reaches_its_history(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, recommendations_enabled=True)
    fake_llm.script(Reply.text('{"questions": ["Why?", "How?", "What next?"]}'))
    async with running_service(settings, with_agent(EverythingAgent)) as client:
        events = await ask(client, "What is SSE?", "c-shape", "test")
        [message] = await history(client, "c-shape")
    [row] = await raw_rows(backend.database_url, AI_SESSION, AI_SESSION.c.session_id == "c-shape")

    assert events[-1]["status"] == "completed"
    columns = shown(list(AI_SESSION.c), TurnBase, "id")
    assert {to_camel(c.name): as_read(c, row[c.name]) for c in columns} == {
        to_camel(c.name): message[to_camel(c.name)] for c in columns
    }
    # A run writes every column it owns: only what this turn has none of stays empty
    # (it failed in nothing, asked about no upload, is its conversation's first question,
    # waits for no decision, and its model has no prices), and the user's verdict, which
    # the user writes, not the run.
    assert {c.name for c in columns if row[c.name] is None} == {
        "cost_usd",
        "error",
        "error_message",
        "fileid",
        "parent_id",
        "pending",
        "approval_id",
        "rating",
        "rating_comment",
    }


async def test_every_column_of_a_file_reaches_its_info(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings, with_agent(EverythingAgent)) as client:
        await client.post("/file/upload", files={"file": ("a.txt", b"Some text.")})
        await ask(client, "What is SSE?", "c-shape", "test")
        listed = (await client.get("/file/list")).json()["data"]
        infos = [(await client.get(f"/file/info/{f['fileId']}")).json()["data"] for f in listed]
    rows = await raw_rows(backend.database_url, AI_FILE, AI_FILE.c.user_id.is_not(None))

    columns = shown(list(AI_FILE.c), FileBase, "id")
    wire_name = {c.name: "fileId" if c.name == "id" else to_camel(c.name) for c in columns}
    expected = [{wire_name[c.name]: as_read(c, row[c.name]) for c in columns} for row in rows]
    key = "fileId"
    assert sorted(
        ({wire_name[c.name]: f[wire_name[c.name]] for c in columns} for f in infos),
        key=lambda f: f[key],
    ) == sorted(expected, key=lambda f: f[key])
    # The info adds the count of its preview's pages (none for text), which only it works out.
    assert [f.pop("pages") for f in infos] == [None, None]
    assert sorted(listed, key=lambda f: f[key]) == sorted(infos, key=lambda f: f[key])
    # An upload and a generated file between them set every column but a failure's reason.
    assert {c.name for c in columns if all(row[c.name] is None for row in rows)} == {"error"}
    assert {row["source"] for row in rows} == {"upload", "generated"}
