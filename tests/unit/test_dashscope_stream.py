"""The real `DashScopeChatModel` on crafted native streams, and its request formatter.

DashScope's own concerns: "null" as a finish reason, error codes classed
(rate limits retried, content inspection a clear refusal, in the stream or
as a status, whose body may itself be an event stream), and the envelope
around OpenAI-style messages.
"""

from __future__ import annotations

from unittest.mock import ANY

import httpx2
import pytest

from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolUseBlock
from app.core.responses import ChatResponse, Usage
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import RetryPolicy
from app.llm.dashscope import DashScopeChatModel
from app.llm.dashscope_format import DashScopeChatFormatter
from app.llm.errors import ModelContentBlocked, ModelError, ModelHTTPError
from tests.fakes.dashscope_server import error, frame
from tests.fakes.mock_transport import mock_model, run, streamed
from tests.fakes.scripted_server import Body

USER = [Msg.text("user", "hi")]
BASE = "https://dashscope.test/api/v1"


def event(n: int, message: Body, finish: str = "null", usage: Body | None = None) -> bytes:
    payload: Body = {
        "output": {"choices": [{"message": message, "finish_reason": finish}]},
        "request_id": "req-1",
    }
    if usage:
        payload["usage"] = usage
    return frame(n, payload)


async def outcome(*parts: bytes, status: int = 200) -> tuple[list[ChatResponse], ModelError | None]:
    async with mock_model(streamed(status, parts), DashScopeChatModel, base_url=BASE) as model:
        events, failure = await run(model, USER)
    return [e for e in events if isinstance(e, ChatResponse)], failure


async def test_incremental_reasoning_text_and_the_last_usage() -> None:
    chunks, failure = await outcome(
        event(1, {"content": "", "reasoning_content": "Hmm."}, usage={"input_tokens": 9}),
        event(2, {"content": "Hi", "reasoning_content": ""}),
        event(3, {"content": ""}, "stop", {"input_tokens": 9, "output_tokens": 4}),
    )
    assert failure is None
    assert [c.content for c in chunks] == [[ThinkingBlock("Hmm.")], [TextBlock("Hi")], []]
    assert (chunks[-1].id, chunks[-1].usage, chunks[-1].finish_reason) == (
        "req-1",
        Usage(9, 4),
        "stop",
    )


async def test_tool_call_fragments_with_repeated_empty_ids_are_one_call() -> None:
    first = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a":'},
    }
    rest = {"index": 0, "id": "", "type": "function", "function": {"arguments": " 1}"}}
    chunks, failure = await outcome(
        event(1, {"content": "", "tool_calls": [first]}),
        event(2, {"content": "", "tool_calls": [rest]}),
        event(3, {"content": ""}, "tool_calls"),
    )
    assert failure is None
    assert chunks[-1].content == [
        ToolUseBlock(ANY, "f", {"a": 1}, '{"a": 1}', provider_id="call_1")
    ]


async def test_a_stream_without_a_finish_reason_was_cut() -> None:
    _, failure = await outcome(event(1, {"content": "par"}))
    assert failure is not None
    assert failure.code == "LLM_UNAVAILABLE"


@pytest.mark.parametrize(
    ("code", "status"),
    [("Throttling.RateQuota", 429), ("InternalError.Algo", 500), ("InvalidParameter", 400)],
)
async def test_error_events_are_classed_by_code(code: str, status: int) -> None:
    body = frame(
        1, {"code": code, "message": "no", "request_id": "r"}, event="error", status=status
    )
    _, failure = await outcome(body)
    assert isinstance(failure, ModelHTTPError)
    assert (failure.status, failure.detail) == (status, f"upstream error: {code}: no")


async def test_content_inspection_is_a_clear_refusal_in_the_stream_and_as_a_status() -> None:
    refusal = {
        "code": "DataInspectionFailed",
        "message": "Input data may contain inappropriate content.",
    }
    _, in_stream = await outcome(frame(1, refusal, event="error", status=400))
    # With SSE on, an error status may come with its body as an event stream too.
    _, as_status = await outcome(frame(1, refusal, event="error", status=400), status=400)
    for failure in (in_stream, as_status):
        assert isinstance(failure, ModelContentBlocked)
        assert "Input data may contain inappropriate content." in failure.detail
    assert as_status is not None
    assert as_status.detail.startswith("HTTP 400: DataInspectionFailed: ")


async def test_a_rate_limit_status_is_retried() -> None:
    answers = [
        httpx2.Response(429, content=frame(1, error(429, "slow down"), event="error", status=429)),
        httpx2.Response(200, content=event(1, {"content": "ok"}, "stop")),
    ]

    def handle(request: httpx2.Request) -> httpx2.Response:
        return answers.pop(0)

    retry = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.001)
    async with mock_model(handle, DashScopeChatModel, base_url=BASE, retry=retry) as model:
        events, failure = await run(model, USER)
    assert failure is None
    assert [type(e).__name__ for e in events] == ["Retrying", "ChatResponse", "ChatResponse"]


async def test_the_request_asks_for_an_incremental_stream_with_a_bearer_key() -> None:
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=event(1, {"content": "x"}, "stop"))

    async with mock_model(handle, DashScopeChatModel, base_url=BASE, api_key="sk-ds") as model:
        await run(model, USER)
    (request,) = seen
    assert str(request.url) == f"{BASE}/services/aigc/text-generation/generation"
    assert request.headers["authorization"] == "Bearer sk-ds"
    assert request.headers["x-dashscope-sse"] == "enable"


WEATHER = ToolSchema("get_weather", "Weather.", {"type": "object", "properties": {}})


def test_formatter_wraps_openai_messages_in_the_native_envelope() -> None:
    call = ToolUseBlock("call_1", "get_weather", {}, "{}")
    messages = [Msg.text("system", "Be brief."), *USER, Msg("assistant", [call])]
    options = GenerateOptions(temperature=0.5, max_tokens=64, top_p=0.8, thinking_budget=500)
    body = DashScopeChatFormatter().format("qwen-plus", messages, [WEATHER], options)
    assert body == {
        "model": "qwen-plus",
        "input": {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        }
                    ],
                },
            ]
        },
        "parameters": {
            "result_format": "message",
            "incremental_output": True,
            "temperature": 0.5,
            "max_tokens": 64,
            "top_p": 0.8,
            "enable_thinking": True,
            "thinking_budget": 500,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "description": "Weather.",
                        "parameters": WEATHER.parameters,
                    },
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("choice", "tools", "wire"),
    [
        ("auto", [WEATHER], "auto"),
        ("none", [WEATHER], "none"),
        ("required", [WEATHER], {"type": "function", "function": {"name": "get_weather"}}),
        ("required", [WEATHER, ToolSchema("other", "Other.")], "auto"),
        ("other", [WEATHER], {"type": "function", "function": {"name": "other"}}),
    ],
)
def test_formatter_maps_tool_choice(choice: str, tools: list[ToolSchema], wire: object) -> None:
    body = DashScopeChatFormatter().format("q", USER, tools, GenerateOptions(tool_choice=choice))
    assert body["parameters"]["tool_choice"] == wire


def test_a_zero_thinking_budget_turns_thinking_off() -> None:
    body = DashScopeChatFormatter().format("q", USER, [], GenerateOptions(thinking_budget=0))
    assert body["parameters"]["enable_thinking"] is False
    assert "thinking_budget" not in body["parameters"]
