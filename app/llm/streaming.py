"""The HTTP side every provider shares: one POST, an event stream back, errors translated.

Anthropic, Gemini, DashScope and the OpenAI-compatible servers differ in their
request body, their auth header and their event payloads, and in nothing else
that matters here. So `StreamingChatModel._stream()` is written once: it sends
the request an adapter builds, answers an error status with a `ModelHTTPError`
(Retry-After read), feeds each decoded event to the adapter's `StreamParser`,
and translates transport failures at this boundary. Every `ModelError` that
leaves it has the API key scrubbed from its text, whoever echoed the key back.

An adapter is then a few small pieces, with its formatter beside it::

    class EchoChatModel(StreamingChatModel):
        provider = "echo"
        formatter = EchoChatFormatter()  # format(model, messages, tools, options) -> body

        def endpoint(self, base_url):
            return f"{base_url}/echo"

        def auth_headers(self, key):
            return {"Authorization": f"Bearer {key}"}

        def parser(self, options):
            return EchoStreamParser()  # a StreamParser: read() turns a payload into deltas

Left out: non-streamed calls (every answer is streamed), and resuming a
stream cut mid-answer (none of these APIs can).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, Protocol, TypeVar

import httpx2
import orjson

from app.core.messages import ContentBlock, Msg
from app.core.responses import ChatResponse, FinishReason, Usage
from app.core.tools import GenerateOptions, ToolSchema
from app.core.urls import public_url
from app.llm.base import ChatModel, ModelConfig, ModelObserver
from app.llm.errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelNotConfigured,
    ModelResponseError,
    ModelTimeout,
)
from app.llm.sse import SSEDecoder, SSEvent
from app.llm.tokens import TokenCounter
from app.llm.toolcalls import ToolCallBuffer

_Error = TypeVar("_Error", bound=ModelError)

REDACTED = "[redacted]"
_ERROR_BODY_BYTES = 2048
"""How much of an error response is read: enough for the provider's message, no more."""
_DETAIL_CHARS = 300
_QUOTE_CHARS = 80
"""How much of an unreadable event an error quotes."""


class ChatFormatter(Protocol):
    """Our messages, tools and options as one provider's request body."""

    def format(
        self,
        model: str,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> dict[str, Any]: ...


class StreamParser(ABC):
    """The state of one streamed answer: `feed()` turns each event into a chunk of deltas.

    Tool calls gather in `calls` and come out whole in `final()`, with the
    usage and finish reason, so every provider's stream has the same shape.
    """

    def __init__(self) -> None:
        self.id = ""
        self.calls = ToolCallBuffer()
        self.usage: Usage | None = None
        self.finish: FinishReason | None = None
        self.ended = False
        """An end-of-stream marker arrived: whatever follows is drained unread."""

    @abstractmethod
    def read(self, event: str, payload: Any) -> list[ContentBlock]:
        """The text and thinking deltas of one event; record calls, usage and finish."""

    def feed(self, event: SSEvent) -> ChatResponse | None:
        try:
            payload = orjson.loads(event.data)
        except orjson.JSONDecodeError as exc:
            raise ModelResponseError(f"malformed chunk: {event.data[:_QUOTE_CHARS]!r}") from exc
        try:
            content = self.read(event.event, payload)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
            raise ModelResponseError(f"unexpected chunk: {event.data[:_QUOTE_CHARS]!r}") from exc
        return ChatResponse(self.id, content) if content else None

    @property
    def complete(self) -> bool:
        """The provider said the answer is whole (an end marker or a finish reason)."""
        return self.ended or self.finish is not None

    def final(self) -> ChatResponse:
        """The last chunk: the assembled tool calls, usage and finish reason."""
        calls: list[ContentBlock] = list(self.calls.blocks())
        finish = self.finish or "stop"
        if calls and finish == "stop":
            # Gemini always says STOP; vLLM and Ollama builds have been seen doing so too.
            finish = "tool_calls"
        return ChatResponse(self.id, calls, self.usage, finish)


class StreamingChatModel(ChatModel):
    """A provider reached by one HTTP POST whose answer streams back as server-sent events."""

    formatter: ClassVar[ChatFormatter]

    def __init__(
        self,
        config: ModelConfig,
        client: httpx2.AsyncClient,
        observer: ModelObserver | None = None,
        tokens: TokenCounter | None = None,
    ) -> None:
        super().__init__(config, client, observer, tokens)
        self._key = config.api_key.get_secret_value()
        self._url = self.endpoint(config.base_url.rstrip("/"))
        self._headers = {
            "Content-Type": "application/json",
            **self.auth_headers(self._key),
            **config.extra_headers,
        }

    @property
    def endpoint_url(self) -> str:
        return public_url(self._url)

    @abstractmethod
    def endpoint(self, base_url: str) -> str:
        """The streaming chat URL under the configured base URL (never with the key in it)."""

    @abstractmethod
    def auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry the key, and any the API requires with it."""

    @abstractmethod
    def parser(self, options: GenerateOptions) -> StreamParser:
        """A fresh parser for one streamed answer to a call with these options."""

    def body(
        self, messages: Sequence[Msg], tools: Sequence[ToolSchema], options: GenerateOptions
    ) -> dict[str, Any]:
        return self.formatter.format(self.config.model, messages, tools, options)

    def http_error(self, status: int, body: bytes, retry_after: float | None) -> ModelError:
        """What an error status means; adapters refine it where their API says more in the body.

        `body` is the start of the error response; `retry_after` comes from its header.
        """
        message = error_message(body)[:_DETAIL_CHARS]
        detail = f"HTTP {status}: {message}" if message else ""
        return ModelHTTPError(status, detail, retry_after)

    async def _stream(
        self,
        messages: Sequence[Msg],
        tools: Sequence[ToolSchema],
        options: GenerateOptions,
    ) -> AsyncGenerator[ChatResponse, None]:
        body = self.body(messages, tools, options)
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
                parser = self.parser(options)
                decoder = SSEDecoder()
                received = 0
                async for raw in response.aiter_bytes():
                    received += len(raw)
                    if received > self.config.max_response_bytes:
                        raise ModelResponseError(
                            f"the answer was longer than {self.config.max_response_bytes} bytes"
                        )
                    if parser.ended:
                        # Read the body to its end so the connection returns to the pool.
                        continue
                    for event in decoder.feed(raw):
                        chunk = parser.feed(event)
                        if chunk is not None:
                            yield chunk
                        if parser.ended:
                            break
                if not parser.complete:
                    raise ModelConnectionError("stream ended early")
                yield parser.final()
        except ModelError as exc:
            self._redact(exc)
            raise
        except httpx2.TimeoutException as exc:
            raise self._redact(ModelTimeout(_describe(exc))) from exc
        except (httpx2.NetworkError, httpx2.RemoteProtocolError, httpx2.ProxyError) as exc:
            raise self._redact(ModelConnectionError(_describe(exc))) from exc
        except (httpx2.UnsupportedProtocol, httpx2.InvalidURL) as exc:
            raise self._redact(ModelNotConfigured(f"invalid LLM base URL: {exc}")) from exc
        except httpx2.DecodingError as exc:
            raise self._redact(ModelResponseError(_describe(exc))) from exc
        except httpx2.HTTPError as exc:
            raise self._redact(ModelError(_describe(exc))) from exc

    def _timeout(self, options: GenerateOptions) -> httpx2.Timeout:
        """The wait for each chunk: the call's `timeout` option, else the provider's."""
        default = self.client.timeout
        return httpx2.Timeout(
            options.get("timeout", self.config.timeout),
            connect=default.connect,
            write=default.write,
            pool=default.pool,
        )

    async def _http_error(self, response: httpx2.Response) -> ModelError:
        head = b""
        async for part in response.aiter_bytes():
            head += part
            if len(head) >= _ERROR_BODY_BYTES:
                break
        return self.http_error(
            response.status_code, head[:_ERROR_BODY_BYTES], _retry_after(response)
        )

    def _redact(self, exc: _Error) -> _Error:
        """Never let the key out, even when a provider or proxy echoes it back."""
        if self._key:
            exc.detail = exc.detail.replace(self._key, REDACTED)
            exc.args = tuple(
                a.replace(self._key, REDACTED) if isinstance(a, str) else a for a in exc.args
            )
        return exc


def upstream_error(status: Any, message: str) -> ModelHTTPError:
    """An error the provider reported inside a 200 stream, classed by its HTTP equivalent.

    Classed this way, an overload reported before the first chunk is retried
    like a 529 status would be, and a bad request is not. A status that is not
    an HTTP error status counts as a server error.
    """
    valid = isinstance(status, int) and 400 <= status < 600
    return ModelHTTPError(status if valid else 500, f"upstream error: {message}")


def error_message(body: bytes) -> str:
    """The provider's own message from an error body, else the body's text.

    Knows the shapes of all our providers: `{"error": {"message"}}` (OpenAI,
    Anthropic, Gemini, also as a one-element list), `{"code", "message"}`
    (DashScope), and an error sent as an event stream.
    """
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        events = SSEDecoder().feed(body + b"\n\n")
        if events:
            return error_message(events[0].data.encode())
        return body.decode("utf-8", "replace").strip()
    if isinstance(payload, list) and payload:
        payload = payload[0]
    if isinstance(payload, dict):
        if "error" in payload:
            return message_of(payload["error"])
        if "message" in payload:
            code = payload.get("code")
            return f"{code}: {payload['message']}" if code else str(payload["message"])
    return body.decode("utf-8", "replace").strip()


def message_of(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error)


def _describe(exc: httpx2.HTTPError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _retry_after(response: httpx2.Response) -> float | None:
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
