"""Tool-call ids of our own: however the model's server names its calls, a turn keeps them apart.

Local servers number their calls `call_1`, `call_2`, ... in every answer, some
repeat one id within an answer, Gemini sends none (the id behaviours of
tests/fakes/model_behaviours.py). Each turn here runs the real app over HTTP
against a vendor's fake in one of those behaviours, its parallel searches made
to overlap (`FakeTavily.together`), and is read back as a reopened
conversation reads it (`GET /session/{id}`): every call as it ended.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.agents.tool_history import INTERRUPTED_RESULT
from tests.fakes.model_behaviours import BEHAVIOURS, Answers, Behaving
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply, ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import ask, history, running_service, service_settings
from tests.support.research import over_http
from tests.support.sse import Event

ID_BEHAVIOURS = ["reused-ids", "repeated-ids", "missing-ids"]
SEARCHES = [("web_search", {"query": "heat pumps"}), ("web_search", {"query": "heat pump costs"})]
ANSWER = "Heat pumps are cheap to run."


@asynccontextmanager
async def app_on(
    tmp_path: Path, answers: Answers, behaviour: str, search: FakeTavily
) -> AsyncIterator[httpx.AsyncClient]:
    """The app, its model the OpenAI fake answering `answers` in `behaviour`."""
    async with FakeOpenAI() as fake:
        fake.responder = Behaving(fake, answers, BEHAVIOURS[behaviour]())
        settings = service_settings(
            tmp_path,
            f"sqlite+aiosqlite:///{tmp_path}/app.db",
            llm_base_url=fake.base_url,
            tavily_api_key="tvly-test",
            tavily_base_url=search.base_url,
        )
        async with running_service(settings) as client:
            yield client


def searched_twice_in_parallel(server: ScriptedServer, body: Body) -> str | Reply:
    """Two rounds of two parallel searches, then the answer (to any later question too)."""
    return Reply.tool_calls(SEARCHES) if len(server.requests) <= 2 else ANSWER


def assert_every_call_ended(events: list[Event], tools: list[dict[str, Any]], calls: int) -> None:
    """Each call once in the history, as it ended, and its start and end paired in the stream."""
    assert len(tools) == calls
    assert len({t["id"] for t in tools}) == calls
    assert [(t["name"], t["isError"]) for t in tools] == [("web_search", False)] * calls
    assert INTERRUPTED_RESULT not in [t["result"] for t in tools]
    for kind in ("tool_start", "tool_end"):
        assert Counter(e["toolCallId"] for e in events if e["type"] == kind) == Counter(
            t["id"] for t in tools
        )


@pytest.mark.parametrize("behaviour", ID_BEHAVIOURS)
async def test_a_deep_research_reopens_with_every_tasks_search_as_it_ended(
    tmp_path: Path, fake_search: FakeTavily, behaviour: str
) -> None:
    fake_search.together = 2
    async with app_on(tmp_path, over_http, behaviour, fake_search) as client:
        events = await ask(client, "How big is the heat pump market?", "c-deep", "deep")
        [turn] = await history(client, "c-deep")

    assert events[-1]["status"] == "completed", events[-2:]
    assert_every_call_ended(events, turn["tools"], 2)
    assert sorted(t["taskId"] for t in turn["tools"]) == ["1.1", "1.2"]


@pytest.mark.parametrize("behaviour", ID_BEHAVIOURS)
async def test_a_chat_turn_of_parallel_calls_reopens_with_every_call_and_is_remembered(
    tmp_path: Path, fake_search: FakeTavily, behaviour: str
) -> None:
    """Its calls are all replayed to the model in the next turn, each with its own result."""
    fake_search.together = 2
    async with app_on(tmp_path, searched_twice_in_parallel, behaviour, fake_search) as client:
        first = await ask(client, "Are heat pumps worth it?", "c-chat")
        second = await ask(client, "And in winter?", "c-chat")
        turns = await history(client, "c-chat")

    assert first[-1]["status"] == "completed", first[-2:]
    assert second[-1]["status"] == "completed", second[-2:]
    assert_every_call_ended(first, turns[0]["tools"], 4)
    assert turns[1]["answer"] == ANSWER
