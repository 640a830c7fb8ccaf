"""The real `AnthropicChatModel` on crafted Messages streams, and its request formatter.

What the conformance suite cannot show because it is Anthropic's alone:
signatures travelling with thinking, an `overloaded_error` event retried,
cached prompt tokens, server-tool blocks and unknown events skipped, and
the request rules (signed thinking only, budgets, forced tool choice).
"""

from __future__ import annotations

from collections.abc import Sequence
from unittest.mock import ANY

import httpx2
import pytest

from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from app.core.responses import ChatResponse, Retrying, Usage, accumulate
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.anthropic import AnthropicChatModel
from app.llm.anthropic_format import AnthropicChatFormatter
from app.llm.base import RetryPolicy
from app.llm.errors import ModelHTTPError
from tests.fakes.anthropic_server import AnthropicEncoder, delta, frame
from tests.fakes.mock_transport import mock_model, run, streamed
from tests.fakes.scripted_server import Body

USER = [Msg.text("user", "hi")]
BASE = "https://api.anthropic.test/v1"
FAST = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01)


def start(usage: Body | None = None) -> bytes:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    return frame({"type": "message_start", "message": {**message, "usage": usage or {}}})


def block(index: int, content: Body) -> bytes:
    return frame({"type": "content_block_start", "index": index, "content_block": content})


def stop(index: int) -> bytes:
    return frame({"type": "content_block_stop", "index": index})


def end(reason: str = "end_turn", output_tokens: int = 5) -> bytes:
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }
    return frame(message_delta) + frame({"type": "message_stop"})


async def read(body: bytes, messages: Sequence[Msg] = USER) -> list[ChatResponse]:
    async with mock_model(streamed(200, [body]), AnthropicChatModel, base_url=BASE) as model:
        events, error = await run(model, messages)
    assert error is None
    return [e for e in events if isinstance(e, ChatResponse)]


async def test_thinking_keeps_its_signature_for_the_next_request() -> None:
    body = b"".join(
        [
            start({"input_tokens": 10, "output_tokens": 1}),
            block(0, {"type": "thinking", "thinking": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
            delta(0, {"type": "thinking_delta", "thinking": "think."}),
            delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAh"}),
            stop(0),
            block(1, {"type": "text", "text": ""}),
            frame({"type": "ping"}),
            delta(1, {"type": "text_delta", "text": "Done."}),
            stop(1),
            end(),
        ]
    )
    chunks = await read(body)
    assert chunks[2].content == [ThinkingBlock("", signature="EqQBCgIYAh")]
    whole = accumulate(chunks)
    assert whole.content == [ThinkingBlock("Let me think.", "EqQBCgIYAh"), TextBlock("Done.")]
    assert (whole.id, whole.usage, whole.finish_reason) == ("msg_1", Usage(10, 5), "stop")

    request = AnthropicChatFormatter().format(
        "claude", [*USER, Msg("assistant", whole.content)], [], {}
    )
    assert request["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAh"},
        {"type": "text", "text": "Done."},
    ]


async def test_an_overloaded_event_before_any_content_is_retried() -> None:
    overloaded = start() + frame(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    fine = start() + block(0, {"type": "text", "text": ""})
    fine += delta(0, {"type": "text_delta", "text": "ok"}) + stop(0) + end()
    bodies = [overloaded, fine]

    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=bodies.pop(0))

    async with mock_model(handle, AnthropicChatModel, base_url=BASE, retry=FAST) as model:
        events, error = await run(model, USER)
    assert error is None
    assert isinstance(events[0], Retrying)
    assert events[0].reason == "LLM_UNAVAILABLE"
    assert accumulate([e for e in events if isinstance(e, ChatResponse)]).content == [
        TextBlock("ok")
    ]


async def test_an_overloaded_status_is_retried() -> None:
    overloaded = AnthropicEncoder.error_body(529, "Overloaded")
    fine = start() + end()
    answers = [httpx2.Response(529, content=overloaded), httpx2.Response(200, content=fine)]

    def handle(request: httpx2.Request) -> httpx2.Response:
        return answers.pop(0)

    async with mock_model(handle, AnthropicChatModel, base_url=BASE, retry=FAST) as model:
        events, error = await run(model, USER)
    assert error is None
    assert isinstance(events[0], Retrying)
    assert events[0].reason == "LLM_UNAVAILABLE"


async def test_an_error_event_after_content_fails_the_call() -> None:
    body = start() + block(0, {"type": "text", "text": ""})
    body += delta(0, {"type": "text_delta", "text": "par"})
    body += frame({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    async with mock_model(streamed(200, [body]), AnthropicChatModel, base_url=BASE) as model:
        events, error = await run(model, USER)
    assert isinstance(error, ModelHTTPError)
    assert (error.status, error.detail) == (529, "upstream error: Overloaded")
    assert len(events) == 1


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("something_new", "stop"),
    ],
)
async def test_stop_reasons_map_to_ours(reason: str, expected: str) -> None:
    (chunk,) = await read(start() + end(reason))
    assert chunk.finish_reason == expected


async def test_cached_prompt_tokens_count_as_prompt() -> None:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
        "output_tokens": 1,
    }
    (chunk,) = await read(start(usage) + end(output_tokens=42))
    assert chunk.usage == Usage(1103, 42)


async def test_server_tool_blocks_and_unknown_events_are_skipped() -> None:
    body = b"".join(
        [
            start(),
            block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
            delta(0, {"type": "input_json_delta", "partial_json": '{"query": "x"}'}),
            stop(0),
            frame({"type": "brand_new_event", "detail": 1}),
            block(1, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
            delta(1, {"type": "input_json_delta", "partial_json": ""}),
            delta(1, {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'}),
            delta(1, {"type": "citations_delta", "citation": {}}),
            stop(1),
            end("tool_use"),
        ]
    )
    (chunk,) = await read(body)
    assert chunk.content == [
        ToolUseBlock(
            ANY, "get_weather", {"city": "Oslo"}, '{"city": "Oslo"}', provider_id="toolu_1"
        )
    ]
    assert chunk.finish_reason == "tool_calls"


async def test_the_request_goes_to_messages_with_the_key_in_its_header() -> None:
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=start() + end())

    async with mock_model(handle, AnthropicChatModel, base_url=BASE, api_key="sk-ant-1") as model:
        await run(model, USER)
    (request,) = seen
    assert str(request.url) == f"{BASE}/messages"
    assert request.headers["x-api-key"] == "sk-ant-1"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers


WEATHER = ToolSchema("get_weather", "Weather.", {"type": "object", "properties": {}})


def test_formatter_puts_system_apart_and_joins_tool_results_with_the_next_user_turn() -> None:
    call = ToolUseBlock("toolu_1", "get_weather", {"city": "Oslo"})
    messages = [
        Msg.text("system", "Be brief."),
        Msg.text("user", "Weather?"),
        Msg("assistant", [ThinkingBlock("unsigned, from <think> tags"), TextBlock(""), call]),
        Msg("tool", [ToolResultBlock("toolu_1", "get_weather", "no such city", is_error=True)]),
        Msg.text("user", "Answer now."),
    ]
    body = AnthropicChatFormatter().format("claude", messages, [WEATHER], {})
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 4096
    assert body["stream"] is True
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "no such city",
                    "is_error": True,
                },
                {"type": "text", "text": "Answer now."},
            ],
        },
    ]
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather.", "input_schema": WEATHER.parameters}
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
def test_formatter_maps_tool_choice(choice: str, wire: Body) -> None:
    body = AnthropicChatFormatter().format(
        "c", USER, [WEATHER], GenerateOptions(tool_choice=choice)
    )
    assert body["tool_choice"] == wire


def test_a_thinking_budget_adds_to_max_tokens_and_drops_what_thinking_refuses() -> None:
    options = GenerateOptions(
        max_tokens=300, temperature=0.2, top_p=0.5, tool_choice="get_weather", thinking_budget=2048
    )
    body = AnthropicChatFormatter().format("c", USER, [WEATHER], options)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 2348
    assert "temperature" not in body
    assert "top_p" not in body
    assert body["tool_choice"] == {"type": "auto"}
