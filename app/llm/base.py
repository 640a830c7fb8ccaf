"""The one model interface agents use, and the policy every provider shares.

`ChatModel.stream()` is the only public call. It wraps a provider's
`_stream()` with what no provider should reimplement: retry with backoff
(only before the first chunk, since a half-streamed answer cannot be taken
back), `<think>` tag splitting of text deltas, a usage estimate when the
provider reports none, and a span hook for tracing.

Usage is what a turn costs, so every call that reached the provider is
counted, through the caller's `on_usage`: the provider's figures for a call
that finished, and a tiktoken estimate (its prompt and the text received,
`estimated=True`) for one cut short by a stop, a timeout or a dropped stream,
since providers report usage only at the end of an answer. A call refused
before its first chunk (an error status, no connection) is not counted.

Adding a provider means one subclass implementing `_stream()` (usually with a
formatter beside it) and one line in `app/llm/registry.py`::

    class EchoChatModel(ChatModel):
        provider = "echo"

        async def _stream(self, messages, tools, options):
            yield ChatResponse(content=[TextBlock(messages[-1].text_content())])
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol

import httpx2
from pydantic import SecretStr

from app.core.messages import ContentBlock, Msg, TextBlock
from app.core.responses import Accumulator, ChatResponse, ModelEvent, Retrying, Usage
from app.core.tools import GenerateOptions, ToolSchema
from app.core.urls import public_url
from app.llm.errors import ModelError, ModelHTTPError, ModelNotConfigured
from app.llm.think import ThinkTagSplitter
from app.llm.tokens import TokenCounter
from app.llm.toolcalls import with_own_ids, with_provider_ids

log = logging.getLogger(__name__)

CHECK_TIMEOUT_SECONDS = 10.0
"""The longest `check()` waits for the model's first chunk."""
UsageSink = Callable[[Usage], None]
"""Told the usage of each call a `stream()` made (see the module docstring)."""
StructuredOutput = Literal["json_schema", "json_object", "prompt"]
"""How a JSON step asks this model for JSON: the provider's native mode holding the answer
to the step's schema, one holding it only to "a JSON object", or the prompt alone."""
REFUSAL_STATUSES = (400, 422)
"""Statuses a server answers an unknown or unsupported request field with."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 20.0

    def delay(self, attempt: int, error: ModelError) -> float:
        """Honour the provider's Retry-After when it gives one, else exponential with jitter."""
        if isinstance(error, ModelHTTPError) and error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_delay)
        backoff: float = self.base_delay * 2.0 ** (attempt - 1)
        return min(backoff * (0.5 + random.random() / 2), self.max_delay)


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Where and how to reach one provider; the adapter owns the wire format, not this."""

    provider: str
    base_url: str
    api_key: SecretStr
    model: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    defaults: GenerateOptions = field(default_factory=lambda: GenerateOptions())
    extra_headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    """Seconds to wait for each chunk (and the first) unless a call's `timeout` option says."""
    max_response_bytes: int = 32 * 1024 * 1024
    """Most bytes one call's answer may take on the wire: bounds an answer that never ends,
    and the memory of one that comes as a single huge event."""
    structured_output: StructuredOutput = "json_schema"
    """What the server offers for JSON steps (`LLM_STRUCTURED_OUTPUT=prompt`: "prompt")."""
    name: str = ""
    """Its id in the catalog (`MODELS`): each call's usage is told under it."""

    @property
    def configured(self) -> bool:
        return bool(self.base_url)


class ModelCallWatch(Protocol):
    """One model call (one attempt) as an observer follows it."""

    def first_chunk(self) -> None:
        """The first chunk of the answer arrived (time to first token)."""
        ...

    def end(self, elapsed: float, usage: Usage | None, error: BaseException | None) -> None: ...


class ModelObserver(Protocol):
    """Tracing hook: told when a model call starts; follows it to its end."""

    def on_start(self, provider: str, model: str, attempt: int) -> ModelCallWatch: ...


class LoggingObserver:
    """The default hook: one debug line per call, never the prompt or the key."""

    def on_start(self, provider: str, model: str, attempt: int) -> ModelCallWatch:
        log.debug("model call start provider=%s model=%s attempt=%d", provider, model, attempt)
        return _LoggedCall(provider, model)


@dataclass(frozen=True, slots=True)
class _LoggedCall:
    provider: str
    model: str

    def first_chunk(self) -> None:
        return None

    def end(self, elapsed: float, usage: Usage | None, error: BaseException | None) -> None:
        log.debug(
            "model call end provider=%s model=%s elapsed=%.3fs usage=%s error=%s",
            self.provider,
            self.model,
            elapsed,
            usage,
            type(error).__name__ if error else None,
        )


class ChatModel(ABC):
    provider: ClassVar[str]
    structured_parameters: ClassVar[tuple[str, ...]] = ()
    """The request fields of the native structured output, as a refusing server names them."""
    image_max_side: ClassVar[int] = 0
    """The longest side, in pixels, of a picture this adapter sends (the provider's limit);
    0: it sends none, and a model marked `vision` is given the picture's text instead."""

    def __init__(
        self,
        config: ModelConfig,
        client: httpx2.AsyncClient,
        observer: ModelObserver | None = None,
        tokens: TokenCounter | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.observer: ModelObserver = observer or LoggingObserver()
        self.tokens = tokens
        """Counts usage the provider does not report; None leaves such usage unknown."""
        self._native_refused = False

    @property
    def model_name(self) -> str:
        return self.config.model

    @property
    def endpoint_url(self) -> str:
        """What a call goes to, fit for a log line or an error (no key, no query string)."""
        return public_url(self.config.base_url)

    @property
    def structured_output(self) -> StructuredOutput:
        """How JSON steps ask this model: as configured, or in the prompt once it refused that."""
        return "prompt" if self._native_refused else self.config.structured_output

    def refused_structured_output(self, error: ModelError) -> bool:
        """Whether `error` is the server refusing the native structured output.

        If so, this model is never asked for it again: the refusal is its
        configuration's, and asking each time would cost a call each time.
        """
        if not isinstance(error, ModelHTTPError) or error.status not in REFUSAL_STATUSES:
            return False
        detail = error.detail.casefold()
        if not any(name.casefold() in detail for name in self.structured_parameters):
            return False
        if not self._native_refused:
            log.warning(
                "model %s refuses %s (%s): its JSON steps ask in the prompt from now on",
                self.config.model,
                self.config.structured_output,
                error.describe(),
            )
        self._native_refused = True
        return True

    async def stream(
        self,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema] = (),
        options: GenerateOptions | None = None,
        on_usage: UsageSink | None = None,
    ) -> AsyncIterator[ModelEvent]:
        """Yield the response chunks, and a `Retrying` notice before each retry.

        The last chunk always has `usage`: the provider's, or counted here
        (`estimated=True`) when it reported none. `on_usage` is told the usage
        of every call made, a cut one's included. Each tool call comes under an
        id of ours (see `ToolUseBlock`).
        """
        if not self.config.configured:
            raise ModelNotConfigured()
        opts: GenerateOptions = {**self.config.defaults, **(options or {})}
        sent = with_provider_ids(messages)
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            watch = self.observer.on_start(self.config.provider, self.config.model, attempt)
            splitter = ThinkTagSplitter()
            usage: Usage | None = None
            produced = Accumulator()
            delivered = False
            try:
                async with aclosing(self._stream(sent, tools, opts)) as chunks:
                    async for chunk in chunks:
                        chunk = with_own_ids(_split_think(chunk, splitter))
                        produced.add(chunk)
                        usage = chunk.usage or usage
                        if chunk.finish_reason and usage is None and self.tokens is not None:
                            merged = produced.result().content
                            usage = self.tokens.estimate_usage(messages, tools, merged)
                            chunk.usage = usage
                        if not delivered:
                            watch.first_chunk()
                        delivered = True
                        yield chunk
                tail = splitter.flush()
                if tail:
                    yield ChatResponse(content=list(tail))
            except ModelError as exc:
                watch.end(time.perf_counter() - started, usage, exc)
                exc.url = exc.url or self.endpoint_url
                if delivered:
                    self._count_cut(on_usage, messages, tools, produced)
                if delivered or not exc.retryable or attempt > self.config.retry.max_retries:
                    self._log_failure(exc, attempt, None)
                    raise
                delay = self.config.retry.delay(attempt, exc)
                self._log_failure(exc, attempt, delay)
                yield Retrying(attempt=attempt, delay=delay, reason=exc.code)
                await asyncio.sleep(delay)
                continue
            except BaseException as exc:
                # Cancelled (a stop, a timeout) or closed while the call was out: the
                # prompt was sent, so it counts even if no chunk came yet.
                watch.end(time.perf_counter() - started, usage, exc)
                if usage is None:
                    self._count_cut(on_usage, messages, tools, produced)
                else:
                    self._tell(on_usage, usage)
                raise
            watch.end(time.perf_counter() - started, usage, None)
            if usage is not None:
                self._tell(on_usage, usage)
            return

    async def check(self) -> None:
        """Make one tiny call (one token, no reasoning, no retry); raise its `ModelError`.

        For `/ready?deep=1`: the same request path a turn takes, so it finds what a
        turn would (a base URL without `/v1`, a wrong port, a refused key).
        """
        if not self.config.configured:
            raise ModelNotConfigured()
        options: GenerateOptions = {
            **self.config.defaults,
            "max_tokens": 1,
            "thinking_budget": 0,
            "timeout": CHECK_TIMEOUT_SECONDS,
        }
        try:
            async with aclosing(self._stream([Msg.text("user", "ping")], (), options)) as chunks:
                async for _ in chunks:
                    pass
        except ModelError as exc:
            exc.url = exc.url or self.endpoint_url
            self._log_failure(exc, 1, None)
            raise

    def _log_failure(self, exc: ModelError, attempt: int, retry_in: float | None) -> None:
        """One WARNING per failed call: enough to tell a wrong URL from a down server."""
        log.warning(
            "model call failed (provider=%s model=%s status=%s attempt=%d, %s): %s",
            self.config.provider,
            self.config.model,
            getattr(exc, "status", "-"),
            attempt,
            f"retrying in {retry_in:.1f}s" if retry_in is not None else "giving up",
            exc.describe(),
        )

    def _count_cut(
        self,
        on_usage: UsageSink | None,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        produced: Accumulator,
    ) -> None:
        """Count a call cut short: the provider's figures come only at the end of an answer."""
        if self.tokens is not None:
            self._tell(
                on_usage, self.tokens.estimate_usage(messages, tools, produced.result().content)
            )

    def _tell(self, on_usage: UsageSink | None, usage: Usage) -> None:
        """Tell the caller a call's usage, under this model's catalog id."""
        if on_usage is not None:
            on_usage(
                dataclasses.replace(usage, model=self.config.name) if self.config.name else usage
            )

    @abstractmethod
    def _stream(
        self,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> AsyncGenerator[ChatResponse, None]:
        """Call the provider once and yield its chunks; raise `ModelError`s, nothing else.

        Tool calls here go by the provider's ids, both ways (app/llm/toolcalls.py).
        """


def _split_think(chunk: ChatResponse, splitter: ThinkTagSplitter) -> ChatResponse:
    """Route `<think>…</think>` spans of text deltas to thinking blocks."""
    content: list[ContentBlock] = []
    for block in chunk.content:
        if isinstance(block, TextBlock):
            content.extend(splitter.feed(block.text))
        else:
            content.append(block)
    chunk.content = content
    return chunk
