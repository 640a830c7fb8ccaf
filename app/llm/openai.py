"""The adapter for OpenAI's Chat Completions API and every server that speaks it.

One streamed call per `_stream()`: the formatter builds the body, this module
sends it, decodes the event stream and translates everything that can go
wrong into `ModelError`s at this boundary. Retry, `<think>` splitting and
tracing live in `ChatModel.stream()`, not here.

Compatible servers differ in small ways, all handled here: the key is
optional (Ollama and vLLM run without one), reasoning arrives as
`reasoning_content` (DeepSeek, Qwen) or `reasoning` (vLLM, OpenRouter), and
some omit `index` on tool-call fragments or report `stop` after tool calls.
Tool calls are emitted whole, in index order, in the last chunk: their
arguments arrive in fragments, interleaved when the model calls several tools.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from uuid import uuid4

import httpx2 as httpx
import orjson

from app.core.messages import ContentBlock, Msg, TextBlock, ThinkingBlock, ToolUseBlock
from app.core.responses import ChatResponse, FinishReason, Usage
from app.core.tools import GenerateOptions, ToolSchema
from app.llm.base import ChatModel, ModelConfig, ModelObserver
from app.llm.errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelNotConfigured,
    ModelResponseError,
    ModelTimeout,
)
from app.llm.openai_format import OpenAIChatFormatter
from app.llm.sse import SSEDecoder

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}
_ERROR_BODY_BYTES = 2048
"""How much of an error response is read: enough for the provider's message, no more."""
_DETAIL_CHARS = 300


class OpenAIChatModel(ChatModel):
    provider = "openai"

    def __init__(
        self,
        config: ModelConfig,
        client: httpx.AsyncClient,
        observer: ModelObserver | None = None,
    ) -> None:
        super().__init__(config, client, observer)
        self.formatter = OpenAIChatFormatter()
        self._url = f"{config.base_url.rstrip('/')}/chat/completions"
        self._key = config.api_key.get_secret_value()
        self._headers = {"Content-Type": "application/json"}
        if self._key:
            self._headers["Authorization"] = f"Bearer {self._key}"
        self._headers.update(config.extra_headers)

    async def _stream(
        self,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> AsyncGenerator[ChatResponse, None]:
        body = self.formatter.format(self.config.model, messages, tools, options)
        try:
            async with self.client.stream(
                "POST",
                self._url,
                content=orjson.dumps(body),
                headers=self._headers,
                timeout=self._timeout(options),
            ) as response:
                if not response.is_success:
                    raise await self._http_error(response)
                parser = _ChunkParser(self._scrub)
                decoder = SSEDecoder()
                done = False
                async for raw in response.aiter_bytes():
                    if done:
                        # Read the body to its end so the connection returns to the pool.
                        continue
                    for event in decoder.feed(raw):
                        if event.data == "[DONE]":
                            done = True
                            break
                        chunk = parser.parse(event.data)
                        if chunk is not None:
                            yield chunk
                if not done and parser.finish is None:
                    raise ModelConnectionError("stream ended early")
                yield parser.final()
        except httpx.TimeoutException as exc:
            raise ModelTimeout(self._scrub(_describe(exc))) from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
            raise ModelConnectionError(self._scrub(_describe(exc))) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ModelNotConfigured(f"invalid LLM base URL: {self._scrub(str(exc))}") from exc
        except httpx.DecodingError as exc:
            raise ModelResponseError(self._scrub(_describe(exc))) from exc
        except httpx.HTTPError as exc:
            raise ModelError(self._scrub(_describe(exc))) from exc

    def _timeout(self, options: GenerateOptions) -> httpx.Timeout:
        """The per-call `timeout` option bounds each read, i.e. the wait for the next chunk."""
        default = self.client.timeout
        if "timeout" not in options:
            return default
        return httpx.Timeout(
            options["timeout"], connect=default.connect, write=default.write, pool=default.pool
        )

    async def _http_error(self, response: httpx.Response) -> ModelHTTPError:
        head = b""
        async for part in response.aiter_bytes():
            head += part
            if len(head) >= _ERROR_BODY_BYTES:
                break
        message = self._scrub(_error_message(head[:_ERROR_BODY_BYTES]))[:_DETAIL_CHARS]
        detail = f"HTTP {response.status_code}: {message}" if message else ""
        return ModelHTTPError(response.status_code, detail, _retry_after(response))

    def _scrub(self, text: str) -> str:
        """Never let the key out, even when a provider or proxy echoes it back."""
        return text.replace(self._key, "[redacted]") if self._key else text


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def block(self) -> ToolUseBlock:
        raw = "".join(self.arguments)
        try:
            parsed = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            parsed = {}
        # An id is needed to send the result back; some local servers leave it out.
        return ToolUseBlock(
            id=self.id or f"call_{uuid4().hex[:24]}",
            name=self.name,
            input=parsed if isinstance(parsed, dict) else {},
            raw_input=raw,
        )


class _ChunkParser:
    """The state of one streamed answer: pending tool calls, finish reason, usage."""

    __slots__ = ("_scrub", "calls", "finish", "id", "usage")

    def __init__(self, scrub: Callable[[str], str]) -> None:
        self._scrub = scrub
        self.id = ""
        self.calls: dict[int, _PendingCall] = {}
        self.finish: FinishReason | None = None
        self.usage: Usage | None = None

    def parse(self, data: str) -> ChatResponse | None:
        """The text and thinking deltas of one chunk, or None when it carries none."""
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ModelResponseError(f"malformed chunk: {self._scrub(data[:80])!r}") from exc
        try:
            return self._read(payload)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise ModelResponseError(f"unexpected chunk: {self._scrub(data[:80])!r}") from exc

    def _read(self, payload: dict[str, Any]) -> ChatResponse | None:
        error = payload.get("error")
        if error:
            raise ModelResponseError(f"upstream error: {self._scrub(_message_of(error))}")
        usage = payload.get("usage")
        if usage:
            self.usage = Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0)
        choices = payload.get("choices")
        if not choices:
            return None
        self.id = payload.get("id") or self.id
        choice = choices[0]
        delta = choice.get("delta") or {}
        content: list[ContentBlock] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            content.append(ThinkingBlock(reasoning))
        text = delta.get("content")
        if text:
            content.append(TextBlock(text))
        fragments = delta.get("tool_calls")
        if fragments:
            self._add_fragments(fragments)
        reason = choice.get("finish_reason")
        if reason:
            self.finish = _FINISH_REASONS.get(reason, "stop")
        return ChatResponse(self.id, content) if content else None

    def _add_fragments(self, fragments: list[dict[str, Any]]) -> None:
        for fragment in fragments:
            index = fragment.get("index")
            if index is None:
                # Some servers leave `index` out: a fragment with an id starts a new call.
                index = len(self.calls) if fragment.get("id") or not self.calls else max(self.calls)
            call = self.calls.get(index)
            if call is None:
                call = self.calls[index] = _PendingCall()
            function = fragment.get("function") or {}
            call.id = call.id or fragment.get("id") or ""
            call.name = call.name or function.get("name") or ""
            arguments = function.get("arguments")
            if arguments:
                call.arguments.append(arguments)

    def final(self) -> ChatResponse:
        """The last chunk: the assembled tool calls, usage and finish reason."""
        calls: list[ContentBlock] = [self.calls[i].block() for i in sorted(self.calls)]
        finish = self.finish or "stop"
        if calls and finish == "stop":
            # vLLM and Ollama builds have been seen reporting `stop` after tool calls.
            finish = "tool_calls"
        return ChatResponse(self.id, calls, self.usage, finish)


def _describe(exc: httpx.HTTPError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _message_of(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error)


def _error_message(body: bytes) -> str:
    """The provider's own message when the body is its JSON error shape, else the raw text."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace").strip()
    if isinstance(payload, dict) and "error" in payload:
        return _message_of(payload["error"])
    return body.decode("utf-8", "replace").strip()


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds, given as a number or as an HTTP date."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(seconds, 0.0) if math.isfinite(seconds) else None
