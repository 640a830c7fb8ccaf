"""OpenAI's streaming wire format, built by hand, and a model that reads it from memory.

`FakeOpenAI` serves these chunks over a socket; unit tests hand them to the
real `OpenAIChatModel` through httpx's `MockTransport`, cut wherever they
like, without any socket.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx2 as httpx
import orjson
from pydantic import SecretStr

from app.core.messages import Msg
from app.core.responses import ModelEvent
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import ChatModel, ModelConfig, RetryPolicy
from app.llm.errors import ModelError
from app.llm.openai import OpenAIChatModel

Body = dict[str, Any]
Handler = Callable[[httpx.Request], httpx.Response]

NO_RETRY = RetryPolicy(max_retries=0)


def chat_chunk(
    choices: list[Body],
    *,
    chunk_id: str = "chatcmpl-test",
    model: str = "fake-model",
    created: int = 1700000000,
) -> Body:
    return {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": "fp_fake",
        "choices": choices,
    }


def choice(delta: Body, finish_reason: str | None = None) -> Body:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def delta_chunk(delta: Body, finish_reason: str | None = None) -> Body:
    return chat_chunk([choice(delta, finish_reason)])


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> Body:
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return {**chat_chunk([]), "usage": usage}


def sse(*events: Body | str) -> bytes:
    """`data:` events; a str (like "[DONE]") is sent as is."""
    return b"".join(
        b"data: " + (e.encode() if isinstance(e, str) else orjson.dumps(e)) + b"\n\n"
        for e in events
    )


def streamed(status: int, parts: Iterable[bytes], headers: dict[str, str] | None = None) -> Handler:
    """A handler answering every request with these body parts, each its own read."""
    pieces = list(parts)

    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers, content=body())

    return handle


@asynccontextmanager
async def mock_model(
    handler: Handler,
    *,
    api_key: str = "sk-test-key",
    base_url: str = "http://upstream.test/v1",
    retry: RetryPolicy = NO_RETRY,
    extra_headers: dict[str, str] | None = None,
) -> AsyncIterator[OpenAIChatModel]:
    config = ModelConfig(
        provider="openai",
        base_url=base_url,
        api_key=SecretStr(api_key),
        model="fake-model",
        retry=retry,
        extra_headers=extra_headers or {},
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        yield OpenAIChatModel(config, client)


async def run(
    model: ChatModel,
    messages: Sequence[Msg],
    tools: Sequence[ToolSchema] = (),
    options: GenerateOptions | None = None,
) -> tuple[list[ModelEvent], ModelError | None]:
    """Everything the stream yielded, and the error that ended it, if one did."""
    events: list[ModelEvent] = []
    try:
        async for event in model.stream(messages, tools, options):
            events.append(event)
    except ModelError as exc:
        return events, exc
    return events, None
