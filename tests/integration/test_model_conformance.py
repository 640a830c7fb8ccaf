"""One contract, every adapter: the same scripted exchanges through each vendor's fake.

Each test drives one scenario through the real adapter, over real HTTP, to a
local fake server that speaks one vendor's documented wire format, and
asserts the `ChatResponse` sequence the agents see. That sequence is the same
whatever the vendor: deltas as they come, then one last chunk with the whole
tool calls, the usage and the finish reason. A provider added to
`FAKE_PROVIDERS` (its adapter and its fake) is run through every test here.

The one vendor-specific thing allowed in a sequence is a thinking signature
(an opaque token Anthropic streams after the thinking text, which the loop
must send back): `visible()` leaves signatures out of the comparison.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from unittest.mock import ANY

import pytest
from pydantic import SecretStr

from app.config import Settings
from app.core.messages import (
    ContentBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from app.core.responses import ChatResponse, ModelEvent, Retrying, Usage
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import ChatModel
from app.llm.errors import (
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeout,
)
from app.llm.http import build_http_client
from app.llm.registry import PROVIDERS, build_chat_model
from app.llm.tokens import TokenCounter, install_encodings
from tests.fakes.mock_transport import run
from tests.fakes.model_servers import FAKE_PROVIDERS
from tests.fakes.scripted_server import CallIds, Reply, ScriptedServer

KEY = "sk-conformance-SECRET-4242"
RID = "fake-response-1"
"""The fakes give the n-th response of a server the id "fake-response-n"."""
USER = [Msg.text("system", "Be brief."), Msg.text("user", "Weather in Oslo and Rome?")]
WEATHER = ToolSchema(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
MAX_DELAY = 0.05
"""Retry waits are capped at this, so a test retries for real yet stays fast."""
DISCONNECT_WAIT = 5.0


@dataclass
class Vendor:
    name: str
    fake: ScriptedServer
    model: ChatModel


@pytest.fixture(scope="session")
def tiktoken_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiktoken")


@pytest.fixture
def offline_tokens(tiktoken_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken's encodings installed for this test, so counting never reaches the network."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tiktoken_dir))
    install_encodings(tiktoken_dir)


@pytest.fixture(params=sorted(FAKE_PROVIDERS))
async def vendor(request: pytest.FixtureRequest) -> AsyncIterator[Vendor]:
    name: str = request.param
    async with FAKE_PROVIDERS[name]() as fake:
        settings = Settings(
            _env_file=None,
            llm_provider=name,
            llm_base_url=fake.base_url,
            llm_api_key=SecretStr(KEY),
            llm_model="fake-model",
            llm_max_retries=2,
            llm_retry_max_delay_seconds=MAX_DELAY,
        )
        async with build_http_client(settings) as client:
            yield Vendor(name, fake, build_chat_model(settings, client))


def test_every_adapter_has_a_fake() -> None:
    assert {spec.model_class.provider for spec in PROVIDERS.values()} == set(FAKE_PROVIDERS)


async def exchange(
    vendor: Vendor, tools: list[ToolSchema] | None = None, options: GenerateOptions | None = None
) -> list[ChatResponse]:
    events, error = await run(vendor.model, USER, tools or [], options)
    assert error is None
    return visible(responses(events))


def responses(events: list[ModelEvent]) -> list[ChatResponse]:
    chunks = [e for e in events if isinstance(e, ChatResponse)]
    assert len(chunks) == len([e for e in events if not isinstance(e, Retrying)])
    return chunks


def visible(chunks: list[ChatResponse]) -> list[ChatResponse]:
    """The chunks without thinking signatures, and without chunks that carried only those."""
    out = []
    for chunk in chunks:
        content: list[ContentBlock] = [
            ThinkingBlock(b.thinking) if isinstance(b, ThinkingBlock) else b
            for b in chunk.content
            if not (isinstance(b, ThinkingBlock) and not b.thinking)
        ]
        if content or chunk.usage or chunk.finish_reason:
            out.append(ChatResponse(chunk.id, content, chunk.usage, chunk.finish_reason))
    return out


def text(*pieces: str) -> list[ChatResponse]:
    return [ChatResponse(RID, [TextBlock(p)]) for p in pieces]


def call(n: int, city: str) -> ToolUseBlock:
    arguments = f'{{"city":"{city}"}}'
    return ToolUseBlock(ANY, "get_weather", {"city": city}, arguments, provider_id=f"call_fake{n}")


async def test_plain_answer(vendor: Vendor) -> None:
    vendor.fake.script(Reply.text("Hello there, friend.", usage=(11, 3)))
    assert await exchange(vendor) == [
        *text("Hello ", "there, ", "friend."),
        ChatResponse(RID, [], Usage(11, 3), "stop"),
    ]


async def test_reasoning_streams_as_thinking_before_the_answer(vendor: Vendor) -> None:
    vendor.fake.script(Reply.text("Sunny.", reasoning="Check the sky.", usage=(11, 4)))
    assert await exchange(vendor) == [
        ChatResponse(RID, [ThinkingBlock("Check ")]),
        ChatResponse(RID, [ThinkingBlock("the ")]),
        ChatResponse(RID, [ThinkingBlock("sky.")]),
        *text("Sunny."),
        ChatResponse(RID, [], Usage(11, 4), "stop"),
    ]


async def test_one_tool_call(vendor: Vendor) -> None:
    vendor.fake.script(
        Reply.tool_calls([("get_weather", {"city": "Oslo"})], text="Let me check.", usage=(30, 9))
    )
    assert await exchange(vendor, [WEATHER]) == [
        *text("Let ", "me ", "check."),
        ChatResponse(RID, [call(1, "Oslo")], Usage(30, 9), "tool_calls"),
    ]


async def test_two_parallel_tool_calls(vendor: Vendor) -> None:
    vendor.fake.script(
        Reply.tool_calls(
            [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})], usage=(30, 9)
        )
    )
    assert await exchange(vendor, [WEATHER]) == [
        ChatResponse(RID, [call(1, "Oslo"), call(2, "Rome")], Usage(30, 9), "tool_calls"),
    ]


async def test_arguments_cut_into_many_fragments(vendor: Vendor) -> None:
    """Each argument string in 15 pieces (where the vendor streams them), sent 3 bytes at a time."""
    vendor.fake.trickle = 3
    vendor.fake.script(
        Reply.tool_calls(
            [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})],
            fragments=15,
            usage=(30, 9),
        )
    )
    assert await exchange(vendor, [WEATHER]) == [
        ChatResponse(RID, [call(1, "Oslo"), call(2, "Rome")], Usage(30, 9), "tool_calls"),
    ]


@pytest.mark.parametrize("call_ids", ["unique", "reused", "repeated", "missing"])
async def test_every_call_gets_an_id_of_its_own_and_goes_back_paired(
    vendor: Vendor, call_ids: CallIds
) -> None:
    """However the server names its calls (anew, `call_1` in every answer, one id for all,
    none), each call comes out under an id of ours, and the requests after it pair every
    call with its result in terms the server accepts (the fakes refuse any that do not)."""
    vendor.fake.call_ids = call_ids
    both = [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})]
    vendor.fake.script(Reply.tool_calls(both), Reply.tool_calls(both), Reply.text("Mild."))
    messages = list(USER)
    ours: list[str] = []
    for _ in range(2):
        events, error = await run(vendor.model, messages, [WEATHER])
        assert error is None
        calls = [b for c in responses(events) for b in c.content if isinstance(b, ToolUseBlock)]
        ours += [call.id for call in calls]
        results: list[ContentBlock] = [ToolResultBlock(c.id, c.name, "mild") for c in calls]
        messages += [Msg("assistant", list(calls)), Msg("tool", results)]
    events, error = await run(vendor.model, messages, [WEATHER])

    assert error is None
    assert [b for c in responses(events) for b in c.content] == [TextBlock("Mild.")]
    assert len(set(ours)) == 4
    assert all(call_id.startswith("call_") for call_id in ours)


async def test_usage_the_provider_reports_is_passed_on_unchanged(vendor: Vendor) -> None:
    vendor.fake.script(Reply.text("Hi.", usage=(1234, 56)))
    (*_, last) = await exchange(vendor)
    assert last.usage == Usage(1234, 56, estimated=False)


# Anthropic is left out: its stream always reports usage (message_start carries it).
@pytest.mark.parametrize(
    "vendor", [name for name in sorted(FAKE_PROVIDERS) if name != "anthropic"], indirect=True
)
async def test_usage_the_provider_does_not_report_is_counted(
    vendor: Vendor, offline_tokens: None
) -> None:
    vendor.fake.script(Reply.text("Sunny and mild.", usage=False))
    (*_, last) = await exchange(vendor)
    counter = TokenCounter()
    assert last.usage == Usage(
        counter.count_messages(USER), counter.count("Sunny and mild."), estimated=True
    )


async def test_options_reach_the_provider_in_its_own_terms(vendor: Vendor) -> None:
    options = GenerateOptions(temperature=0.2, max_tokens=100, top_p=0.9, tool_choice="get_weather")
    await exchange(vendor, [WEATHER], options)
    (request,) = vendor.fake.requests
    assert vendor.fake.encoder(request, RID).sent_options() == {
        "temperature": 0.2,
        "max_tokens": 100,
        "top_p": 0.9,
        "tool_choice": "get_weather",
    }


async def test_rate_limited_with_retry_after_then_answers(vendor: Vendor) -> None:
    vendor.fake.script(Reply.error(429, retry_after=0.02), Reply.text("ok", usage=(5, 1)))
    events, error = await run(vendor.model, USER)
    assert error is None
    # The vendor's own wait (0.02 s) is honoured, not the backoff (capped at MAX_DELAY).
    assert events[0] == Retrying(attempt=1, delay=0.02, reason="LLM_RATE_LIMITED")
    second = "fake-response-2"
    assert visible(responses(events[1:])) == [
        ChatResponse(second, [TextBlock("ok")]),
        ChatResponse(second, [], Usage(5, 1), "stop"),
    ]
    assert len(vendor.fake.requests) == 2


async def test_a_server_error_forever_gives_up_after_the_retries(vendor: Vendor) -> None:
    vendor.fake.script(*(Reply.error(500) for _ in range(3)))
    events, error = await run(vendor.model, USER)
    assert isinstance(error, ModelHTTPError)
    assert (error.status, error.code) == (500, "LLM_UNAVAILABLE")
    assert "fake upstream error 500" in error.detail
    assert [e.attempt for e in events if isinstance(e, Retrying)] == [1, 2]
    assert len(events) == 2
    assert len(vendor.fake.requests) == 3


async def test_an_error_inside_the_stream_before_any_content_is_retried(vendor: Vendor) -> None:
    vendor.fake.script(Reply.stream_error(429), Reply.text("ok"))
    events, error = await run(vendor.model, USER)
    assert error is None
    assert isinstance(events[0], Retrying)
    assert events[0].reason == "LLM_RATE_LIMITED"
    assert [b for c in responses(events[1:]) for b in c.content] == [TextBlock("ok")]


async def test_a_stream_cut_midway_fails_without_retry(vendor: Vendor) -> None:
    vendor.fake.script(Reply.cut(after_chunks=2))
    events, error = await run(vendor.model, USER)
    assert isinstance(error, ModelConnectionError)
    assert responses(events) == text("part0 ", "part1 ")
    assert len(vendor.fake.requests) == 1


async def test_a_stream_cut_before_any_chunk_is_retried(vendor: Vendor) -> None:
    vendor.fake.script(Reply.cut(after_chunks=0), Reply.text("second try"))
    events, error = await run(vendor.model, USER)
    assert error is None
    assert isinstance(events[0], Retrying)
    assert [b for c in responses(events[1:]) for b in c.content] == [
        TextBlock("second "),
        TextBlock("try"),
    ]


async def test_a_malformed_chunk_is_a_response_error(vendor: Vendor) -> None:
    vendor.fake.script(Reply.malformed())
    events, error = await run(vendor.model, USER)
    assert isinstance(error, ModelResponseError)
    assert "malformed chunk" in error.detail
    assert events == []
    assert len(vendor.fake.requests) == 1


async def test_a_silent_upstream_times_out(vendor: Vendor) -> None:
    vendor.fake.script(Reply.hang(), Reply.hang(), Reply.hang())
    _, error = await run(vendor.model, USER, options=GenerateOptions(timeout=0.2))
    assert isinstance(error, ModelTimeout)
    assert len(vendor.fake.requests) == 3
    await asyncio.wait_for(vendor.fake.disconnected.wait(), DISCONNECT_WAIT)


async def test_abandoning_a_stream_closes_its_connection(vendor: Vendor) -> None:
    vendor.fake.script(Reply.hang(first_text="Thinking about it"))
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in vendor.model.stream(USER):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), DISCONNECT_WAIT)
    assert not vendor.fake.disconnected.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(vendor.fake.disconnected.wait(), DISCONNECT_WAIT)


async def test_the_key_stays_in_its_header_and_out_of_errors_and_logs(
    vendor: Vendor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    vendor.fake.script(
        Reply.text("fine"),
        Reply.error(401, message=f"Incorrect API key provided: {KEY}."),
        Reply.stream_error(400, message=f"key {KEY} was revoked"),
    )
    outcomes = [await run(vendor.model, USER) for _ in range(3)]
    errors = [error for _, error in outcomes]
    assert errors[0] is None
    for error in errors[1:]:
        assert isinstance(error, ModelHTTPError)
        assert "[redacted]" in error.detail
        for shown in (str(error), repr(error), error.detail, *map(str, error.args)):
            assert KEY not in shown
    assert errors[1] is not None
    assert errors[1].code == "LLM_AUTH_FAILED"
    assert KEY not in "".join(repr(events) for events, _ in outcomes)
    assert caplog.records, "the model layer and httpx log at debug level"
    assert not [r for r in caplog.records if KEY in r.getMessage()]
    for target, headers in zip(vendor.fake.targets, vendor.fake.headers, strict=True):
        assert KEY not in target
        assert any(KEY in value for value in headers.values())
