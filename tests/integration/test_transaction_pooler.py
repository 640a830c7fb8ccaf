"""Three instances behind HAProxy on PgBouncer in transaction mode (`DB_TRANSACTION_POOLER`).

A pooler in transaction mode lends each transaction whichever server session
is free, so a prepared statement, a `SET` or a session lock one transaction
left is not there for the next, and another client's may be. PgBouncer here
hands its server sessions out in turn, so a driver that relied on one meets
another at once: before the setting, instances could not even start
(`DuplicatePreparedStatementError` from the first statement of the lifespan).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import asyncpg
import orjson
import pytest

from app.agents.deep.checkpoints import open_checkpointer
from tests.fakes.model_behaviours import Behaving, IgnoresNative
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply
from tests.integration.service import ask, history, running_service, service_settings
from tests.support.cluster import Cluster
from tests.support.pgbouncer import PgBouncer
from tests.support.research import REPORT, over_http
from tests.support.sse import text_of

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

TURNS = 30
_QUESTION = re.compile(r"Question (\d+)")


def answer_to_the_question(body: Body) -> Reply:
    """Each answer names its question, so an answer stored under another turn shows."""
    found = _QUESTION.findall(orjson.dumps(body["messages"]).decode())
    return Reply.text(f"Answered question {found[-1]}.", chunks=3, delay=0.05)


async def test_thirty_turns_at_once_and_a_research_through_the_pooler_are_all_stored(
    cluster: Cluster, fake_llm: FakeOpenAI
) -> None:
    fake_llm.responder = answer_to_the_question
    client = await cluster.start(3, MAX_STREAMS_PER_USER="0", STREAMS_PER_MINUTE="0")

    streams = await asyncio.gather(*(ask(client, f"Question {n}", f"c-{n}") for n in range(TURNS)))
    stored = await asyncio.gather(*(history(client, f"c-{n}") for n in range(TURNS)))
    fake_llm.responder = Behaving(fake_llm, over_http, IgnoresNative())
    research = await ask(client, "How big is the heat pump market?", "c-deep", "deep")
    stored_research = await history(client, "c-deep")
    logs = cluster.logs()

    answers = [f"Answered question {n}." for n in range(TURNS)]
    assert [events[-1]["status"] for events in streams] == ["completed"] * TURNS
    assert [text_of(events) for events in streams] == answers
    assert [[(t["status"], t["answer"]) for t in turns] for turns in stored] == [
        [("completed", answer)] for answer in answers
    ]
    assert research[-1]["status"] == "completed"
    assert text_of(research) == REPORT
    assert [(t["status"], t["answer"]) for t in stored_research] == [("completed", REPORT)]
    # Every instance served streams: the pooler was shared, not one instance's alone.
    served = re.findall(r"instances/(\w) .*GET /agent/chat/stream", logs["haproxy"])
    assert set(served) == {"a", "b", "c"}
    assert {
        name: re.findall(r".*prepared statement.*", log, re.IGNORECASE)
        for name, log in logs.items()
    } == {name: [] for name in logs}


async def test_an_instance_migrates_on_the_direct_address_and_serves_through_the_pooler(
    tmp_path: Path, postgres_url: str, pgbouncer: PgBouncer, fake_llm: FakeOpenAI
) -> None:
    settings = service_settings(
        tmp_path,
        pgbouncer.url(postgres_url),
        llm_base_url=fake_llm.base_url,
        db_transaction_pooler=True,
        migrate_database_url=postgres_url,
    )
    fake_llm.script(Reply.text("Migrated and served."))
    async with running_service(settings) as client:
        answered = await ask(client, "Are you there?", "c-1")
        stored = await history(client, "c-1")

    assert text_of(answered) == "Migrated and served."
    assert [(t["status"], t["answer"]) for t in stored] == [("completed", "Migrated and served.")]


async def test_instances_making_the_checkpoint_tables_together_leave_no_lock_held(
    postgres_url: str, pgbouncer: PgBouncer
) -> None:
    """The tables' lock must not outlive the setup on some server session of the pooler's,
    where every later start would wait for it."""
    pooled = pgbouncer.url(postgres_url)

    async def start_research_store() -> None:
        async with open_checkpointer(pooled, transaction_pooler=True):
            pass

    async with asyncio.timeout(30):
        await asyncio.gather(*(start_research_store() for _ in range(3)))
        await start_research_store()
    locks = await advisory_locks(postgres_url)

    assert locks == []


async def advisory_locks(database_url: str) -> list[int]:
    """The advisory locks held in the database, seen on a direct connection."""
    conn = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        rows = await conn.fetch(
            "SELECT l.objid FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND d.datname = current_database()"
        )
    finally:
        await conn.close()
    return [row["objid"] for row in rows]
