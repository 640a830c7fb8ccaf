"""The real `OpenAIChatModel` over real HTTP against `FakeOpenAI` on a local port.

What a MockTransport cannot show: connection pooling, a body cut by the
peer, a read timeout, and that abandoning a stream really closes the
connection (the fake sees the client leave).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import httpx2
import pytest
from pydantic import SecretStr

from app.config import Settings
from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from app.core.responses import ChatResponse, ModelEvent, Retrying, Usage, accumulate
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import ChatModel
from app.llm.errors import ModelConnectionError, ModelResponseError, ModelTimeout
from app.llm.http import build_http_client
from app.llm.registry import build_chat_model
from tests.fakes.mock_transport import run
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply

USER = [Msg.text("user", "What is the weather in Oslo and Rome?")]
WEATHER = ToolSchema(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
DISCONNECT_WAIT = 5.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def model(fake: FakeOpenAI) -> AsyncIterator[ChatModel]:
    settings = Settings(
        _env_file=None,
        llm_base_url=fake.base_url,
        llm_api_key=SecretStr("sk-fake"),
        llm_model="gpt-fake",
        llm_max_retries=2,
        llm_retry_max_delay_seconds=0.01,
    )
    async with build_http_client(settings) as client:
        yield build_chat_model(settings, client)


async def answer(
    model: ChatModel, messages: Sequence[Msg] = USER, tools: Sequence[ToolSchema] = ()
) -> list[ChatResponse]:
    events, error = await run(model, messages, tools)
    assert error is None
    return responses(events)


def responses(events: list[ModelEvent]) -> list[ChatResponse]:
    return [e for e in events if isinstance(e, ChatResponse)]


async def test_text_streams_over_http(fake: FakeOpenAI, model: ChatModel) -> None:
    fake.script(Reply.text("Sunny in Oslo.", chunk_size=2, reasoning="Check the sky."))
    whole = accumulate(await answer(model))
    assert whole.content == [ThinkingBlock("Check the sky."), TextBlock("Sunny in Oslo.")]
    assert whole.finish_reason == "stop"
    assert whole.usage == Usage(prompt_tokens=8, completion_tokens=10)
    (request,) = fake.requests
    assert request["model"] == "gpt-fake"
    assert request["stream_options"] == {"include_usage": True}
    assert fake.headers[0]["authorization"] == "Bearer sk-fake"


async def test_tool_calls_round_trip(fake: FakeOpenAI, model: ChatModel) -> None:
    fake.script(
        Reply.tool_calls(
            [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})],
            fragments=6,
            text="Let me check.",
        ),
        Reply.text("Cold in Oslo, warm in Rome."),
    )
    first = accumulate(await answer(model, tools=[WEATHER]))
    assert first.finish_reason == "tool_calls"
    text, oslo, rome = first.content
    assert text == TextBlock("Let me check.")
    assert isinstance(oslo, ToolUseBlock)
    assert isinstance(rome, ToolUseBlock)
    assert (oslo.name, oslo.input, rome.input) == (
        "get_weather",
        {"city": "Oslo"},
        {"city": "Rome"},
    )

    results = Msg(
        "tool",
        [
            ToolResultBlock(oslo.id, oslo.name, "-3°C"),
            ToolResultBlock(rome.id, rome.name, "18°C"),
        ],
    )
    history = [*USER, Msg("assistant", first.content), results]
    assert accumulate(await answer(model, history)).finish_reason == "stop"
    second = fake.requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
    # Sent back under the ids the server gave them, ours kept for the turn.
    assert [c["id"] for c in second[1]["tool_calls"]] == ["call_fake1", "call_fake2"]
    assert (oslo.provider_id, rome.provider_id) == ("call_fake1", "call_fake2")
    assert second[1]["tool_calls"][0]["function"]["arguments"] == '{"city":"Oslo"}'
    assert second[2] == {"role": "tool", "tool_call_id": "call_fake1", "content": "-3°C"}
    assert fake.requests[0]["tools"][0]["function"]["name"] == "get_weather"


async def test_rate_limit_then_ok(fake: FakeOpenAI, model: ChatModel) -> None:
    fake.script(Reply.error(429, retry_after=1), Reply.text("ok"))
    events, error = await run(model, USER)
    assert error is None
    assert events[0] == Retrying(attempt=1, delay=0.01, reason="LLM_RATE_LIMITED")
    assert len(fake.requests) == 2


async def test_sequential_calls_reuse_one_pooled_connection(
    fake: FakeOpenAI, model: ChatModel
) -> None:
    fake.script(Reply.error(500), Reply.text("one"), Reply.tool_calls([("f", {})]))
    for _ in range(3):
        await run(model, USER)
    assert len(fake.requests) == 4
    assert fake.connections == 1


async def test_a_cut_before_any_text_is_retried(fake: FakeOpenAI, model: ChatModel) -> None:
    fake.script(Reply.cut(after_chunks=0), Reply.text("second try"))
    events, error = await run(model, USER)
    assert error is None
    assert isinstance(events[0], Retrying)
    assert accumulate(responses(events)).content == [TextBlock("second try")]


async def test_a_cut_after_text_fails_without_retry(fake: FakeOpenAI, model: ChatModel) -> None:
    fake.script(Reply.cut(after_chunks=2))
    events, error = await run(model, USER)
    assert isinstance(error, ModelConnectionError)
    assert accumulate(responses(events)).content == [TextBlock("part0 part1 ")]
    assert len(fake.requests) == 1


async def test_a_malformed_stream_is_a_response_error(fake: FakeOpenAI, model: ChatModel) -> None:
    fake.script(Reply.malformed())
    _, error = await run(model, USER)
    assert isinstance(error, ModelResponseError)


async def test_abandoning_a_hung_stream_closes_the_connection(
    fake: FakeOpenAI, model: ChatModel
) -> None:
    fake.script(Reply.hang(first_text="Thinking about it"))
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in model.stream(USER):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), DISCONNECT_WAIT)
    assert not fake.disconnected.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake.disconnected.wait(), DISCONNECT_WAIT)


async def test_a_silent_upstream_times_out(fake: FakeOpenAI, model: ChatModel) -> None:
    fake.script(Reply.hang(), Reply.hang(), Reply.hang())
    _, error = await run(model, USER, options=GenerateOptions(timeout=0.2))
    assert isinstance(error, ModelTimeout)
    assert len(fake.requests) == 3
    await asyncio.wait_for(fake.disconnected.wait(), DISCONNECT_WAIT)


async def test_keyless_local_server_gets_no_authorization(fake: FakeOpenAI) -> None:
    settings = Settings(_env_file=None, llm_base_url=fake.base_url, llm_api_key=SecretStr(""))
    async with httpx2.AsyncClient() as client:
        await answer(build_chat_model(settings, client))
    assert "authorization" not in fake.headers[0]
    assert fake.requests[0]["model"] == "gpt-4o-mini"
