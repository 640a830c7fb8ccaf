"""The `TurnStore` contract, run against SQLite and PostgreSQL alike.

Both backends get the same tests on a fresh, migrated database (a temp file;
the test schema recreated), so a behaviour that differs between them fails
here rather than in production. The tests go through the public store API
only; the one raw read (the Alembic version) checks what the API cannot show.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, literal, text
from sqlmodel import col, select

from app.store.base import (
    DeletedConversation,
    DeletedTurns,
    StoreError,
    StoreUnavailable,
    TurnStore,
)
from app.store.db import Database
from app.store.engine import MIGRATIONS_DIR
from app.store.file_store import SqlFileStore
from app.store.models import AiSession, StoredTurn, TurnOutcome
from app.store.push_configs import PushConfig, SqlPushConfigs
from app.store.records import ModelUsage, ToolCall, TurnFile, TurnStatus
from app.store.search import SqlTurnSearch
from app.store.turns import SqlTurnStore
from tests.integration.test_file_store_contract import new_file


@pytest.fixture
def store(db: Database) -> TurnStore:
    return SqlTurnStore(db)


def new_turn(
    session_id: str = "conv-1",
    user_id: str = "alice",
    question: str = "What is SSE?",
    agent_type: str = "chat",
    fileid: str | None = None,
) -> StoredTurn:
    return StoredTurn(
        session_id=session_id,
        user_id=user_id,
        agent_type=agent_type,
        question=question,
        fileid=fileid,
    )


def outcome(answer: str = "An event stream.", status: TurnStatus = "completed") -> TurnOutcome:
    return TurnOutcome(answer=answer, thinking="", status=status)


def assert_utc(value: datetime) -> None:
    assert value.tzinfo is not None
    assert value.utcoffset() == timedelta(0)


async def test_question_round_trips_as_running_turn(store: TurnStore) -> None:
    before = datetime.now(UTC)
    turn_id = await store.add_question(new_turn(question="Résumé 文件?", fileid="f-1"))
    after = datetime.now(UTC)

    [turn] = await store.get_conversation("alice", "conv-1")

    assert turn == StoredTurn(
        id=turn_id,
        session_id="conv-1",
        user_id="alice",
        agent_type="chat",
        question="Résumé 文件?",
        answer=None,
        thinking=None,
        tools=[],
        reference=[],
        recommend=[],
        files=[],
        fileid="f-1",
        status="running",
        error=None,
        first_response_time=None,
        total_response_time=None,
        prompt_tokens=0,
        completion_tokens=0,
        create_time=turn.create_time,
        update_time=turn.create_time,
    )
    assert_utc(turn.create_time)
    assert before <= turn.create_time <= after


async def test_finish_turn_round_trips_every_field(store: TurnStore) -> None:
    turn_id = await store.add_question(new_turn())
    tools = [
        ToolCall(
            id="call_1",
            name="web_search",
            arguments='{"q": "sse"}',
            result='ünïcode ✓ and "quotes"',
        )
    ]
    files = [
        TurnFile(
            file_id="f-9",
            name="deck.pptx",
            url="/file/download/f-9",
            size=2048,
            mime_type="application/vnd.openxmlformats-officedocument.presentationml.presentation",
        )
    ]
    reference = [{"url": "https://example.org", "title": "Example", "content": "text"}]
    recommend = ["Why?", "How?", "What next?"]

    await store.finish_turn(
        turn_id,
        TurnOutcome(
            answer="The answer.",
            thinking="Reasoning.",
            status="failed",
            tools=tools,
            reference=reference,
            recommend=recommend,
            files=files,
            error="The model timed out.",
            first_response_time=120,
            total_response_time=3400,
            prompt_tokens=321,
            completion_tokens=45,
        ),
    )

    [turn] = await store.get_conversation("alice", "conv-1")
    assert (turn.id, turn.answer, turn.thinking, turn.status, turn.error) == (
        turn_id,
        "The answer.",
        "Reasoning.",
        "failed",
        "The model timed out.",
    )
    assert (turn.tools, turn.reference, turn.recommend) == (tools, reference, recommend)
    assert turn.files == files
    assert (turn.first_response_time, turn.total_response_time) == (120, 3400)
    assert (turn.prompt_tokens, turn.completion_tokens) == (321, 45)
    assert (turn.question, turn.agent_type, turn.fileid) == ("What is SSE?", "chat", None)
    assert_utc(turn.create_time)
    assert_utc(turn.update_time)
    assert turn.update_time >= turn.create_time


async def test_finish_turn_of_deleted_turn_is_a_no_op(store: TurnStore) -> None:
    turn_id = await store.add_question(new_turn())
    await store.delete_conversation("alice", "conv-1")

    await store.finish_turn(turn_id, outcome())

    assert await store.get_conversation("alice", "conv-1") == []


async def test_recent_turns_returns_latest_window_oldest_first(store: TurnStore) -> None:
    ids = [await store.add_question(new_turn(question=f"q{i}")) for i in range(5)]
    await store.add_question(new_turn(session_id="conv-2", question="other conversation"))
    await store.add_question(new_turn(user_id="bob", question="other user"))

    latest = await store.recent_turns("alice", "conv-1", limit=3)
    assert [t.id for t in latest] == ids[2:]
    assert [t.question for t in latest] == ["q2", "q3", "q4"]

    earlier = await store.recent_turns("alice", "conv-1", limit=2, before_id=ids[3])
    assert [t.id for t in earlier] == ids[1:3]

    everything = await store.recent_turns("alice", "conv-1", limit=50, before_id=ids[4])
    assert [t.id for t in everything] == ids[:4]

    assert await store.recent_turns("alice", "conv-1", limit=0) == []
    assert await store.recent_turns("alice", "missing", limit=5) == []


async def test_list_conversations_one_record_per_conversation_newest_first(
    store: TurnStore,
) -> None:
    first_a = await store.add_question(new_turn("A", question="A1", agent_type="file", fileid="f"))
    await store.finish_turn(first_a, outcome())
    await store.add_question(new_turn("B", question="B1"))
    await store.add_question(new_turn("C", question="C1", agent_type="deep"))
    await store.add_question(new_turn("A", question="A2", agent_type="chat"))
    await store.add_question(new_turn("A", user_id="bob", question="bob's A"))

    records, total = await store.list_conversations("alice", page=1, size=10)

    assert total == 3
    assert [(r.conversation_id, r.question, r.agent_type, r.fileid) for r in records] == [
        ("A", "A1", "file", "f"),
        ("C", "C1", "deep", None),
        ("B", "B1", "chat", None),
    ]
    conversation_a = await store.get_conversation("alice", "A")
    assert records[0].create_time == conversation_a[0].create_time
    assert records[0].update_time == conversation_a[-1].update_time
    for record in records:
        assert_utc(record.create_time)
        assert_utc(record.update_time)


async def test_list_conversations_orders_by_latest_activity(store: TurnStore) -> None:
    old = await store.add_question(new_turn("old"))
    await store.add_question(new_turn("new"))

    await store.finish_turn(old, outcome())

    records, _ = await store.list_conversations("alice", page=1, size=10)
    assert [r.conversation_id for r in records] == ["old", "new"]


async def test_list_conversations_paginates_with_total(store: TurnStore) -> None:
    for name in ["c1", "c2", "c3", "c4", "c5"]:
        await store.add_question(new_turn(name))

    pages = [await store.list_conversations("alice", page=p, size=2) for p in (1, 2, 3, 4)]

    assert [[r.conversation_id for r in records] for records, _ in pages] == [
        ["c5", "c4"],
        ["c3", "c2"],
        ["c1"],
        [],
    ]
    assert [total for _, total in pages] == [5, 5, 5, 5]
    assert await store.list_conversations("nobody", page=1, size=2) == ([], 0)
    with pytest.raises(ValueError, match="start at 1"):
        await store.list_conversations("alice", page=0, size=2)


async def test_get_conversation_of_another_user_is_empty(store: TurnStore) -> None:
    await store.add_question(new_turn(user_id="alice"))

    assert await store.get_conversation("bob", "conv-1") == []
    assert await store.recent_turns("bob", "conv-1", limit=10) == []


async def test_get_conversation_returns_turns_oldest_first(store: TurnStore) -> None:
    ids = [await store.add_question(new_turn(question=f"q{i}")) for i in range(3)]

    turns = await store.get_conversation("alice", "conv-1")

    assert [t.id for t in turns] == ids


async def test_delete_conversation_removes_only_own_rows(store: TurnStore) -> None:
    mine = [await store.add_question(new_turn(user_id="alice")) for _ in range(2)]
    await store.add_question(new_turn(user_id="alice", session_id="keep"))
    await store.add_question(new_turn(user_id="bob"))

    # The ids say which turns went, for what the agents kept of each.
    deleted = await store.delete_conversation("alice", "conv-1")
    assert (deleted.turns, [t.id for t in deleted.gone]) == (2, mine)

    assert await store.get_conversation("alice", "conv-1") == []
    assert len(await store.get_conversation("alice", "keep")) == 1
    assert len(await store.get_conversation("bob", "conv-1")) == 1
    assert await store.delete_conversation("alice", "conv-1") == DeletedConversation(0)
    assert await store.delete_conversation("mallory", "conv-1") == DeletedConversation(0)


async def test_save_partial_updates_only_running_turns(store: TurnStore) -> None:
    running = await store.add_question(new_turn("r"))
    finished = await store.add_question(new_turn("f"))
    await store.finish_turn(finished, outcome(answer="final"))

    call = ToolCall(id="call_1", name="web_search", arguments="{}", result="Interrupted")
    await store.save_partial(running, "partial answer", "partial thought", [call])
    await store.save_partial(finished, "late partial", "late thought")

    [turn] = await store.get_conversation("alice", "r")
    assert (turn.answer, turn.thinking, turn.status, turn.tools) == (
        "partial answer",
        "partial thought",
        "running",
        [call],
    )
    assert turn.update_time >= turn.create_time
    [done] = await store.get_conversation("alice", "f")
    assert (done.answer, done.status) == ("final", "completed")


async def test_a_turn_stored_late_fills_only_unfinished_rows(store: TurnStore) -> None:
    """An outcome kept aside while the database was away, stored by a sweep later: over a
    running or interrupted row, never over one finished since."""
    running = await store.add_question(new_turn("r"))
    interrupted = await store.add_question(new_turn("i"))
    await store.save_partial(interrupted, "half", "")
    assert await store.interrupt_turns(await store.get_conversation("alice", "i")) == [
        ("alice", "i")
    ]
    finished = await store.add_question(new_turn("f"))
    await store.finish_turn(finished, outcome(answer="final", status="stopped"))
    call = ToolCall(id="call_1", name="web_search", arguments="{}", result="found")
    late = outcome(answer="whole answer").model_copy(update={"tools": [call]})

    written = [
        await store.finish_unfinished_turn(turn_id, late)
        for turn_id in (running, interrupted, finished, finished + 100)
    ]

    assert written == [True, True, False, False]
    stored = [(await store.get_conversation("alice", c))[0] for c in ("r", "i", "f")]
    assert [(t.answer, t.status, t.tools) for t in stored] == [
        ("whole answer", "completed", [call]),
        ("whole answer", "completed", [call]),
        ("final", "stopped", []),
    ]


async def test_mark_interrupted_filters_and_keeps_partial_answer(store: TurnStore) -> None:
    stale = await store.add_question(new_turn("a"))
    await store.save_partial(stale, "half an answer", "")
    await asyncio.sleep(0.01)
    cutoff = datetime.now(UTC)
    await asyncio.sleep(0.01)
    await store.add_question(new_turn("b"))
    done = await store.add_question(new_turn("c"))
    await store.finish_turn(done, outcome())

    assert await store.mark_interrupted(older_than=cutoff) == 1
    [first] = await store.get_conversation("alice", "a")
    assert (first.status, first.answer) == ("interrupted", "half an answer")
    assert (await store.get_conversation("alice", "b"))[0].status == "running"

    assert await store.mark_interrupted() == 1
    assert (await store.get_conversation("alice", "b"))[0].status == "interrupted"
    assert (await store.get_conversation("alice", "c"))[0].status == "completed"
    assert await store.mark_interrupted() == 0


async def test_a_dead_instances_running_turns_are_found_by_its_id_and_marked_unless_taken_over(
    db: Database,
) -> None:
    dead, alive = SqlTurnStore(db, "dead-1"), SqlTurnStore(db, "alive-2")
    legacy = SqlTurnStore(db)  # as rows stored before they recorded their instance
    partial = await dead.add_question(new_turn("a"))
    await dead.save_partial(partial, "half an answer", "")
    await dead.add_question(new_turn("b", user_id="bob"))
    finished = await dead.add_question(new_turn("c"))
    await dead.finish_turn(finished, outcome())
    moving = await dead.add_question(new_turn("g"))
    await alive.add_question(new_turn("d"))
    await legacy.add_question(new_turn("e"))

    holding = await alive.running_instances()
    read = await alive.running_turns("dead-1")
    # Another instance takes one of them over between the read and the UPDATE.
    assert await SqlTurnStore(db, "alive-3").take_over(moving, "dead-1", 0) is not None
    marked = await alive.interrupt_turns(read)
    again = await alive.interrupt_turns(read)
    unowned = await alive.mark_interrupted(unowned=True)
    statuses = {c: await alive.latest_status("alice", c) for c in "acdefg"}
    [first] = await alive.get_conversation("alice", "a")

    assert holding == {"dead-1", "alive-2"}
    assert marked == [("alice", "a"), ("bob", "b")]
    assert again == []
    assert unowned == 1
    assert statuses == {
        "a": "interrupted",
        "c": "completed",
        "d": "running",
        "e": "interrupted",
        "f": None,
        "g": "running",
    }
    assert (first.answer, first.instance_id) == ("half an answer", "dead-1")


async def test_migrations_are_idempotent(database_url: str) -> None:
    async with Database.open(database_url, pool_size=5, migrate=True) as db:
        await SqlTurnStore(db).add_question(new_turn())

    async with Database.open(database_url, pool_size=5, migrate=True) as db:
        assert len(await SqlTurnStore(db).get_conversation("alice", "conv-1")) == 1
        async with db.begin() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
        assert version == [(ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head(),)]


async def test_orm_session_reads_the_table(db: Database) -> None:
    turn_id = await SqlTurnStore(db).add_question(new_turn())

    async with db.session() as session:
        rows = (await session.exec(select(AiSession).where(col(AiSession.id) == turn_id))).all()

    assert [(row.session_id, row.status) for row in rows] == [("conv-1", "running")]
    assert_utc(rows[0].create_time)


async def test_closed_database_refuses_use(sqlite_url: str) -> None:
    async with Database.open(sqlite_url, pool_size=5, migrate=True) as db:
        store = SqlTurnStore(db)

    with pytest.raises(StoreError, match="closed"):
        await store.ping()


async def test_unreachable_postgres_is_store_unavailable_quickly() -> None:
    url = "postgresql+asyncpg://postgres:s3cret-pw@127.0.0.1:1/test"
    started = time.monotonic()

    with pytest.raises(StoreUnavailable) as opening:
        async with Database.open(url, pool_size=5, migrate=True):
            pass
    async with Database.open(url, pool_size=5, migrate=False) as db:
        store = SqlTurnStore(db)
        with pytest.raises(StoreUnavailable) as pinging:
            await store.ping()
        with pytest.raises(StoreUnavailable):
            await store.add_question(new_turn())

    assert time.monotonic() - started < 5
    for failure in (opening, pinging):
        message = str(failure.value)
        assert "127.0.0.1:1" in message
        assert "s3cret-pw" not in message


async def test_sqlite_path_that_cannot_exist_is_store_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")

    with pytest.raises(StoreUnavailable):
        async with Database.open(
            f"sqlite+aiosqlite:///{blocker}/app.db", pool_size=5, migrate=True
        ):
            pass


async def test_the_turns_pool_opens_in_full_beside_the_start_up_and_keeps_its_connections(
    postgres_url: str,
) -> None:
    """A burst of new turns finds its connections open (PostgreSQL starts a process for each)."""
    async with Database.open(postgres_url, pool_size=4, migrate=False) as database:
        driver = database._driver  # the pool is the driver's own; nothing else shows it
        await driver._filling  # type: ignore[union-attr]
        assert driver._pool.get_size() == 4  # type: ignore[union-attr]
        for _ in range(3):
            await database.run(database.prepare(select(literal(1).label("one"))), {})
        assert driver._pool.get_size() == 4  # type: ignore[union-attr]


async def test_a_database_closed_while_its_pool_opens_closes_at_once(postgres_url: str) -> None:
    async with asyncio.timeout(10):
        async with Database.open(postgres_url, pool_size=20, migrate=False):
            pass


async def test_an_edit_branches_and_memory_follows_only_its_path(store: TurnStore) -> None:
    first = await store.add_question(new_turn(question="q1"))
    second = await store.add_question(new_turn(question="q2"))
    edited = await store.add_question(new_turn(question="q2, edited"), parent_id=first)
    for turn_id in (first, second, edited):
        await store.finish_turn(turn_id, outcome())

    following, memory = await store.begin_turn(new_turn(question="q3"), memory_turns=10)

    assert [t.question for t in memory] == ["q1", "q2, edited"]
    tree = await store.get_tree("alice", "conv-1")
    assert [t.id for t in tree.path()] == [first, edited, following]
    assert [t.parent_id for t in tree.path()] == [None, first, edited]
    assert tree.siblings(edited) == [second, edited]
    assert [t.question for t in await store.recent_turns("alice", "conv-1", 10)] == [
        "q1",
        "q2, edited",
        "q3",
    ]
    assert [t.id for t in await store.recent_turns("alice", "conv-1", 1, before_id=following)] == [
        edited
    ]
    # A new first question (0) has no parent and no memory.
    again, memory = await store.begin_turn(new_turn(question="q1 again"), 10, parent_id=0)
    assert memory == []
    assert (await store.get_tree("alice", "conv-1")).siblings(again) == [first, again]


async def test_a_chosen_path_holds_until_a_newer_turn(store: TurnStore) -> None:
    first = await store.add_question(new_turn(question="q1"))
    second = await store.add_question(new_turn(question="q2"))
    under_second = await store.add_question(new_turn(question="q3"))
    edited = await store.add_question(new_turn(question="q2 edited"), parent_id=first)
    for turn_id in (first, second, under_second, edited):
        await store.finish_turn(turn_id, outcome())
    assert await store.choose_path("bob", "conv-1", second) is None
    assert await store.choose_path("alice", "conv-1", 999_999) is None

    tree = await store.choose_path("alice", "conv-1", second)

    assert tree is not None
    assert [t.id for t in tree.path()] == [first, second, under_second]
    assert (await store.get_tree("alice", "conv-1")).leaf_id == under_second
    turn_id, memory = await store.begin_turn(new_turn(question="q4"), memory_turns=10)
    assert [t.id for t in memory] == [first, second, under_second]
    assert (await store.get_tree("alice", "conv-1")).leaf_id == turn_id


async def test_deleting_a_turn_takes_its_subtree_and_moves_the_path(store: TurnStore) -> None:
    first = await store.add_question(new_turn(question="q1"))
    old = await store.add_question(new_turn(question="q2"))
    below_old = await store.add_question(new_turn(question="q3"))
    newer = await store.add_question(new_turn(question="q2 edited"), parent_id=first)
    for turn_id in (first, old, below_old):
        await store.finish_turn(turn_id, outcome())
    leaf = await store.add_question(new_turn(question="q3 edited"))
    assert await store.delete_turns("alice", "conv-1", newer) == DeletedTurns(0, running=True)
    await store.finish_turn(newer, outcome())
    await store.finish_turn(leaf, outcome())
    assert await store.delete_turns("bob", "conv-1", newer) == DeletedTurns(0)

    deleted = await store.delete_turns("alice", "conv-1", newer)

    assert (deleted.turns, [t.id for t in deleted.gone]) == (2, [newer, leaf])
    tree = await store.get_tree("alice", "conv-1")
    assert [t.question for t in tree.path()] == ["q1", "q2", "q3"]
    assert (await store.delete_turns("alice", "conv-1", first)).turns == 3
    assert (await store.get_tree("alice", "conv-1")).turns == []


async def test_migration_keeps_each_conversation_one_path_and_undoes(database_url: str) -> None:
    async with Database.open(database_url, pool_size=1, migrate=False) as db:
        async with db.engine.begin() as conn:
            await conn.run_sync(migrate, "upgrade", "0006")
            now = datetime.now(UTC)
            for conversation, question in [("a", "a1"), ("b", "b1"), ("a", "a2"), ("a", "a3")]:
                await conn.execute(
                    text(
                        "INSERT INTO ai_session (session_id, user_id, agent_type, question,"
                        " status, create_time, update_time)"
                        " VALUES (:c, 'alice', 'chat', :q, 'completed', :t, :t)"
                    ),
                    {"c": conversation, "q": question, "t": now.replace(tzinfo=None)},
                )
            # To the head: the store reads every column of the latest schema.
            await conn.run_sync(migrate, "upgrade", "head")
        store = SqlTurnStore(db)
        tree = await store.get_tree("alice", "a")
        assert [t.question for t in tree.path()] == ["a1", "a2", "a3"]
        assert [t.parent_id for t in tree.turns] == [None, tree.turns[0].id, tree.turns[1].id]
        assert [t.parent_id for t in (await store.get_tree("alice", "b")).turns] == [None]
        async with db.engine.begin() as conn:
            await conn.run_sync(migrate, "downgrade", "0006")
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in inspect(sync).get_columns("ai_session")}
            )
            tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        assert "parent_id" not in columns
        assert "ai_active_path" not in tables


async def test_migration_0009_leaves_old_turns_modelless_and_their_search_working(
    database_url: str,
) -> None:
    async with Database.open(database_url, pool_size=1, migrate=False) as db:
        async with db.engine.begin() as conn:
            await conn.run_sync(migrate, "upgrade", "0008_turn_tree")
            await conn.execute(
                text(
                    "INSERT INTO ai_session (session_id, user_id, agent_type, question, answer,"
                    " status, prompt_tokens, completion_tokens, create_time, update_time)"
                    " VALUES ('a', 'alice', 'chat', 'lighthouses?', 'Old lighthouse answer',"
                    " 'completed', 10, 2, :t, :t)"
                ),
                {"t": datetime.now(UTC).replace(tzinfo=None)},
            )
            await conn.run_sync(migrate, "upgrade", "head")
        store = SqlTurnStore(db)
        new = StoredTurn(
            **{**new_turn("a", question="more lighthouses").model_dump(), "model": "fast"}
        )
        turn_id = await store.add_question(new)
        spent = ModelUsage(model="fast", prompt_tokens=5, completion_tokens=1, cost_usd=0.25)
        await store.finish_turn(
            turn_id,
            TurnOutcome(
                answer="New lighthouse answer",
                status="completed",
                cost_usd=0.25,
                usage_by_model=[spent],
            ),
        )
        old, newer = (await store.get_tree("alice", "a")).turns
        hits, total = await SqlTurnSearch(db).search("alice", "lighthouse answer", 1, 10)

    assert (old.model, old.cost_usd, old.usage_by_model) == (None, None, [])
    assert (newer.model, newer.cost_usd, newer.usage_by_model) == ("fast", 0.25, [spent])
    # The search triggers of 0007 still index what is written after 0009.
    assert total == 2
    assert {hit.turn_id for hit in hits} == {old.id, newer.id}


def migrate(connection: Connection, direction: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.attributes["connection"] = connection
    getattr(command, direction)(config, revision)


async def test_deleting_a_branch_deletes_the_files_only_it_used(db: Database) -> None:
    store, files = SqlTurnStore(db), SqlFileStore(db)
    for file_id in ("f-shared", "f-branch"):
        await files.add_file(new_file(file_id))
    made = new_file("f-made").model_copy(update={"source": "generated", "session_id": "conv-1"})
    await files.add_file(made)
    first = await store.add_question(new_turn(question="q1", fileid="f-shared"))
    branch = await store.add_question(new_turn(question="q2", fileid="f-shared"))
    below = await store.add_question(new_turn(question="q3", fileid="f-branch"))
    deck = TurnFile(file_id="f-made", name="deck.pptx", url="/file/f-made", size=1, mime_type="x")
    await store.finish_turn(below, TurnOutcome(status="completed", files=[deck]))
    for turn_id in (first, branch):
        await store.finish_turn(turn_id, outcome())

    deleted = await store.delete_turns("alice", "conv-1", branch)

    assert (deleted.turns, sorted(deleted.blob_keys)) == (2, ["uploads/f-branch", "uploads/f-made"])
    assert [f.id for f in await files.list_files("alice")] == ["f-shared"]


async def test_a_push_config_goes_with_its_conversation_and_is_its_users_alone(
    db: Database, store: TurnStore
) -> None:
    configs = SqlPushConfigs(db)
    await configs.put("alice", "conv-1", PushConfig("conv-1.1", "a", "https://h.test/a", "t"))
    await configs.put("alice", "conv-1", PushConfig("conv-1.1", "a", "https://h.test/b"))
    await configs.put("alice", "keep", PushConfig("keep.2", "k", "https://h.test/k"))

    assert await configs.of_task("alice", "conv-1.1") == [
        PushConfig("conv-1.1", "a", "https://h.test/b")
    ]
    assert await configs.of_task("bob", "conv-1.1") == []
    assert not await configs.delete("bob", "conv-1.1", "a")
    await store.delete_conversation("alice", "conv-1")
    assert await configs.of_task("alice", "conv-1.1") == []
    assert len(await configs.of_task("alice", "keep.2")) == 1


async def test_a_deleted_turn_takes_its_tasks_push_configs_with_it(
    db: Database, store: TurnStore
) -> None:
    configs = SqlPushConfigs(db)
    first, _ = await store.begin_turn(new_turn(), 10, None)
    await store.finish_turn(first, outcome())
    second, _ = await store.begin_turn(new_turn(question="And then?"), 10, None)
    await store.finish_turn(second, outcome(status="stopped"))
    for row in (first, second):
        await configs.put("alice", "conv-1", PushConfig(f"conv-1.{row}", "c", "https://h.test/"))

    rolled_back = await store.delete_last_turn("alice", "conv-1", ("stopped",))
    after_rollback = await configs.of_task("alice", f"conv-1.{second}")
    kept = await configs.of_task("alice", f"conv-1.{first}")
    deleted = await store.delete_turns("alice", "conv-1", first)

    assert deleted.turns == 1
    assert rolled_back is not None
    assert rolled_back.id == second
    assert after_rollback == []
    assert len(kept) == 1
    assert await configs.of_task("alice", f"conv-1.{first}") == []
