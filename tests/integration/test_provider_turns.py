"""A web-search turn end to end on every provider: `LLM_PROVIDER` changes, nothing else does.

The real app over real HTTP, with each vendor's fake as the model and the
Tavily fake as the search: the model calls the search tool, reads its result
in the vendor's tool-result format, and answers; the events, the stored turn
and its token usage are the same on every provider. The backend pairs are
covered by `test_chat_stream.py`; here the embedded one is enough.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from tests.fakes.model_servers import FAKE_PROVIDERS
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply, ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    TEST_LLM_KEY,
    ask,
    history,
    running_service,
    service_settings,
)
from tests.support.sse import text_of, types


@pytest.fixture(params=sorted(FAKE_PROVIDERS))
async def fake_llm(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, ScriptedServer]]:
    async with FAKE_PROVIDERS[request.param]() as fake:
        yield request.param, fake


@pytest.fixture
async def fake_search() -> AsyncIterator[FakeTavily]:
    async with FakeTavily().running() as fake:
        yield fake


async def test_a_web_search_turn_on_every_provider(
    tmp_path: Path, fake_llm: tuple[str, ScriptedServer], fake_search: FakeTavily
) -> None:
    provider, fake = fake_llm
    fake.script(
        Reply.tool_calls([("web_search", {"query": "python 3.13"})], fragments=5, usage=(40, 6)),
        Reply.text(
            "Python 3.13 is out [1].", chunks=4, reasoning="Read the result.", usage=(90, 8)
        ),
    )
    settings = service_settings(
        tmp_path,
        f"sqlite+aiosqlite:///{tmp_path}/app.db",
        llm_provider=provider,
        llm_base_url=fake.base_url,
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
    )
    async with running_service(settings) as client:
        evts = await ask(client, "What is new in Python?", "conv-1")
        stored = await history(client, "conv-1")

    assert types(evts) == [
        "start",
        "thinking",
        "tool_start",
        "tool_end",
        "thinking",
        "text",
        "reference",
        "complete",
    ]
    tool_start = next(e for e in evts if e["type"] == "tool_start")
    assert orjson.loads(tool_start["arguments"]) == {"query": "python 3.13"}
    assert text_of(evts) == "Python 3.13 is out [1]."
    assert "Read the result." in text_of(evts, "thinking")
    complete = evts[-1]
    assert complete["status"] == "completed"
    assert complete["usage"] == {
        "promptTokens": 130,
        "completionTokens": 14,
        "estimated": False,
        "model": "default",
    }
    (turn,) = stored
    assert (turn["answer"], turn["status"]) == ("Python 3.13 is out [1].", "completed")
    assert (turn["promptTokens"], turn["completionTokens"]) == (130, 14)

    # The model read the search result, sent back under the id the server gave the call;
    # the turn's events know the call by an id of ours.
    assert len(fake.requests) == 2
    second = orjson.dumps(fake.requests[1]).decode()
    assert "Facts about python 3.13" in second
    assert "call_fake1" in second
    assert tool_start["toolCallId"] not in second
    # The key went in a header only.
    assert all(TEST_LLM_KEY not in target for target in fake.targets)
    assert any(TEST_LLM_KEY in value for value in fake.headers[0].values())
    assert TEST_LLM_KEY not in orjson.dumps(evts).decode()


async def test_usage_the_provider_does_not_report_is_counted_and_stored(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.script(Reply.text("Counted, not reported.", usage=False))
        settings = service_settings(
            tmp_path, f"sqlite+aiosqlite:///{tmp_path}/app.db", llm_base_url=fake.base_url
        )
        async with running_service(settings) as client:
            evts = await ask(client, "Hello", "conv-count")
            stored = await history(client, "conv-count")

    usage = evts[-1]["usage"]
    assert usage["promptTokens"] > usage["completionTokens"] > 0
    assert usage["estimated"] is True
    assert (stored[0]["promptTokens"], stored[0]["completionTokens"]) == (
        usage["promptTokens"],
        usage["completionTokens"],
    )
