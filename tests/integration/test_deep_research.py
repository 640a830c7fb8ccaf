"""Deep research as a user meets it: a plan worked in parallel, a pause to ask, a stop and
"continue", a model that answers badly, and a conversation deleted with its checkpoints.

The model is the scripted in-process one, answering each call by the step of
the research it belongs to (the agent's own prompts say which); web search is
the Tavily fake over HTTP. The app is the real one on each backend, on the
scripted model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from app.agents.deep.checkpoints import open_checkpointer, thread_config, turn_thread
from app.config import Settings
from app.core.run import ConversationKey
from app.factory import create_app
from app.llm.errors import ModelHTTPError
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, history, service_settings
from tests.support.research import REPORT, Researcher
from tests.support.server import serve
from tests.support.sse import Event, collect, events, text_of

MARKET, COSTS, OUTLOOK = "Market size", "Running costs", "Outlook"
INDEPENDENT = {"tasks": [{"id": "a", "title": MARKET}, {"id": "b", "title": COSTS}]}
DIAMOND = {
    "tasks": [
        *INDEPENDENT["tasks"],
        {"id": "c", "title": OUTLOOK, "dependsOn": ["a", "b"]},
    ]
}
QUESTION = "How big is the heat pump market?"


def deep_settings(backend: Backend, tmp_path: Path, search: FakeTavily, **extra: Any) -> Settings:
    return service_settings(
        tmp_path,
        backend.database_url,
        backend.redis_url,
        redis_prefix=backend.redis_prefix,
        tavily_api_key="tvly-test",
        tavily_base_url=search.base_url,
        **extra,
    )


def on_sqlite(tmp_path: Path, sqlite_url: str, search: FakeTavily, **extra: Any) -> Settings:
    """For what does not depend on the backend: the embedded default alone."""
    return deep_settings(Backend(sqlite_url, "", ""), tmp_path, search, **extra)


@asynccontextmanager
async def research_service(
    settings: Settings, researcher: Researcher
) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serve(create_app(settings, model=researcher.model())) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        yield client


async def ask(client: httpx.AsyncClient, query: str, conversation: str) -> list[Event]:
    params = {"query": query, "conversationId": conversation}
    async with client.stream("GET", "/agent/deep/stream", params=params) as response:
        assert response.status_code == 200
        return await collect(response)


@asynccontextmanager
async def market_done_costs_held(
    client: httpx.AsyncClient, researcher: Researcher, conversation: str
) -> AsyncIterator[tuple[list[Event], AsyncIterator[Event]]]:
    """A research of INDEPENDENT read until Market is done and Costs waits in its first call.

    Yields the events so far and the rest of the stream, not yet read.
    """
    params = {"query": QUESTION, "conversationId": conversation}
    async with client.stream("GET", "/agent/deep/stream", params=params) as response:
        stream = events(response)
        seen = [await anext(stream)]
        while (seen[-1]["type"], seen[-1].get("status")) != ("step", "completed"):
            seen.append(await anext(stream))
        await researcher.arrived.setdefault(COSTS, asyncio.Event()).wait()
        yield seen, stream


def of_type(evts: list[Event], kind: str) -> list[Event]:
    return [e for e in evts if e["type"] == kind]


async def test_independent_tasks_run_at_once_and_a_dependent_one_sees_their_results(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(DIAMOND).decode())
    researcher.queries[OUTLOOK] = MARKET
    researcher.hold[MARKET] = asyncio.Event()
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        turn = asyncio.create_task(ask(client, QUESTION, "c-diamond"))
        # Market waits on its first call until Costs has started: only parallel tasks get there.
        overlapped = await researcher.overlap(MARKET, COSTS)
        researcher.hold[MARKET].set()
        evts = await turn
        [stored] = await history(client, "c-diamond")

    assert overlapped
    assert evts[-1]["status"] == "completed"
    [plan] = of_type(evts, "plan")
    assert plan["round"] == 1
    assert [(t["id"], t["title"], t["dependsOn"], t["status"]) for t in plan["tasks"]] == [
        ("1.1", MARKET, [], "pending"),
        ("1.2", COSTS, [], "pending"),
        ("1.3", OUTLOOK, ["1.1", "1.2"], "pending"),
    ]
    # The dependent task starts after both its inputs finished, and is given their results.
    finished = [e["taskId"] for e in of_type(evts, "step") if e["status"] == "completed"]
    assert finished[-1] == "1.3"
    assert set(finished[:2]) == {"1.1", "1.2"}
    outlook_prompt = researcher.requests[OUTLOOK][0].messages[1].text_content()
    assert f"Findings on {MARKET}." in outlook_prompt
    assert f"Findings on {COSTS}." in outlook_prompt
    # Each task's search streams as tool_start/tool_end carrying the task's id.
    starts = of_type(evts, "tool_start")
    assert sorted(e["taskId"] for e in starts) == ["1.1", "1.2", "1.3"]
    assert {e["toolName"] for e in starts} == {"web_search"}
    assert {e["toolCallId"]: e["taskId"] for e in of_type(evts, "tool_end")} == {
        e["toolCallId"]: e["taskId"] for e in starts
    }
    thinking = text_of(evts, "thinking")
    for line in ("Plan: 3 tasks", "Task 1.3 done", "Critique: passed", "Market first, then"):
        assert line in thinking
    [critique] = of_type(evts, "critique")
    assert (critique["round"], critique["passed"]) == (1, True)
    # One reference list, deduplicated (Outlook searched what Market did), numbered as cited.
    [reference] = of_type(evts, "reference")
    urls = [r["url"] for r in orjson.loads(reference["content"])]
    assert urls == [
        "https://example.test/Market-size/1",
        "https://example.test/Market-size/2",
        "https://example.test/Running-costs/1",
        "https://example.test/Running-costs/2",
    ]
    report_prompt = researcher.requests["report"][0].messages[-1].text_content()
    assert "[1] Market size result 1 (https://example.test/Market-size/1)" in report_prompt
    assert "[3] Running costs result 1" in report_prompt
    assert text_of(evts) == REPORT
    # The history has the plan as it ended, to draw it again.
    assert stored["status"] == "completed"
    [round_1] = stored["plan"]
    assert [(t["id"], t["status"]) for t in round_1["tasks"]] == [
        ("1.1", "completed"),
        ("1.2", "completed"),
        ("1.3", "completed"),
    ]
    assert round_1["tasks"][0]["summary"] == f"Findings on {MARKET}."
    assert round_1["critique"] == {"passed": True, "feedback": ""}
    assert stored["reference"] == orjson.loads(reference["content"])


async def test_a_paused_question_is_answered_on_another_instance_and_the_question_is_kept(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    asked = "Which region and which years?"
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode(), clarify=asked)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as first:
        paused = await ask(first, QUESTION, "c-pause")
        # Started once the first is up: instances starting together race to migrate SQLite.
        async with research_service(settings, researcher) as second:
            answered = await ask(second, "Europe, 2020 to 2024", "c-pause")
            stored = await history(second, "c-pause")

    assert [e["type"] for e in paused] == ["start", "thinking", "text", "complete"]
    assert text_of(paused) == asked
    assert paused[-1]["status"] == "paused"
    assert answered[-1]["status"] == "completed"
    assert researcher.calls["clarify"] == 1
    report_prompt = researcher.requests["report"][0].messages[-1].text_content()
    assert f"Question: {QUESTION}" in report_prompt
    assert "The user answered:\nEurope, 2020 to 2024" in report_prompt
    assert [(t["question"], t["status"]) for t in stored] == [
        (QUESTION, "paused"),
        ("Europe, 2020 to 2024", "completed"),
    ]
    assert stored[1]["plan"][0]["critique"]["passed"] is True


async def test_continue_after_a_stop_does_not_run_finished_tasks_again(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    researcher.hold[COSTS] = asyncio.Event()
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        async with market_done_costs_held(client, researcher, "c-stop") as (stopped, rest):
            stop = await client.get("/agent/stop", params={"conversationId": "c-stop"})
            stopped.extend([event async for event in rest])
        researcher.hold[COSTS].set()
        resumed = await ask(client, "继续", "c-stop")
        stored = await history(client, "c-stop")

    assert stop.json()["success"] is True
    assert stopped[-1]["status"] == "stopped"
    assert [e["taskId"] for e in of_type(stopped, "step") if e["status"] == "completed"] == ["1.1"]
    assert resumed[-1]["status"] == "completed"
    # Market finished before the stop: its two calls (search, answer) were not made again.
    assert researcher.calls[MARKET] == 2
    assert researcher.calls[COSTS] == 3
    assert (researcher.calls["plan"], researcher.calls["brief"]) == (1, 1)
    [shown] = of_type(resumed, "plan")
    assert [(t["id"], t["status"]) for t in shown["tasks"]] == [
        ("1.1", "completed"),
        ("1.2", "pending"),
    ]
    assert [s["status"] for s in stored] == ["stopped", "completed"]
    assert [t["status"] for t in stored[1]["plan"][0]["tasks"]] == ["completed", "completed"]
    report_prompt = researcher.requests["report"][0].messages[-1].text_content()
    assert f"Findings on {MARKET}." in report_prompt


async def test_an_invalid_plan_is_asked_for_again_once(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    untitled = {"tasks": [{"id": "a", "title": ""}]}
    researcher = Researcher(orjson.dumps(untitled).decode(), orjson.dumps(INDEPENDENT).decode())
    settings = on_sqlite(tmp_path, sqlite_url, fake_search)
    async with research_service(settings, researcher) as client:
        evts = await ask(client, QUESTION, "c-retry")

    assert evts[-1]["status"] == "completed"
    assert researcher.calls["plan"] == 2
    again = researcher.requests["plan"][1].messages
    assert again[-2].text_content() == orjson.dumps(untitled).decode()
    assert "tasks.0.title: String should have at least 1 character" in again[-1].text_content()


async def test_a_plan_with_broken_dependencies_is_mended_without_asking_again(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    tangled = {
        "tasks": [
            {"id": "a", "title": MARKET, "dependsOn": ["c", "a2"]},
            {"id": "a", "title": COSTS},
            {"id": "c", "title": OUTLOOK, "dependsOn": ["a"]},
        ]
    }
    researcher = Researcher(orjson.dumps(tangled).decode())
    settings = on_sqlite(tmp_path, sqlite_url, fake_search)
    async with research_service(settings, researcher) as client:
        evts = await ask(client, QUESTION, "c-mended")

    assert evts[-1]["status"] == "completed"
    assert researcher.calls["plan"] == 1
    [plan] = of_type(evts, "plan")
    assert [(t["id"], t["title"], t["dependsOn"]) for t in plan["tasks"]] == [
        ("1.1", MARKET, ["1.3"]),
        ("1.2", COSTS, []),
        ("1.3", OUTLOOK, []),
    ]
    notes = text_of(evts, "thinking")
    assert "Mended: task 'Market size': its dependency on 'a2' dropped (no such task)." in notes
    assert "Mended: task 'Running costs': its id 'a' was taken; it is 'a+'." in notes
    assert "Mended: task 'Outlook': its dependency on 'a' dropped (a cycle)." in notes


async def test_a_plan_invalid_twice_fails_the_turn_with_an_error(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    researcher = Researcher("no plan today", '{"tasks": []}')
    settings = on_sqlite(tmp_path, sqlite_url, fake_search)
    async with research_service(settings, researcher) as client:
        evts = await ask(client, QUESTION, "c-fail")
        [stored] = await history(client, "c-fail")

    [error] = of_type(evts, "error")
    assert error["code"] == "LLM_INVALID_OUTPUT"
    assert [e["type"] for e in evts[-2:]] == ["error", "complete"]
    assert evts[-1]["status"] == "failed"
    assert (stored["status"], stored["error"]) == ("failed", "LLM_INVALID_OUTPUT")


async def test_deleting_a_conversation_deletes_its_checkpoints(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(clarify="Which region?")
    settings = deep_settings(backend, tmp_path, fake_search)
    async with research_service(settings, researcher) as client:
        turn = (await ask(client, QUESTION, "c-delete"))[0]["sessionId"]
        thread = thread_config(turn_thread(KEY, turn))
        async with open_checkpointer(settings.database_url) as saver:
            before = await saver.aget_tuple(thread)
            deleted = await client.delete("/session/c-delete")
            after = await saver.aget_tuple(thread)

    assert before is not None
    assert deleted.status_code == 200
    assert after is None


async def test_a_critique_that_finds_gaps_plans_another_round_with_its_feedback(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    second = {"tasks": [{"id": "x", "title": OUTLOOK}]}
    researcher = Researcher(
        orjson.dumps(INDEPENDENT).decode(),
        orjson.dumps(second).decode(),
        critiques=("no numbers for 2025",),
    )
    settings = on_sqlite(tmp_path, sqlite_url, fake_search)
    async with research_service(settings, researcher) as client:
        evts = await ask(client, QUESTION, "c-rounds")
        [stored] = await history(client, "c-rounds")

    assert evts[-1]["status"] == "completed"
    assert [(e["round"], e["passed"]) for e in of_type(evts, "critique")] == [(1, False), (2, True)]
    assert "Critique: needs no numbers for 2025" in text_of(evts, "thinking")
    replan = researcher.requests["plan"][1].messages[0].text_content()
    assert "This is round 2" in replan
    assert "no numbers for 2025" in replan
    assert f"Findings on {MARKET}." in replan
    assert [[t["id"] for t in r["tasks"]] for r in stored["plan"]] == [["1.1", "1.2"], ["2.1"]]
    # The report is written from every round's results, none dropped.
    report_prompt = researcher.requests["report"][0].messages[-1].text_content()
    for title in (MARKET, COSTS, OUTLOOK):
        assert f"Findings on {title}." in report_prompt


async def test_a_new_question_after_a_report_starts_new_research_with_the_conversation_as_memory(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    plan = orjson.dumps(INDEPENDENT).decode()
    researcher = Researcher(plan, plan)
    settings = on_sqlite(tmp_path, sqlite_url, fake_search)
    async with research_service(settings, researcher) as client:
        await ask(client, QUESTION, "c-again")
        again = await ask(client, "And in Japan?", "c-again")

    assert again[-1]["status"] == "completed"
    assert researcher.calls["plan"] == 2
    assert researcher.calls[MARKET] == 4
    clarify = [m.text_content() for m in researcher.requests["clarify"][1].messages]
    assert clarify[1:] == [
        QUESTION,
        REPORT,
        "And in Japan?",
    ]


async def test_research_cut_by_a_shutdown_is_interrupted_and_continues_on_the_next_instance(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    researcher.hold[COSTS] = asyncio.Event()
    # No moves: with Redis the next instance would carry the research on by itself
    # (test_takeover.py); here it waits for the user's "retry".
    settings = deep_settings(backend, tmp_path, fake_search, turn_takeovers=0)
    async with (
        research_service(settings, researcher) as first,
        market_done_costs_held(first, researcher, "c-crash"),
    ):
        pass  # Leaving shuts the first instance down while Costs is in the middle of its run.
    researcher.hold[COSTS].set()
    async with research_service(settings, researcher) as second:
        resumed = await ask(second, "retry", "c-crash")
        stored = await history(second, "c-crash")

    assert [s["status"] for s in stored] == ["interrupted", "completed"]
    assert resumed[-1]["status"] == "completed"
    assert researcher.calls[MARKET] == 2
    assert researcher.calls[COSTS] == 3


async def test_a_checkpoint_write_cut_by_a_shutdown_does_not_lock_out_the_next_instance(
    sqlite_url: str,
) -> None:
    def at(step: str) -> RunnableConfig:
        return {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": step}}

    async with open_checkpointer(sqlite_url) as saver:
        assert isinstance(saver, AsyncSqliteSaver)
        for step in ("s1", "s2"):
            await saver.aput_writes(at(step), [("a", 1)], "task")
        # What cancelled work leaves on the connection: a read stopped after its first
        # row, and a write stopped between its INSERT and its commit.
        unfinished_read = await saver.conn.execute("SELECT * FROM writes")
        assert await unfinished_read.fetchone() is not None
        await saver.conn.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel)"
            " VALUES ('t', '', 's3', 'task', 0, 'a')"
        )
    async with open_checkpointer(sqlite_url) as saver:
        assert isinstance(saver, AsyncSqliteSaver)
        await saver.aput_writes(at("s4"), [("a", 2)], "task")
        cursor = await saver.conn.execute("SELECT checkpoint_id FROM writes ORDER BY 1")
        stored = [row[0] for row in await cursor.fetchall()]

    assert unfinished_read is not None  # alive until here, as a cancelled task's frame keeps it
    assert stored == ["s1", "s2", "s4"]  # the cut write is gone, the next one went through


async def test_a_task_the_model_fails_fails_the_turn_and_retry_runs_only_that_task(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    researcher.hold[COSTS] = asyncio.Event()
    researcher.fail[COSTS] = ModelHTTPError(400, "bad request")
    settings = on_sqlite(tmp_path, sqlite_url, fake_search)
    async with research_service(settings, researcher) as client:
        # Costs fails only once Market is done, so what the retry must keep is known.
        async with market_done_costs_held(client, researcher, "c-failed") as (failed, rest):
            researcher.hold[COSTS].set()
            failed.extend([event async for event in rest])
        retried = await ask(client, "重试", "c-failed")

    assert [(e["taskId"], e["status"]) for e in of_type(failed, "step")][-1] == ("1.2", "failed")
    assert [e["type"] for e in failed[-2:]] == ["error", "complete"]
    assert (failed[-2]["code"], failed[-1]["status"]) == ("LLM_BAD_REQUEST", "failed")
    assert retried[-1]["status"] == "completed"
    assert researcher.calls[MARKET] == 2
    assert researcher.calls[COSTS] == 3


async def test_at_most_deep_max_parallel_tasks_run_at_once(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode())
    settings = on_sqlite(tmp_path, sqlite_url, fake_search, deep_max_parallel=1)
    async with research_service(settings, researcher) as client:
        evts = await ask(client, QUESTION, "c-one")

    assert evts[-1]["status"] == "completed"
    # One at a time: each task's search and answer before the other's first call. With
    # room for two, both first calls are made before either search comes back.
    tasks = [name for name in researcher.order if name in (MARKET, COSTS)]
    assert tasks in ([MARKET, MARKET, COSTS, COSTS], [COSTS, COSTS, MARKET, MARKET])


KEY = ConversationKey("local", "c-delete")
