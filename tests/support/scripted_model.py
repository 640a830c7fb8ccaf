"""`ScriptedModel`: a `ChatModel` in the test's own process, each call answered by a script.

Agent tests script many model calls (a research agent plans, searches,
reflects, writes) and want to write them in Python: the reply to a call often
depends on what the agent sent. Each call takes the next step of the script,
either a canned `Reply` (text, reasoning, tool calls) or a function that is
handed the `ModelRequest` (messages, tools, options) and returns the reply,
or raises a `ModelError` as a provider would. Calls go through
`ChatModel.stream`, so retries, `<think>` splitting and the usage rules are
the real ones; only the provider is replaced. Every request is recorded, and
a call with no step left fails the test with `pytest.fail`, whose exception
no `except Exception` in an agent can turn into a failed turn.

    model = ScriptedModel(
        Reply.tool_calls(("web_search", {"query": "pump warranty"})),
        lambda request: Reply.text(f"It says: {request.tool_results()[0].output[:40]}"),
    )
    async with agent_core(settings, model) as core:  # tests/support/agents.py
        events = await run_turn(web_search.build(core, settings), "How long is the warranty?")
    assert model.requests[1].tool_results()[0].name == "web_search"

The HTTP fakes in tests/fakes/ stay for the adapters, whose subject is the wire.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx2
import orjson
import pytest
from pydantic import SecretStr

from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from app.core.responses import ChatResponse, FinishReason, Usage
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import ChatModel, ModelConfig, RetryPolicy
from tests.fakes.scripted_server import words

INSTANT_RETRIES = RetryPolicy(max_retries=3, base_delay=0.0, max_delay=0.0)
"""The real retry policy, without its waits: a step that raises a retryable error is retried."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call as the model received it, copied so later turns of the loop cannot change it."""

    messages: list[Msg]
    tools: list[ToolSchema]
    options: GenerateOptions

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    def tool_results(self) -> list[ToolResultBlock]:
        """Every tool result in the messages, in order (the latest round's are last)."""
        return [
            block
            for message in self.messages
            for block in message.content
            if isinstance(block, ToolResultBlock)
        ]


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """A model's answer to one call: reasoning, then text, streamed word by word, then calls."""

    content: str = ""
    reasoning: str = ""
    calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    """None: the request's words in, the deltas and calls out (as the HTTP fakes count)."""

    @staticmethod
    def text(text: str, *, reasoning: str = "", usage: Usage | None = None) -> Reply:
        return Reply(content=text, reasoning=reasoning, usage=usage)

    @staticmethod
    def tool_calls(
        *calls: tuple[str, dict[str, Any]],
        text: str = "",
        reasoning: str = "",
        usage: Usage | None = None,
    ) -> Reply:
        """Call these tools, in parallel, after streaming `reasoning` and `text`."""
        return Reply(
            content=text,
            reasoning=reasoning,
            calls=tuple(ToolCall(name, arguments) for name, arguments in calls),
            usage=usage,
        )


Answer = Reply | str
"""A step function may return plain text for `Reply.text(text)`."""
Step = Reply | Callable[[ModelRequest], Answer | Awaitable[Answer]]


def _no_http(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError(f"the scripted model made an HTTP request: {request.url}")


class ScriptedModel(ChatModel):
    """See the module docstring. `script()` adds steps after those given here."""

    provider: ClassVar[str] = "scripted"

    def __init__(
        self, *steps: Step, model: str = "scripted-model", retry: RetryPolicy = INSTANT_RETRIES
    ) -> None:
        config = ModelConfig(
            provider=self.provider,
            base_url="scripted:",
            api_key=SecretStr(""),
            model=model,
            retry=retry,
        )
        # `ChatModel` takes the adapters' HTTP client; this one refuses to be used.
        super().__init__(config, httpx2.AsyncClient(transport=httpx2.MockTransport(_no_http)))
        self.requests: list[ModelRequest] = []
        """Every call, in order, including one that found the script used up."""
        self._steps: deque[Step] = deque(steps)
        self._scripted = len(steps)
        self._call_ids = 0

    def script(self, *steps: Step) -> None:
        self._steps.extend(steps)
        self._scripted += len(steps)

    @property
    def unused_steps(self) -> int:
        """Steps no call has taken yet: a test may assert the agent made every call it expected."""
        return len(self._steps)

    async def _stream(
        self,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> AsyncGenerator[ChatResponse, None]:
        request = ModelRequest(copy.deepcopy(list(messages)), list(tools), copy.deepcopy(options))
        self.requests.append(request)
        if not self._steps:
            last = messages[-1] if messages else None
            pytest.fail(
                f"model call {len(self.requests)} has no step: the script had "
                f"{self._scripted}. Its last message ({last.role if last else 'none'}): "
                f"{_excerpt(last)}",
                pytrace=False,
            )
        step = self._steps.popleft()
        reply = await _answer(step, request)
        response_id = f"scripted-{len(self.requests)}"
        deltas = 0
        for piece in words(reply.reasoning):
            deltas += 1
            yield ChatResponse(response_id, [ThinkingBlock(piece)])
        for piece in words(reply.content):
            deltas += 1
            yield ChatResponse(response_id, [TextBlock(piece)])
        if reply.calls:
            yield ChatResponse(response_id, [self._use(call) for call in reply.calls])
        usage = reply.usage or Usage(_words_in(messages), deltas + len(reply.calls))
        finish: FinishReason = "tool_calls" if reply.calls else "stop"
        yield ChatResponse(response_id, usage=usage, finish_reason=finish)

    def _use(self, call: ToolCall) -> ToolUseBlock:
        self._call_ids += 1
        raw = orjson.dumps(call.arguments).decode()
        return ToolUseBlock(f"call_{self._call_ids}", call.name, dict(call.arguments), raw)


async def _answer(step: Step, request: ModelRequest) -> Reply:
    if isinstance(step, Reply):
        return step
    answer = step(request)
    if not isinstance(answer, Reply | str):
        answer = await answer
    return Reply.text(answer) if isinstance(answer, str) else answer


def _words_in(messages: Sequence[Msg]) -> int:
    return sum(len(message.text_content().split()) for message in messages)


def _excerpt(message: Msg | None, limit: int = 200) -> str:
    if message is None:
        return ""
    text = message.text_content() or repr(message.content)
    return text if len(text) <= limit else text[:limit] + "…"
