"""A fake OpenAI-compatible model for the benchmark: streams N tokens, one every D ms.

It must cost next to nothing, since it shares two cores with the service it
feeds: an `asyncio.Protocol` with httptools' request parser (no ASGI, no
per-request task), every frame encoded once at start-up, one timer per
stream. With a zero delay the whole answer goes out in one write, which is
the hardest case for a reader: every token arrives at once.

    POST /v1/chat/completions   the streamed answer (the request body is not read)
    GET  /config?tokens=N&delay_ms=D   change the answer for the requests that follow
    GET  /health

Left out: tools, errors, and anything of the request but its path: the
benchmark prices the layers on top of the model, not the model.

    python -m bench.upstream --port 9000 --tokens 20 --delay-ms 20
"""

from __future__ import annotations

import argparse
import asyncio
from typing import cast
from urllib.parse import parse_qs, urlsplit

import httptools
import orjson

from bench.procs import fast_event_loop, raise_open_files_limit

_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream\r\n"
    b"Cache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def _chunk(payload: bytes) -> bytes:
    frame = b"data: " + payload + b"\n\n"
    return b"%x\r\n%b\r\n" % (len(frame), frame)


def _delta(delta: dict[str, object], finish: str | None) -> bytes:
    return _chunk(
        orjson.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )
    )


class Answer:
    """Every frame of one answer, encoded once and shared by every stream.

    Tokens repeat a cycle of `_DISTINCT` words, so a near-endless answer
    (the stop scenario asks for a million tokens) costs no more to set up.
    """

    _DISTINCT = 64

    def __init__(self, tokens: int, delay_ms: float) -> None:
        self.tokens = tokens
        self.delay = delay_ms / 1000
        self.first = _delta({"role": "assistant", "content": "w0 "}, None)
        self.cycle = [_delta({"content": f"w{i} "}, None) for i in range(self._DISTINCT)]
        usage = {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}
        self.tail = (
            _delta({}, "stop")
            + _chunk(
                orjson.dumps(
                    {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "choices": []}
                    | {"usage": usage}
                )
            )
            + _chunk(b"[DONE]")
            + b"0\r\n\r\n"
        )
        self.whole = b""
        """The whole response in one piece, for a zero delay (the only case that sends it)."""
        if self.delay <= 0:
            self.whole = b"".join([_HEAD, *(self.token(i) for i in range(tokens)), self.tail])

    def token(self, index: int) -> bytes:
        return self.first if index == 0 else self.cycle[index % self._DISTINCT]


class Upstream:
    def __init__(self, tokens: int, delay_ms: float) -> None:
        self.answer = Answer(tokens, delay_ms)


class _Connection(asyncio.Protocol):
    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.transport = None

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            if self.transport is not None:
                self.transport.close()

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_message_complete(self) -> None:
        url, self.url = self.url, b""
        if self.transport is None:
            return
        parts = urlsplit(url.decode())
        if parts.path.endswith("/chat/completions"):
            self._stream(self.upstream.answer)
        elif parts.path == "/config":
            query = parse_qs(parts.query)
            answer = self.upstream.answer
            self.upstream.answer = Answer(
                int(query.get("tokens", [answer.tokens])[0]),
                float(query.get("delay_ms", [answer.delay * 1000])[0]),
            )
            self._reply(b"200 OK", b"ok")
        elif parts.path == "/health":
            self._reply(b"200 OK", b"ok")
        else:
            self._reply(b"404 Not Found", b"not found")

    def _reply(self, status: bytes, body: bytes) -> None:
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 %b\r\nContent-Length: %d\r\n\r\n%b" % (status, len(body), body)
        )

    def _stream(self, answer: Answer) -> None:
        assert self.transport is not None
        if answer.delay <= 0:
            self.transport.write(answer.whole)
            return
        self.transport.write(_HEAD + answer.token(0))
        self._next(answer, 1)

    def _next(self, answer: Answer, index: int) -> None:
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(answer.delay, self._send, answer, index)

    def _send(self, answer: Answer, index: int) -> None:
        self.timer = None
        if self.transport is None:
            return
        if index < answer.tokens:
            self.transport.write(answer.token(index))
            self._next(answer, index + 1)
        else:
            self.transport.write(answer.tail)


async def serve(host: str, port: int, upstream: Upstream) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Connection(upstream), host, port, backlog=4096)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    args = parser.parse_args()
    raise_open_files_limit()
    fast_event_loop(serve(args.host, args.port, Upstream(args.tokens, args.delay_ms)))


if __name__ == "__main__":
    main()
