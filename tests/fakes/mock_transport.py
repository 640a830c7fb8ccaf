"""Run a real adapter against handcrafted bytes through httpx2's `MockTransport`.

No sockets: a handler answers each request with the exact body parts a test
chose, each delivered as its own read, so a test can cut a stream anywhere
(inside a JSON string, between `data:` and its payload, inside a multi-byte
character) and watch what the adapter makes of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager

import httpx2
from pydantic import SecretStr

from app.core.messages import Msg
from app.core.responses import ModelEvent
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import ChatModel, ModelConfig, RetryPolicy
from app.llm.errors import ModelError
from app.llm.openai import OpenAIChatModel

Handler = Callable[[httpx2.Request], httpx2.Response]

NO_RETRY = RetryPolicy(max_retries=0)


def streamed(status: int, parts: Iterable[bytes], headers: dict[str, str] | None = None) -> Handler:
    """A handler answering every request with these body parts, each its own read."""
    pieces = list(parts)

    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, headers=headers, content=body())

    return handle


@asynccontextmanager
async def mock_model(
    handler: Handler,
    model_class: type[ChatModel] = OpenAIChatModel,
    *,
    api_key: str = "sk-test-key",
    base_url: str = "http://upstream.test/v1",
    retry: RetryPolicy = NO_RETRY,
    extra_headers: dict[str, str] | None = None,
    model: str = "fake-model",
) -> AsyncIterator[ChatModel]:
    config = ModelConfig(
        provider=model_class.provider,
        base_url=base_url,
        api_key=SecretStr(api_key),
        model=model,
        retry=retry,
        extra_headers=extra_headers or {},
    )
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        yield model_class(config, client)


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
