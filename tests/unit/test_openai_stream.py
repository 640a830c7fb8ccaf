"""The real `OpenAIChatModel` reading crafted streams through httpx2's MockTransport.

No sockets: each test hands the model the exact bytes an OpenAI-compatible
server could send, cut at awkward places (inside a JSON string, between
`data:` and its payload, inside a multi-byte character), and checks the
chunks that come out, or the `ModelError` the stream is translated into.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from unittest.mock import ANY

import httpx2
import pytest

from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from app.core.responses import ChatResponse, Usage, accumulate
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import ChatModel
from app.llm.errors import (
    ModelConnectionError,
    ModelError,
    ModelNotConfigured,
    ModelResponseError,
    ModelTimeout,
)
from app.llm.openai_format import OpenAIChatFormatter
from tests.fakes.mock_transport import mock_model, streamed
from tests.fakes.openai_wire import delta_chunk, sse, usage_chunk
from tests.fakes.scripted_server import Body

USER = [Msg.text("user", "hi")]
FIRST = delta_chunk({"role": "assistant", "content": "", "refusal": None})
STOP = delta_chunk({}, "stop")


def every_cut(body: bytes) -> list[list[bytes]]:
    """The body cut once at every offset, and fed one byte at a time."""
    return [[body[:i], body[i:]] for i in range(len(body) + 1)] + [
        [body[i : i + 1] for i in range(len(body))]
    ]


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


async def collect(model: ChatModel, **kwargs: Any) -> list[ChatResponse]:
    out: list[ChatResponse] = []
    async for event in model.stream(kwargs.pop("messages", USER), **kwargs):
        assert isinstance(event, ChatResponse)
        out.append(event)
    return out


async def read(parts: Sequence[bytes]) -> list[ChatResponse]:
    async with mock_model(streamed(200, parts)) as model:
        return await collect(model)


def call_fragment(index: int, call_id: str | None = None, name: str | None = None) -> Body:
    fragment: Body = {"index": index, "function": {"arguments": ""}}
    if call_id is not None:
        fragment.update(id=call_id, type="function")
        fragment["function"]["name"] = name
    return fragment


def args_fragment(index: int, arguments: str) -> Body:
    return delta_chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})


def calls_chunk(*fragments: Body) -> Body:
    return delta_chunk({"tool_calls": list(fragments)})


async def test_text_deltas_survive_every_cut() -> None:
    body = sse(
        FIRST,
        delta_chunk({"content": "Hel"}),
        delta_chunk({"content": "lo wörld"}),
        STOP,
        usage_chunk(5, 2),
        "[DONE]",
    )
    for parts in every_cut(body):
        chunks = await read(parts)
        whole = accumulate(chunks)
        assert whole.content == [TextBlock("Hello wörld")], parts
        assert whole.usage == Usage(5, 2)
        assert whole.finish_reason == "stop"
        assert whole.id == "chatcmpl-test"
    # The last chunk carries usage and finish reason, the deltas stream before it.
    assert [c.content for c in chunks] == [[TextBlock("Hel")], [TextBlock("lo wörld")], []]
    assert (chunks[-1].usage, chunks[-1].finish_reason) == (Usage(5, 2), "stop")


async def test_one_tool_call_in_fragments_is_emitted_once_complete() -> None:
    body = sse(
        FIRST,
        calls_chunk(call_fragment(0, "call_1", "get_weather")),
        args_fragment(0, '{"ci'),
        args_fragment(0, 'ty": "Par'),
        args_fragment(0, 'is"}'),
        delta_chunk({}, "tool_calls"),
        usage_chunk(9, 4),
        "[DONE]",
    )
    for size in (1, 3, 7, 64):
        chunks = await read(pieces(body, size))
        assert chunks == [
            ChatResponse(
                id="chatcmpl-test",
                content=[
                    ToolUseBlock(
                        ANY,
                        "get_weather",
                        {"city": "Paris"},
                        '{"city": "Paris"}',
                        provider_id="call_1",
                    )
                ],
                usage=Usage(9, 4),
                finish_reason="tool_calls",
            )
        ]


async def test_parallel_interleaved_calls_come_out_in_index_order() -> None:
    body = sse(
        FIRST,
        delta_chunk({"content": "Checking both."}),
        calls_chunk(call_fragment(1, "call_b", "search")),
        calls_chunk(call_fragment(0, "call_a", "get_weather")),
        args_fragment(1, '{"q": "py'),
        args_fragment(0, '{"city":'),
        args_fragment(1, 'thon"}'),
        args_fragment(0, ' "Oslo"}'),
        delta_chunk({}, "tool_calls"),
        "[DONE]",
    )
    for parts in every_cut(body)[::13]:
        whole = accumulate(await read(parts))
        assert whole.content == [
            TextBlock("Checking both."),
            ToolUseBlock(
                ANY, "get_weather", {"city": "Oslo"}, '{"city": "Oslo"}', provider_id="call_a"
            ),
            ToolUseBlock(ANY, "search", {"q": "python"}, '{"q": "python"}', provider_id="call_b"),
        ]
        assert whole.finish_reason == "tool_calls"


@pytest.mark.parametrize("arguments", ['{"city": "Par', "[1, 2]", "not json"])
async def test_arguments_that_are_not_an_object_give_empty_input_and_keep_raw(
    arguments: str,
) -> None:
    body = sse(
        calls_chunk(call_fragment(0, "call_1", "f")),
        args_fragment(0, arguments),
        delta_chunk({}, "tool_calls"),
        "[DONE]",
    )
    (chunk,) = await read([body])
    assert chunk.content == [ToolUseBlock(ANY, "f", {}, arguments, provider_id="call_1")]


async def test_calls_without_index_or_id_are_still_assembled() -> None:
    # Seen from compatibility layers: no `index`, a new call starts with an id; no id at all.
    no_index = {"id": "call_x", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    body = sse(
        calls_chunk(no_index),
        calls_chunk({**no_index, "id": "call_y", "function": {"name": "b", "arguments": ""}}),
        calls_chunk({"function": {"arguments": '{"k": 1}'}}),
        delta_chunk({}, "stop"),
        "[DONE]",
    )
    (chunk,) = await read([body])
    assert chunk.content == [
        ToolUseBlock(ANY, "a", {}, "{}", provider_id="call_x"),
        ToolUseBlock(ANY, "b", {"k": 1}, '{"k": 1}', provider_id="call_y"),
    ]
    # `stop` after tool calls (vLLM, Ollama) still tells the agent to run them.
    assert chunk.finish_reason == "tool_calls"

    body = sse(calls_chunk(call_fragment(0)), delta_chunk({}, "tool_calls"), "[DONE]")
    (chunk,) = await read([body])
    (call,) = chunk.content
    assert isinstance(call, ToolUseBlock)
    assert call.id.startswith("call_")
    assert call.provider_id is None
    assert call.input == {}


async def test_reasoning_fields_become_thinking() -> None:
    body = sse(
        delta_chunk({"role": "assistant", "reasoning_content": "DeepSeek "}),
        delta_chunk({"reasoning": "vLLM"}),
        delta_chunk({"reasoning_content": None, "content": "answer"}),
        STOP,
        "[DONE]",
    )
    chunks = await read(pieces(body, 5))
    assert [c.content for c in chunks[:-1]] == [
        [ThinkingBlock("DeepSeek ")],
        [ThinkingBlock("vLLM")],
        [TextBlock("answer")],
    ]


async def test_think_tags_in_content_are_split_out() -> None:
    body = sse(
        delta_chunk({"content": "<thi"}),
        delta_chunk({"content": "nk>plan</th"}),
        delta_chunk({"content": "ink>answer <"}),
        STOP,
        "[DONE]",
    )
    whole = accumulate(await read([body]))
    assert whole.content == [ThinkingBlock("plan"), TextBlock("answer <")]


@pytest.mark.parametrize(
    ("reason", "expected"),
    [("length", "length"), ("content_filter", "content_filter"), ("eos", "stop")],
)
async def test_finish_reasons_map_to_ours(reason: str, expected: str) -> None:
    chunks = await read([sse(delta_chunk({"content": "x"}, reason), "[DONE]")])
    assert chunks[-1].finish_reason == expected


async def test_nothing_after_done_is_read_as_events() -> None:
    chunks = await read([sse(delta_chunk({"content": "x"}), STOP, "[DONE]", "{broken")])
    assert accumulate(chunks).content == [TextBlock("x")]


async def test_finish_reason_without_done_is_a_complete_answer() -> None:
    chunks = await read([sse(delta_chunk({"content": "x"}), STOP)])
    assert accumulate(chunks).finish_reason == "stop"


@pytest.mark.parametrize(
    ("body", "error", "detail"),
    [
        (sse(FIRST, "{not json"), ModelResponseError, "malformed chunk"),
        (sse(FIRST, "42"), ModelResponseError, "unexpected chunk"),
        (sse({"choices": "oops"}), ModelResponseError, "unexpected chunk"),
        (
            sse(FIRST, {"error": {"message": "overloaded", "type": "server_error"}}),
            ModelResponseError,
            "upstream error: overloaded",
        ),
        (sse(FIRST, delta_chunk({"content": "half"})), ModelConnectionError, "ended early"),
        (b"", ModelConnectionError, "ended early"),
    ],
)
async def test_bad_streams_raise_model_errors(
    body: bytes, error: type[ModelError], detail: str
) -> None:
    with pytest.raises(error, match=detail):
        await read(pieces(body, 4))


async def test_in_band_error_never_shows_the_key() -> None:
    body = sse({"error": {"message": "key sk-test-key is revoked"}})
    with pytest.raises(ModelResponseError) as caught:
        await read([body])
    assert "sk-test-key" not in str(caught.value)
    assert "[redacted]" in caught.value.detail


def raising(
    exc: Callable[[httpx2.Request], Exception],
) -> Callable[[httpx2.Request], httpx2.Response]:
    def handle(request: httpx2.Request) -> httpx2.Response:
        raise exc(request)

    return handle


@pytest.mark.parametrize(
    ("exc", "error"),
    [
        (lambda r: httpx2.ConnectError("refused", request=r), ModelConnectionError),
        (lambda r: httpx2.RemoteProtocolError("peer closed", request=r), ModelConnectionError),
        (lambda r: httpx2.ReadError("reset", request=r), ModelConnectionError),
        (lambda r: httpx2.ConnectTimeout("slow", request=r), ModelTimeout),
        (lambda r: httpx2.ReadTimeout("slow", request=r), ModelTimeout),
        (lambda r: httpx2.UnsupportedProtocol("no scheme", request=r), ModelNotConfigured),
        (lambda r: httpx2.DecodingError("bad gzip", request=r), ModelResponseError),
    ],
)
async def test_transport_errors_are_translated(
    exc: Callable[[httpx2.Request], Exception], error: type[ModelError]
) -> None:
    async with mock_model(raising(exc)) as model:
        with pytest.raises(error) as caught:
            await collect(model)
    assert isinstance(caught.value.__cause__, httpx2.HTTPError)


# The request as sent.


async def test_request_goes_to_chat_completions_with_headers_and_timeout() -> None:
    seen: list[httpx2.Request] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=sse(STOP, "[DONE]"))

    async with mock_model(
        handle, base_url="http://upstream.test/v1/", extra_headers={"X-Tenant": "t1"}
    ) as model:
        await collect(model, options=GenerateOptions(timeout=5.0))
    async with mock_model(handle, api_key="") as keyless:
        await collect(keyless)

    with_key, without_key = seen
    assert (with_key.method, str(with_key.url)) == (
        "POST",
        "http://upstream.test/v1/chat/completions",
    )
    assert with_key.headers["authorization"] == "Bearer sk-test-key"
    assert with_key.headers["content-type"] == "application/json"
    assert with_key.headers["x-tenant"] == "t1"
    assert with_key.extensions["timeout"]["read"] == 5.0
    assert "authorization" not in without_key.headers


WEATHER = ToolSchema(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def test_formatter_builds_a_streaming_body_with_tools() -> None:
    body = OpenAIChatFormatter().format(
        "gpt-4o-mini",
        [Msg.text("system", "Be brief."), Msg.text("user", "Weather in Oslo?")],
        [WEATHER],
        GenerateOptions(temperature=0.2, max_tokens=100, top_p=0.9, timeout=3.0),
    )
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.2,
        "max_tokens": 100,
        "top_p": 0.9,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_formatter_maps_tool_choice(choice: str, wire: object) -> None:
    body = OpenAIChatFormatter().format("m", USER, [WEATHER], GenerateOptions(tool_choice=choice))
    assert body["tool_choice"] == wire


def test_formatter_sends_no_tool_choice_without_tools() -> None:
    body = OpenAIChatFormatter().format("m", USER, [], GenerateOptions(tool_choice="required"))
    assert "tools" not in body
    assert "tool_choice" not in body


def test_formatter_round_trips_tool_calls_and_results() -> None:
    assistant = Msg(
        "assistant",
        [
            ThinkingBlock("I should look both up."),
            TextBlock("Looking up."),
            ToolUseBlock("call_a", "get_weather", {"city": "Oslo"}, '{"city":  "Oslo"}'),
            ToolUseBlock("call_b", "get_weather", {"city": "Rome"}),
        ],
    )
    results = Msg(
        "tool",
        [
            ToolResultBlock("call_a", "get_weather", "-3°C"),
            ToolResultBlock("call_b", "get_weather", "unknown city", is_error=True),
        ],
    )
    thinking_only = Msg("assistant", [ThinkingBlock("hmm")])
    body = OpenAIChatFormatter().format(
        "m", [*USER, assistant, results, thinking_only], [WEATHER], {}
    )
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Looking up.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    # The model's own text, byte for byte.
                    "function": {"name": "get_weather", "arguments": '{"city":  "Oslo"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "-3°C"},
        {"role": "tool", "tool_call_id": "call_b", "content": "unknown city"},
        {"role": "assistant", "content": ""},
    ]


def test_formatter_sends_null_content_for_a_call_without_text() -> None:
    msg = Msg("assistant", [ToolUseBlock("call_a", "f", {})])
    (wire,) = OpenAIChatFormatter().format_message(msg)
    assert wire["content"] is None
    assert wire["tool_calls"][0]["function"]["arguments"] == "{}"
