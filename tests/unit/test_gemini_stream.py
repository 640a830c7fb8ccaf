"""The real `GeminiChatModel` on crafted `streamGenerateContent` streams, and its formatter.

Gemini's own concerns: safety blocks as a clear error (before or during an
answer), thought token counts, thought signatures on function calls and
their return trip, `RetryInfo` in an error body, and the request's shape.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx2
import orjson
import pytest

from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from app.core.responses import ChatResponse, Usage, accumulate
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.errors import ModelContentBlocked, ModelError, ModelHTTPError, ModelResponseError
from app.llm.gemini import GeminiChatModel
from app.llm.gemini_format import GeminiChatFormatter
from tests.fakes.gemini_server import error, frame
from tests.fakes.mock_transport import mock_model, run, streamed
from tests.fakes.scripted_server import Body

USER = [Msg.text("user", "hi")]
BASE = "https://gemini.test/v1beta"


def response(parts: list[Body], finish: str | None = None, **extra: object) -> bytes:
    candidate: Body = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return frame({"candidates": [candidate], "responseId": "r-1", **extra})


async def outcome(
    body: bytes, messages: Sequence[Msg] = USER
) -> tuple[list[ChatResponse], ModelError | None]:
    async with mock_model(streamed(200, [body]), GeminiChatModel, base_url=BASE) as model:
        events, failure = await run(model, messages)
    return [e for e in events if isinstance(e, ChatResponse)], failure


async def test_thoughts_stream_as_thinking_and_count_as_completion() -> None:
    usage = {"promptTokenCount": 7, "candidatesTokenCount": 3, "thoughtsTokenCount": 20}
    body = response([{"text": "Considering.", "thought": True}]) + response(
        [{"text": "Hello."}], "STOP", usageMetadata=usage
    )
    chunks, failure = await outcome(body)
    assert failure is None
    assert [c.content for c in chunks] == [
        [ThinkingBlock("Considering.")],
        [TextBlock("Hello.")],
        [],
    ]
    assert (chunks[-1].id, chunks[-1].usage, chunks[-1].finish_reason) == (
        "r-1",
        Usage(7, 23),
        "stop",
    )


async def test_a_blocked_prompt_is_a_clear_error() -> None:
    body = frame({"promptFeedback": {"blockReason": "SAFETY"}, "responseId": "r-1"})
    chunks, failure = await outcome(body)
    assert isinstance(failure, ModelContentBlocked)
    assert failure.code == "LLM_CONTENT_BLOCKED"
    assert failure.detail == "prompt blocked: SAFETY"
    assert chunks == []


async def test_an_answer_blocked_midway_keeps_what_came_and_fails() -> None:
    body = response([{"text": "Here is how"}]) + response([], "SAFETY")
    chunks, failure = await outcome(body)
    assert isinstance(failure, ModelContentBlocked)
    assert failure.detail == "answer blocked: SAFETY"
    assert [c.content for c in chunks] == [[TextBlock("Here is how")]]


async def test_a_malformed_function_call_is_a_response_error() -> None:
    _, failure = await outcome(response([], "MALFORMED_FUNCTION_CALL"))
    assert type(failure) is ModelResponseError


async def test_max_tokens_is_length() -> None:
    chunks, _ = await outcome(response([{"text": "cut"}], "MAX_TOKENS"))
    assert chunks[-1].finish_reason == "length"


async def test_function_calls_keep_their_signature_for_the_return_trip() -> None:
    call = {
        "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
        "thoughtSignature": "c2ln",
    }
    chunks, failure = await outcome(response([call], "STOP"))
    assert failure is None
    (tool,) = chunks[-1].content
    assert isinstance(tool, ToolUseBlock)
    assert (tool.name, tool.input, tool.signature) == ("get_weather", {"city": "Oslo"}, "c2ln")
    assert tool.id.startswith("call_"), "Gemini may leave the id out; we need one"
    assert chunks[-1].finish_reason == "tool_calls"

    result = Msg("tool", [ToolResultBlock(tool.id, "get_weather", "-3°C")])
    history = [*USER, Msg("assistant", accumulate(chunks).content), result]
    body = GeminiChatFormatter().format("g", history, [], {})
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "id": tool.id,
                        "name": "get_weather",
                        "args": {"city": "Oslo"},
                    },
                    "thoughtSignature": "c2ln",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": tool.id,
                        "name": "get_weather",
                        "response": {"output": "-3°C"},
                    }
                }
            ],
        },
    ]


async def test_an_error_event_is_classed_by_its_code() -> None:
    _, failure = await outcome(frame(error(503, "The model is overloaded.")))
    assert isinstance(failure, ModelHTTPError)
    assert (failure.status, failure.detail) == (503, "upstream error: The model is overloaded.")


async def test_retry_info_in_the_error_body_is_the_wait() -> None:
    retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"}
    body = orjson.dumps([error(429, "Quota exceeded.", [{"@type": "x.QuotaFailure"}, retry])])
    async with mock_model(streamed(429, [body]), GeminiChatModel, base_url=BASE) as model:
        _, failure = await run(model, USER)
    assert isinstance(failure, ModelHTTPError)
    assert (failure.retry_after, failure.detail) == (36.0, "HTTP 429: Quota exceeded.")


async def test_the_key_goes_in_a_header_never_in_the_url() -> None:
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=response([{"text": "x"}], "STOP"))

    async with mock_model(
        handle, GeminiChatModel, base_url=BASE, api_key="AIza-1", model="models/gemini-x"
    ) as model:
        await run(model, USER)
    (request,) = seen
    assert str(request.url) == f"{BASE}/models/gemini-x:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == "AIza-1"
    assert "AIza-1" not in str(request.url)


WEATHER = ToolSchema(
    "get_weather", "Weather.", {"type": "object", "properties": {}, "additionalProperties": False}
)


def test_formatter_builds_contents_system_instruction_and_config() -> None:
    messages = [
        Msg.text("system", "Be brief."),
        Msg.text("user", "Weather?"),
        Msg("assistant", [ThinkingBlock("not sent back"), TextBlock("Checking.")]),
        Msg("tool", [ToolResultBlock("c1", "get_weather", "boom", is_error=True)]),
        Msg.text("user", "Go on."),
    ]
    options = GenerateOptions(
        temperature=0.3, top_p=0.9, max_tokens=200, thinking_budget=1024, tool_choice="required"
    )
    body = GeminiChatFormatter().format("g", messages, [WEATHER], options)
    assert body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}]},
            {"role": "model", "parts": [{"text": "Checking."}]},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c1",
                            "name": "get_weather",
                            "response": {"error": "boom"},
                        }
                    },
                    {"text": "Go on."},
                ],
            },
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {
            "temperature": 0.3,
            "topP": 0.9,
            "maxOutputTokens": 200,
            "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True},
        },
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather.",
                        "parametersJsonSchema": WEATHER.parameters,
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("get_weather", {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ],
)
def test_formatter_maps_tool_choice(choice: str, wire: Body) -> None:
    body = GeminiChatFormatter().format("g", USER, [WEATHER], GenerateOptions(tool_choice=choice))
    assert body["toolConfig"] == {"functionCallingConfig": wire}


def test_formatter_sends_no_config_when_nothing_is_set() -> None:
    assert GeminiChatFormatter().format("g", USER, [], {}) == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}]
    }
