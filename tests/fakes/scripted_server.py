"""`ScriptedServer`: a real model-provider HTTP server on 127.0.0.1, one per vendor, for tests.

Every fake vendor shares this server and one vocabulary of scripted replies
(`Reply.text`, `Reply.tool_calls`, `Reply.error`, `Reply.cut`, ...); what
differs is an `Encoder`, which writes each step of a reply in the vendor's
documented wire format. So a test scripts a conversation once and runs it
against every vendor, and a new vendor is one encoder and one small server
class (its route and the checks its API makes on a request).

    async with FakeOpenAI() as fake:
        fake.script(Reply.error(429, retry_after=0), Reply.text("Hello there"))
        settings = Settings(llm_base_url=fake.base_url)
        async with build_http_client(settings) as client:
            model = build_chat_model(settings, client)
            ...  # a `Retrying` notice, then "Hello there" word by word
        assert fake.requests[1]["stream"] is True

Unscripted requests get `responder(body)`'s reply, by default a short text.

It runs in the test's own event loop on raw asyncio streams rather than on an
ASGI server, for two reasons: the wire is under exact control (a body cut
mid-event, a response that hangs after its headers, bytes trickled a few at a
time), and a client that drops a stream is seen the moment its FIN arrives,
without polling. It speaks just enough HTTP/1.1 for httpx: keep-alive,
`Content-Length` request bodies, chunked responses, no pipelining.
"""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from http import HTTPStatus
from itertools import pairwise
from types import TracebackType
from typing import Any, ClassVar, Literal, NamedTuple, Self

import orjson

Body = dict[str, Any]
Tokens = tuple[int, int]
"""(prompt tokens, completion tokens) a fake reports as usage."""
Finish = Literal["stop", "tool_calls"]
CallIds = Literal["unique", "reused", "repeated", "missing"]
"""How a server names the tool calls of a response, as servers in the field do: `unique`
(`call_fakeN`, counting the server's calls), `reused` (`call_1`, `call_2`, ... again in every
response, as local servers number them), `repeated` (one id for every call of a response),
`missing` (none, as Gemini)."""


class Call(NamedTuple):
    id: str | None
    """None: the call goes out without an id."""
    name: str
    arguments: str
    """A JSON object, as text."""


class _ClientGone(Exception):
    """The client closed its connection before the reply was complete."""


def words(text: str) -> list[str]:
    """Split like a tokenizer would, roughly: each word with the whitespace before the next."""
    return [p for p in re.split(r"(?<=\s)(?=\S)", text) if p]


def split(text: str, *, parts: int | None = None, size: int | None = None) -> list[str]:
    if size is not None:
        return [text[i : i + size] for i in range(0, len(text), size)]
    if parts is not None:
        step, extra = divmod(len(text), parts)
        bounds = [i * step + min(i, extra) for i in range(parts + 1)]
        return [text[a:b] for a, b in pairwise(bounds) if a < b]
    return words(text)


class Encoder(ABC):
    """One response in a vendor's wire format: each method gives the SSE frames to send.

    Built per request, so it may keep state (an open content block, a running count).
    """

    def __init__(self, request: Body, response_id: str) -> None:
        self.request = request
        self.response_id = response_id
        self.usage: Tokens | None = None
        """The usage the reply reports, known from `opening()` on."""

    @classmethod
    @abstractmethod
    def error_body(cls, status: int, message: str) -> bytes:
        """The vendor's JSON error shape."""

    @classmethod
    def error_response(
        cls, status: int, message: str, retry_after: str | None
    ) -> tuple[dict[str, str], bytes]:
        """Headers and body of an error status; most vendors say when to retry in a header."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return headers, cls.error_body(status, message)

    @abstractmethod
    def prompt_tokens(self) -> int:
        """Words of the request's text: what the fake reports as prompt tokens."""

    @abstractmethod
    def sent_options(self) -> Body:
        """The request's sampling options and tool choice, under our `GenerateOptions` names."""

    def opening(self, usage: Tokens | None) -> list[bytes]:
        """Frames before any content."""
        self.usage = usage
        return []

    @abstractmethod
    def thinking(self, piece: str) -> list[bytes]: ...

    @abstractmethod
    def text(self, piece: str) -> list[bytes]: ...

    @abstractmethod
    def tool_calls(self, calls: Sequence[Call], fragments: int) -> list[bytes]:
        """The calls, each call's arguments in `fragments` pieces where the vendor streams them."""

    def structured(self, answer: str) -> tuple[list[bytes], Finish]:
        """A JSON answer given through the native structured output the request asked for.

        Most vendors send it as the answer's text; Anthropic as the forced tool's input.
        """
        return [frame for piece in split(answer, parts=3) for frame in self.text(piece)], "stop"

    @abstractmethod
    def closing(self, finish: Finish, usage: Tokens | None) -> list[bytes]:
        """The finish reason, usage and end of stream (`usage` None: left out where allowed)."""

    @abstractmethod
    def malformed(self) -> bytes:
        """A frame whose payload is cut off mid-JSON."""

    @abstractmethod
    def stream_error(self, status: int, message: str) -> list[bytes]:
        """An error reported inside the stream, for a failure that has this HTTP status."""


class Wire:
    """One request's response channel: what a `Reply` writes its answer with."""

    def __init__(
        self,
        server: ScriptedServer,
        encoder: Encoder,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.encoder = encoder
        self.keep_alive = True
        self._server = server
        self._reader = reader
        self._writer = writer
        self._watcher: asyncio.Task[bytes] | None = None
        self.leftover = b""
        """A first byte of the client's next request that the watcher read."""

    def calls(self, calls: Sequence[tuple[str, str]]) -> list[Call]:
        """(name, arguments) pairs as the response's calls, named the server's way."""
        ids = self._server.new_call_ids(len(calls))
        return [Call(i, name, arguments) for i, (name, arguments) in zip(ids, calls, strict=True)]

    def usage(self, wanted: Tokens | bool, completion_tokens: int) -> Tokens | None:
        if wanted is True:
            return self.encoder.prompt_tokens(), completion_tokens
        return wanted or None

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

    async def send(self, frames: Sequence[bytes]) -> None:
        size = self._server.trickle
        for frame in frames:
            if size is None:
                await self._send_chunk(frame)
                continue
            for at in range(0, len(frame), size):
                await self._send_chunk(frame[at : at + size])
                await asyncio.sleep(0)  # let the client read this piece on its own

    async def end(self) -> None:
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

    async def error(self, status: int, headers: dict[str, str], body: bytes) -> None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        head = (
            f"HTTP/1.1 {status} {phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
        )
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
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
    """What a fake answers to one request. Build one with the static methods."""

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
        usage: Tokens | bool = True,
    ) -> TextReply:
        """Stream `text` word by word, or in `chunks` parts, or `chunk_size` characters at a time.

        `reasoning` streams first, word by word, in the vendor's thinking
        format; `delay` seconds pass before each delta. `usage`: True reports
        the request's words and the deltas sent, a pair reports those numbers,
        False leaves usage out where the vendor's format allows.
        """
        return TextReply(
            pieces=tuple(split(text, parts=chunks, size=chunk_size)),
            reasoning=tuple(words(reasoning or "")),
            delay=delay,
            usage=usage,
        )

    @staticmethod
    def tool_calls(
        calls: Sequence[tuple[str, Body]],
        *,
        fragments: int = 4,
        text: str | None = None,
        usage: Tokens | bool = True,
    ) -> ToolCallsReply:
        """Call the tools in parallel, each call's arguments in `fragments` pieces.

        `text` streams first, word by word.
        """
        return ToolCallsReply(
            calls=tuple((name, orjson.dumps(args).decode()) for name, args in calls),
            fragments=fragments,
            text_pieces=tuple(words(text or "")),
            usage=usage,
        )

    @staticmethod
    def structured(
        answer: str,
        *,
        reasoning: str | None = None,
        extra_calls: Sequence[tuple[str, Body]] = (),
    ) -> StructuredReply:
        """`answer` (JSON text) through the native structured output the request asked for.

        `reasoning` streams first in the vendor's thinking format; `extra_calls`
        are tool calls made beside the answer, as a model calling in parallel does.
        """
        return StructuredReply(
            answer,
            tuple(words(reasoning or "")),
            tuple((name, orjson.dumps(args).decode()) for name, args in extra_calls),
        )

    @staticmethod
    def error(
        status: int,
        *,
        retry_after: float | str | None = None,
        message: str | None = None,
        body: Any = None,
    ) -> ErrorReply:
        """An error status in the vendor's error shape, saying `message`.

        `retry_after`: seconds (or a string sent as is), told the way the vendor
        tells it; `body` (JSON-encoded unless bytes) replaces the vendor's shape.
        """
        header = retry_after if isinstance(retry_after, str | None) else f"{retry_after:g}"
        raw = None if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
        return ErrorReply(status, message or f"fake upstream error {status}", header, raw)

    @staticmethod
    def stream_error(status: int, *, message: str | None = None) -> StreamErrorReply:
        """A 200 stream that reports an error with this HTTP status before any content."""
        return StreamErrorReply(status, message or f"fake upstream error {status}")

    @staticmethod
    def cut(*, after_chunks: int = 1) -> CutReply:
        """Stream `after_chunks` text deltas, then drop the connection before the end."""
        return CutReply(after_chunks=after_chunks)

    @staticmethod
    def malformed() -> MalformedReply:
        """A stream whose first content event is not JSON."""
        return MalformedReply()

    @staticmethod
    def hang(first_text: str | None = None) -> HangReply:
        """Send headers (and `first_text`), then nothing until the client gives up."""
        return HangReply(first_text=first_text)

    @staticmethod
    def gated(first_text: str, rest: str, gate: asyncio.Event) -> GatedReply:
        """Send `first_text`, then `rest` and the end once the test sets `gate`."""
        return GatedReply(first_text, rest, gate)


@dataclass(frozen=True)
class TextReply(Reply):
    pieces: tuple[str, ...]
    reasoning: tuple[str, ...] = ()
    delay: float = 0.0
    usage: Tokens | bool = True

    async def play(self, wire: Wire) -> None:
        encoder = wire.encoder
        usage = wire.usage(self.usage, len(self.reasoning) + len(self.pieces))
        await wire.start()
        await wire.send(encoder.opening(usage))
        for piece in self.reasoning:
            await wire.pause(self.delay)
            await wire.send(encoder.thinking(piece))
        for piece in self.pieces:
            await wire.pause(self.delay)
            await wire.send(encoder.text(piece))
        await wire.send(encoder.closing("stop", usage))
        await wire.end()


@dataclass(frozen=True)
class ToolCallsReply(Reply):
    calls: tuple[tuple[str, str], ...]
    """(name, arguments as a JSON string) per call."""
    fragments: int = 4
    text_pieces: tuple[str, ...] = ()
    usage: Tokens | bool = True

    async def play(self, wire: Wire) -> None:
        encoder = wire.encoder
        usage = wire.usage(self.usage, len(self.text_pieces) + self.fragments * len(self.calls))
        calls = wire.calls(self.calls)
        await wire.start()
        await wire.send(encoder.opening(usage))
        for piece in self.text_pieces:
            await wire.send(encoder.text(piece))
        await wire.send(encoder.tool_calls(calls, self.fragments))
        await wire.send(encoder.closing("tool_calls", usage))
        await wire.end()


@dataclass(frozen=True)
class StructuredReply(Reply):
    answer: str
    reasoning: tuple[str, ...] = ()
    extra_calls: tuple[tuple[str, str], ...] = ()

    async def play(self, wire: Wire) -> None:
        encoder = wire.encoder
        usage = wire.usage(True, len(self.reasoning) + 3 + len(self.extra_calls))
        await wire.start()
        await wire.send(encoder.opening(usage))
        for piece in self.reasoning:
            await wire.send(encoder.thinking(piece))
        frames, finish = encoder.structured(self.answer)
        await wire.send(frames)
        if self.extra_calls:
            calls = wire.calls(self.extra_calls)
            await wire.send(encoder.tool_calls(calls, 2))
            finish = "tool_calls"
        await wire.send(encoder.closing(finish, usage))
        await wire.end()


@dataclass(frozen=True)
class ErrorReply(Reply):
    status: int
    message: str
    retry_after: str | None = None
    body: bytes | None = None

    async def play(self, wire: Wire) -> None:
        headers, body = type(wire.encoder).error_response(
            self.status, self.message, self.retry_after
        )
        await wire.error(self.status, headers, body if self.body is None else self.body)


@dataclass(frozen=True)
class StreamErrorReply(Reply):
    status: int
    message: str

    async def play(self, wire: Wire) -> None:
        await wire.start()
        await wire.send(wire.encoder.opening(wire.usage(True, 0)))
        await wire.send(wire.encoder.stream_error(self.status, self.message))
        await wire.end()


@dataclass(frozen=True)
class CutReply(Reply):
    after_chunks: int = 1

    async def play(self, wire: Wire) -> None:
        await wire.start()
        await wire.send(wire.encoder.opening(wire.usage(True, self.after_chunks)))
        for n in range(self.after_chunks):
            await wire.send(wire.encoder.text(f"part{n} "))
        wire.cut()


@dataclass(frozen=True)
class MalformedReply(Reply):
    async def play(self, wire: Wire) -> None:
        await wire.start()
        await wire.send(wire.encoder.opening(wire.usage(True, 0)))
        await wire.send([wire.encoder.malformed()])
        await wire.end()


@dataclass(frozen=True)
class HangReply(Reply):
    first_text: str | None = None

    async def play(self, wire: Wire) -> None:
        await wire.start()
        if self.first_text is not None:
            await wire.send(wire.encoder.opening(wire.usage(True, 1)))
            await wire.send(wire.encoder.text(self.first_text))
        await wire.wait_for_disconnect()


@dataclass(frozen=True)
class GatedReply(Reply):
    first_text: str
    rest: str
    gate: asyncio.Event

    async def play(self, wire: Wire) -> None:
        encoder = wire.encoder
        usage = wire.usage(True, 2)
        await wire.start()
        await wire.send(encoder.opening(usage))
        await wire.send(encoder.text(self.first_text))
        await self.gate.wait()
        await wire.send(encoder.text(self.rest))
        await wire.send(encoder.closing("stop", usage))
        await wire.end()


def _default_responder(body: Body) -> Reply:
    return Reply.text("Hello from the fake model.")


@dataclass(frozen=True)
class Requested:
    """The native structured output a request asked for, read the vendor's way."""

    name: str
    """The shape's name where the vendor's field carries one, else ""."""
    schema: Body | None
    """The JSON Schema the answer is held to; None: any JSON object."""


@dataclass(frozen=True)
class Request:
    """What the client sent, as the server read it."""

    method: str
    target: str
    """The path and query string."""
    headers: dict[str, str]
    """Names in lower case."""
    body: bytes


class ScriptedServer(ABC):
    """The server; see the module docstring. Enter it to listen, leave it to stop."""

    encoder: ClassVar[type[Encoder]]
    base_path: ClassVar[str]
    """What the vendor's base URL ends with, e.g. "/v1"."""

    def __init__(self, responder: Callable[[Body], Reply] = _default_responder) -> None:
        self.responder = responder
        self.requests: list[Body] = []
        """JSON bodies of the chat requests received, in order."""
        self.headers: list[dict[str, str]] = []
        """Their headers, names in lower case."""
        self.targets: list[str] = []
        """Their paths and query strings."""
        self.disconnected = asyncio.Event()
        """Set when a client dropped a streamed answer before it was complete."""
        self.connections = 0
        """TCP connections accepted: shows whether clients reuse pooled connections."""
        self.trickle: int | None = None
        """When set, every frame goes out in pieces of this many bytes."""
        self.refuses_native = False
        """When set, a request asking for native structured output gets a 400 naming its field."""
        self.call_ids: CallIds = "unique"
        """How the tool calls of each response are named."""
        self._queue: deque[Reply] = deque()
        self._calls = 0
        self._handlers: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None
        self.base_url = ""

    @abstractmethod
    def is_chat(self, request: Request) -> bool:
        """Whether the request is for the vendor's streaming chat endpoint."""

    refused_native: ClassVar[str]
    """What the vendor (or a server speaking its API) says refusing the structured-output field."""

    def refusal(self, request: Request, body: Body) -> Reply | None:
        """The error the vendor answers a request it does not accept with, if any."""
        return None

    @abstractmethod
    def requested(self, body: Body) -> Requested | None:
        """The native structured output the request asks for, if any."""

    @abstractmethod
    def system_text(self, body: Body) -> str:
        """The request's system prompt, wherever the vendor puts it."""

    @abstractmethod
    def tool_result_count(self, body: Body) -> int:
        """How many tool results the conversation sent has in it."""

    def has_tool_results(self, body: Body) -> bool:
        return self.tool_result_count(body) > 0

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order, before asking the responder."""
        self._queue.extend(replies)

    def new_call_ids(self, count: int) -> list[str | None]:
        """The ids of one response's `count` calls, as `call_ids` says."""
        if self.call_ids == "missing":
            return [None] * count
        if self.call_ids == "reused":
            return [f"call_{n}" for n in range(1, count + 1)]
        if self.call_ids == "repeated":
            return [self._new_call_id()] * count
        return [self._new_call_id() for _ in range(count)]

    def _new_call_id(self) -> str:
        self._calls += 1
        return f"call_fake{self._calls}"

    async def __aenter__(self) -> Self:
        # Listening starts here, so a client may connect before this returns.
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}{self.base_path}"
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
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        request = Request(method, target, headers, raw)
        if not self.is_chat(request):
            wire = Wire(self, self.encoder({}, ""), reader, writer)
            await Reply.error(404, message=f"no route {method} {target}").play(wire)
            return True, b""
        body: Body = orjson.loads(raw)
        self.requests.append(body)
        self.headers.append(headers)
        self.targets.append(target)
        reply = self.refusal(request, body)
        if reply is None and self.refuses_native and self.requested(body) is not None:
            reply = Reply.error(400, message=self.refused_native)
        if reply is None:
            reply = self._queue.popleft() if self._queue else self.responder(body)
        wire = Wire(self, self.encoder(body, f"fake-response-{len(self.requests)}"), reader, writer)
        try:
            await reply.play(wire)
        except _ClientGone:
            self.disconnected.set()
            return False, b""
        finally:
            await wire.stop_watching()
        return wire.keep_alive, wire.leftover
