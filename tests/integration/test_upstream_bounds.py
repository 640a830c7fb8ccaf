"""Models that misbehave are bounded: the turn ends with an `error`, what came is stored.

Over HTTP, on the web-search agent: an answer far larger than allowed
(streamed word by word, or as one huge chunk), a model that never sends
its headers, one that stops in the middle of its answer, and a search
provider that answers 50 MB (a tool error; the turn goes on).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import ask, history, running_service, service_settings
from tests.support.sse import text_of
from tests.support.tcp import tcp_server

LIMIT = 20_000


def sqlite(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/app.db"


async def test_an_answer_over_the_size_limit_fails_the_turn_and_keeps_the_start(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("word " * 40_000), Reply.text("x" * 200_000, chunks=1))
    settings = service_settings(
        tmp_path, sqlite(tmp_path), llm_base_url=fake_llm.base_url, llm_max_response_bytes=LIMIT
    )
    async with running_service(settings) as client:
        streamed = await ask(client, "Talk for ever", "c-long")
        one_chunk = await ask(client, "One huge chunk", "c-huge")
        [stored] = await history(client, "c-long")

    for evts in (streamed, one_chunk):
        [error] = [e for e in evts if e["type"] == "error"]
        assert error["code"] == "LLM_BAD_RESPONSE"
        assert f"the answer was longer than {LIMIT} bytes" in error["detail"]
        assert evts[-1]["type"] == "complete"
        assert evts[-1]["status"] == "failed"
    partial = text_of(streamed)
    assert partial.startswith("word word")
    assert len(partial) < LIMIT
    assert stored["status"] == "failed"
    assert stored["answer"] == partial
    # A single chunk larger than the limit is never taken in: nothing of it is shown.
    assert text_of(one_chunk) == ""


@contextlib.asynccontextmanager
async def silent_model() -> AsyncIterator[str]:
    """An endpoint that accepts connections and reads requests, and never answers."""

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async with tcp_server(swallow) as port:
        yield f"http://127.0.0.1:{port}/v1"


async def test_a_model_that_never_sends_headers_times_out_into_an_error(
    tmp_path: Path,
) -> None:
    async with silent_model() as url:
        settings = service_settings(
            tmp_path, sqlite(tmp_path), llm_base_url=url, llm_timeout_seconds=0.2
        )
        async with running_service(settings) as client:
            evts = await ask(client, "Anyone there?", "c-silent")
            [stored] = await history(client, "c-silent")

    assert [e["code"] for e in evts if e["type"] == "error"][-1] == "LLM_TIMEOUT"
    assert evts[-1]["status"] == "failed"
    assert stored["status"] == "failed"


async def test_a_model_that_stops_mid_answer_times_out_and_keeps_the_start(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Half an"))
    settings = service_settings(
        tmp_path, sqlite(tmp_path), llm_base_url=fake_llm.base_url, llm_timeout_seconds=0.2
    )
    async with running_service(settings) as client:
        evts = await ask(client, "Go on", "c-idle")
        [stored] = await history(client, "c-idle")

    assert [e["code"] for e in evts if e["type"] == "error"] == ["LLM_TIMEOUT"]
    assert evts[-1]["status"] == "failed"
    assert stored["answer"] == "Half an"


async def test_a_search_answer_of_50_mb_is_a_tool_error_and_the_turn_completes(
    tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_search.padding_bytes = 50 * 1024 * 1024
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "tea"})]),
        Reply.text("The search failed, so from memory: tea is a drink."),
    )
    settings = service_settings(
        tmp_path,
        sqlite(tmp_path),
        llm_base_url=fake_llm.base_url,
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
    )
    async with running_service(settings) as client:
        evts = await ask(client, "What is tea?", "c-tea")

    [tool_end] = [e for e in evts if e["type"] == "tool_end"]
    assert tool_end["isError"] is True
    assert tool_end["result"] == "Web search returned an answer too large to read."
    assert evts[-1]["status"] == "completed"
    assert text_of(evts) == "The search failed, so from memory: tea is a drink."
