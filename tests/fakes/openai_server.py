"""`FakeOpenAI`: a real OpenAI-compatible HTTP server on 127.0.0.1, for tests.

It runs in the test's own event loop on raw asyncio streams rather than on an
ASGI server, for two reasons: the wire is under exact control (a body cut
mid-chunk, a response that hangs after its headers), and a client that drops
a stream is seen the moment its FIN arrives, without polling.

    async with FakeOpenAI() as fake:
        fake.script(Reply.error(429, retry_after=0), Reply.text("Hello there"))
        settings = Settings(llm_base_url=fake.base_url)
        async with build_http_client(settings) as client:
            model = build_chat_model(settings, client)
            ...  # a `Retrying` notice, then "Hello there" word by word
        assert fake.requests[1]["stream"] is True

Unscripted requests get `responder(body)`'s reply, by default a short text.

Replies follow OpenAI's documented Chat Completions streaming format:
`chat.completion.chunk` objects, one per `data:` event, a usage chunk with
`choices: []` when `stream_options.include_usage` was asked for, then
`data: [DONE]`. The server speaks just enough HTTP/1.1 for httpx: keep-alive,
`Content-Length` request bodies, chunked responses, no pipelining.
"""

from __future__ import annotations

import asyncio
import re
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from http import HTTPStatus
from itertools import pairwise
from types import TracebackType
from typing import Any

import orjson

from tests.fakes.openai_wire import Body, chat_chunk, choice


class _ClientGone(Exception):
    """The client closed its connection before the reply was complete."""


def _words(text: str) -> list[str]:
    """Split like a tokenizer would, roughly: each word with the whitespace before the next."""
    return [p for p in re.split(r"(?<=\s)(?=\S)", text) if p]


def _split(text: str, *, parts: int | None = None, size: int | None = None) -> list[str]:
    if size is not None:
        return [text[i : i + size] for i in range(0, len(text), size)]
    if parts is not None:
        step, extra = divmod(len(text), parts)
        bounds = [i * step + min(i, extra) for i in range(parts + 1)]
        return [text[a:b] for a, b in pairwise(bounds) if a < b]
    return _words(text)


class Wire:
    """One request's response channel: what a `Reply` writes its answer with."""

    def __init__(
        self,
        fake: FakeOpenAI,
        request: Body,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.request = request
        self.keep_alive = True
        self._fake = fake
        self._reader = reader
        self._writer = writer
        self._id = f"chatcmpl-fake{len(fake.requests)}"
        self._created = int(time.time())
        self._model = str(request.get("model", "fake-model"))
        self._with_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        self._watcher: asyncio.Task[bytes] | None = None
        self.leftover = b""
        """A first byte of the client's next request that the watcher read."""

    def new_call_id(self) -> str:
        return self._fake.new_call_id()

    async def start(self) -> None:
        """Send the headers of a streamed answer and start watching for the client leaving."""
        head = (
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/event-stream; charset=utf-8\r\n"
            "Cache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        )
        # A client without pipelining sends nothing until the answer is complete,
        # so the read returns only when the client has closed the connection.
        self._watcher = asyncio.create_task(_until_readable(self._reader))
        await self._send(head.encode())

    async def chunk(self, delta: Body, finish_reason: str | None = None) -> None:
        await self.event(self._chunk([choice(delta, finish_reason)]))

    async def usage(self, completion_tokens: int) -> None:
        """The usage chunk, sent only when the request asked for it, as OpenAI does."""
        if not self._with_usage:
            return
        prompt_tokens = sum(
            len(str(m.get("content") or "").split()) for m in self.request.get("messages", [])
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        await self.event({**self._chunk([]), "usage": usage})

    async def event(self, payload: Body) -> None:
        await self.raw_event(orjson.dumps(payload))

    async def raw_event(self, data: bytes) -> None:
        await self._send_chunk(b"data: " + data + b"\n\n")

    async def done(self) -> None:
        await self.raw_event(b"[DONE]")
        await self._send(b"0\r\n\r\n")

    async def pause(self, seconds: float) -> None:
        """Wait like a slow model would, but stop at once if the client leaves."""
        if self._watcher is None or seconds <= 0:
            return
        done, _ = await asyncio.wait({self._watcher}, timeout=seconds)
        if done:
            raise _ClientGone

    async def wait_for_disconnect(self) -> None:
        if self._watcher is not None:
            await self._watcher
        raise _ClientGone

    async def error(self, status: int, body: bytes, retry_after: str | None) -> None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        head = (
            f"HTTP/1.1 {status} {phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
        )
        if retry_after is not None:
            head += f"Retry-After: {retry_after}\r\n"
        await self._send(head.encode() + b"\r\n" + body)

    def cut(self) -> None:
        """Close the connection mid-answer, as a crashed upstream or a proxy would."""
        self.keep_alive = False
        self._writer.close()

    async def stop_watching(self) -> None:
        """Called once the reply is over; waits so the next request can be read."""
        if self._watcher is None:
            return
        if not self._watcher.done():
            self._watcher.cancel()
            await asyncio.wait({self._watcher})
        elif not self._watcher.cancelled():
            # Either the client left, or it was quick to send its next request.
            self.leftover = self._watcher.result()
            self.keep_alive = self.keep_alive and bool(self.leftover)

    def _chunk(self, choices: list[Body]) -> Body:
        chunk = chat_chunk(choices, chunk_id=self._id, model=self._model, created=self._created)
        if self._with_usage:
            chunk["usage"] = None
        return chunk

    async def _send_chunk(self, data: bytes) -> None:
        await self._send(b"%x\r\n%b\r\n" % (len(data), data))

    async def _send(self, data: bytes) -> None:
        if self._watcher is not None and self._watcher.done():
            raise _ClientGone
        try:
            self._writer.write(data)
            await self._writer.drain()
        except ConnectionError as exc:
            raise _ClientGone from exc


async def _until_readable(reader: asyncio.StreamReader) -> bytes:
    """The next byte from the client, b"" once it has gone."""
    try:
        return await reader.read(1)
    except ConnectionError:
        return b""


class Reply(ABC):
    """What the fake answers to one request. Build one with the static methods."""

    @abstractmethod
    async def play(self, wire: Wire) -> None: ...

    @staticmethod
    def text(
        text: str,
        *,
        chunks: int | None = None,
        chunk_size: int | None = None,
        delay: float = 0.0,
        reasoning: str | None = None,
        usage: bool = True,
    ) -> TextReply:
        """Stream `text` word by word, or in `chunks` parts, or `chunk_size` characters at a time.

        `reasoning` streams first as `reasoning_content` (DeepSeek's field);
        `delay` seconds pass before each delta.
        """
        return TextReply(
            pieces=tuple(_split(text, parts=chunks, size=chunk_size)),
            reasoning=tuple(_words(reasoning or "")),
            delay=delay,
            usage=usage,
        )

    @staticmethod
    def tool_calls(
        calls: Sequence[tuple[str, Body]], *, fragments: int = 4, text: str | None = None
    ) -> ToolCallsReply:
        """Call the tools in parallel, each call's arguments in `fragments` pieces, interleaved."""
        return ToolCallsReply(
            calls=tuple((name, orjson.dumps(args).decode()) for name, args in calls),
            fragments=fragments,
            text_pieces=tuple(_words(text or "")),
        )

    @staticmethod
    def error(
        status: int, *, retry_after: float | str | None = None, body: Any = None
    ) -> ErrorReply:
        """An error status; `body` (JSON-encoded unless bytes) defaults to OpenAI's error shape.

        `retry_after` is sent as the Retry-After header: seconds, or a string as is.
        """
        if body is None:
            body = {
                "error": {
                    "message": f"fake upstream error {status}",
                    "type": "rate_limit_exceeded" if status == 429 else "server_error",
                    "param": None,
                    "code": None,
                }
            }
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        header = retry_after if isinstance(retry_after, str | None) else f"{retry_after:g}"
        return ErrorReply(status=status, body=raw, retry_after=header)

    @staticmethod
    def cut(*, after_chunks: int = 1) -> CutReply:
        """Stream `after_chunks` text deltas, then drop the connection without `[DONE]`."""
        return CutReply(after_chunks=after_chunks)

    @staticmethod
    def malformed() -> MalformedReply:
        """A stream whose second event is not JSON."""
        return MalformedReply()

    @staticmethod
    def hang(first_text: str | None = None) -> HangReply:
        """Send headers (and `first_text`), then nothing until the client gives up."""
        return HangReply(first_text=first_text)


_FIRST_DELTA: Body = {"role": "assistant", "content": "", "refusal": None}


@dataclass(frozen=True)
class TextReply(Reply):
    pieces: tuple[str, ...]
    reasoning: tuple[str, ...] = ()
    delay: float = 0.0
    usage: bool = True

    async def play(self, wire: Wire) -> None:
        await wire.start()
        await wire.chunk(_FIRST_DELTA)
        for piece in self.reasoning:
            await wire.pause(self.delay)
            await wire.chunk({"reasoning_content": piece})
        for piece in self.pieces:
            await wire.pause(self.delay)
            await wire.chunk({"content": piece})
        await wire.chunk({}, finish_reason="stop")
        if self.usage:
            await wire.usage(len(self.reasoning) + len(self.pieces))
        await wire.done()


@dataclass(frozen=True)
class ToolCallsReply(Reply):
    calls: tuple[tuple[str, str], ...]
    """(name, arguments as a JSON string) per call."""
    fragments: int = 4
    text_pieces: tuple[str, ...] = ()
    """Text streamed before the calls."""

    async def play(self, wire: Wire) -> None:
        await wire.start()
        await wire.chunk({**_FIRST_DELTA, "content": "" if self.text_pieces else None})
        for piece in self.text_pieces:
            await wire.chunk({"content": piece})
        deltas: list[list[Body]] = []
        for index, (name, arguments) in enumerate(self.calls):
            function = {"name": name, "arguments": ""}
            first = {"index": index, "id": wire.new_call_id(), "type": "function"}
            rest = _split(arguments, parts=self.fragments)
            deltas.append(
                [{**first, "function": function}]
                + [{"index": index, "function": {"arguments": part}} for part in rest]
            )
        # Round-robin across calls: the hardest order for a client to reassemble.
        for step in range(max(map(len, deltas), default=0)):
            for call_deltas in deltas:
                if step < len(call_deltas):
                    await wire.chunk({"tool_calls": [call_deltas[step]]})
        await wire.chunk({}, finish_reason="tool_calls")
        await wire.usage(sum(map(len, deltas)) + len(self.text_pieces))
        await wire.done()


@dataclass(frozen=True)
class ErrorReply(Reply):
    status: int
    body: bytes
    retry_after: str | None = None

    async def play(self, wire: Wire) -> None:
        await wire.error(self.status, self.body, self.retry_after)


@dataclass(frozen=True)
class CutReply(Reply):
    after_chunks: int = 1

    async def play(self, wire: Wire) -> None:
        await wire.start()
        await wire.chunk(_FIRST_DELTA)
        for n in range(self.after_chunks):
            await wire.chunk({"content": f"part{n} "})
        wire.cut()


@dataclass(frozen=True)
class MalformedReply(Reply):
    async def play(self, wire: Wire) -> None:
        await wire.start()
        await wire.chunk(_FIRST_DELTA)
        await wire.raw_event(b'{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "oo')
        await wire.done()


@dataclass(frozen=True)
class HangReply(Reply):
    first_text: str | None = None

    async def play(self, wire: Wire) -> None:
        await wire.start()
        if self.first_text is not None:
            await wire.chunk(_FIRST_DELTA)
            await wire.chunk({"content": self.first_text})
        await wire.wait_for_disconnect()


def _default_responder(body: Body) -> Reply:
    return Reply.text("Hello from the fake model.")


class FakeOpenAI:
    """The server; see the module docstring. Enter it to listen, leave it to stop."""

    def __init__(self, responder: Callable[[Body], Reply] = _default_responder) -> None:
        self.responder = responder
        self.requests: list[Body] = []
        """JSON bodies of the chat requests received, in order."""
        self.headers: list[dict[str, str]] = []
        """Their headers, names in lower case."""
        self.disconnected = asyncio.Event()
        """Set when a client dropped a streamed answer before it was complete."""
        self.connections = 0
        """TCP connections accepted: shows whether clients reuse pooled connections."""
        self._queue: deque[Reply] = deque()
        self._calls = 0
        self._handlers: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None
        self.base_url = ""

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order, before asking the responder."""
        self._queue.extend(replies)

    def new_call_id(self) -> str:
        self._calls += 1
        return f"call_fake{self._calls}"

    async def __aenter__(self) -> FakeOpenAI:
        # Listening starts here, so a client may connect before this returns.
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._handlers:
            task.cancel()
        if self._handlers:
            await asyncio.wait(self._handlers)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self.connections += 1
        try:
            keep_alive, leftover = True, b""
            while keep_alive:
                keep_alive, leftover = await self._exchange(reader, writer, leftover)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed an idle keep-alive connection
        finally:
            self._handlers.discard(task)
            writer.close()
            with suppress(ConnectionError):
                await writer.wait_closed()

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, leftover: bytes
    ) -> tuple[bool, bytes]:
        """Serve one request: whether the connection stays open, and bytes read ahead."""
        head = (leftover + await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        start, *lines = head.split("\r\n")
        method, target, _ = start.split(" ", 2)
        headers = {}
        for line in lines:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if method != "POST" or not target.endswith("/chat/completions"):
            not_found = Reply.error(404, body={"error": {"message": f"no route {target}"}})
            await not_found.play(Wire(self, {}, reader, writer))
            return True, b""
        request: Body = orjson.loads(body)
        self.requests.append(request)
        self.headers.append(headers)
        reply = self._queue.popleft() if self._queue else self.responder(request)
        wire = Wire(self, request, reader, writer)
        try:
            await reply.play(wire)
        except _ClientGone:
            self.disconnected.set()
            return False, b""
        finally:
            await wire.stop_watching()
        return wire.keep_alive, wire.leftover
