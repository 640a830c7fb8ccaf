"""The benchmark's client: many concurrent SSE streams, timed, from a process of its own.

A client built on httpx spends more CPU per event than the servers it is
meant to measure, so this one is lean: an `asyncio.Protocol` per connection,
httptools' response parser (it also undoes chunked encoding), and a frame
scan that looks for a byte pattern instead of decoding each event's JSON.
Each of `--concurrency` workers holds one keep-alive connection and runs
streams back to back until `--streams` have been started.

What it times, per stream, from the moment the request is written:
- the first *model* event: a `text` event (service, proxy) or a chunk with
  `content` (the upstream read directly); the service's earlier `start` and
  notice events do not count, so the figure compares like with like;
- the gap between consecutive model events, as seen by the client (events
  that arrive in one read have a gap of zero);
- the end: a `complete` event (its `status` is tallied) and the end of the body.

With `--timings` the report also lists each stream's send and first model
event on the wall clock (the one OpenTelemetry stamps spans with), and with
`--traceparent` each request carries a W3C `traceparent` whose trace id is
the stream's number plus one, so a traced server's spans of that stream can
be found (bench.startbreakdown).

With `--stop-url` it measures stops instead: one stream at a time is opened,
and once its first model event arrives a stop for its conversation is sent
to `--stop-url` (the same instance, or another); the figure is the time from
writing the stop request to reading the stream's `complete`.

It prints one JSON object on stdout (see `Report`), and gives up on streams
still running after `--timeout` seconds, counting them as not completed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import cast
from urllib.parse import urlsplit

import httptools
import orjson

from bench.procs import fast_event_loop, raise_open_files_limit

TOKEN_MARKERS = {"service": b'"type":"text"', "proxy": b'"type":"text"', "openai": b'"content":'}
COMPLETE_MARKER = b'"type":"complete"'
ERROR_MARKER = b'"type":"error"'
UPSTREAM_BODY = orjson.dumps(
    {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
)


class StreamFailed(Exception):
    pass


@dataclass(slots=True)
class Stream:
    """One request's timings; times are `time.perf_counter()` seconds."""

    index: int = -1
    sent: float = 0.0
    first_event: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    complete_at: float | None = None
    status: str | None = None
    events: int = 0
    tokens: int = 0
    error: str | None = None
    gaps: list[float] = field(default_factory=list)


class Connection(asyncio.Protocol):
    """One keep-alive connection; `request()` sends one request and returns its `Stream`."""

    def __init__(self, token_marker: bytes) -> None:
        self._marker = token_marker
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._stream = Stream()
        self._buffer = b""
        self._now = 0.0
        self._done: asyncio.Future[None] | None = None
        self.first_token: asyncio.Event | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self._transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._finish(StreamFailed("connection closed"))

    def data_received(self, data: bytes) -> None:
        self._now = time.perf_counter()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._finish(StreamFailed(f"bad response: {exc}"))
            if self._transport is not None:
                self._transport.close()

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status != 200:
            self._stream.error = f"HTTP {status}"

    def on_body(self, body: bytes) -> None:
        if self._stream.error and self._stream.error.startswith("HTTP") and body.startswith(b"{"):
            # An error answer: its message says which dependency failed.
            message = orjson.loads(body).get("message", "")
            self._stream.error += f" {message}"
            return
        frames = (self._buffer + body).split(b"\n\n")
        self._buffer = frames.pop()
        stream, now = self._stream, self._now
        for frame in frames:
            if frame.startswith(b":"):
                continue
            stream.events += 1
            if stream.first_event is None:
                stream.first_event = now
            if self._marker in frame:
                stream.tokens += 1
                if stream.last_token is None:
                    stream.first_token = now
                    if self.first_token is not None:
                        self.first_token.set()
                else:
                    stream.gaps.append(now - stream.last_token)
                stream.last_token = now
            elif COMPLETE_MARKER in frame:
                stream.complete_at = now
                stream.status = _status(frame)
            elif ERROR_MARKER in frame and stream.error is None:
                stream.error = "error event"

    def on_message_complete(self) -> None:
        self._finish(None)

    async def request(self, raw: bytes) -> Stream:
        if self._transport is None or self.closed:
            raise StreamFailed("connection closed")
        self._stream = Stream(sent=time.perf_counter())
        self._buffer = b""
        self._done = asyncio.get_running_loop().create_future()
        self._transport.write(raw)
        await self._done
        return self._stream

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def _finish(self, error: Exception | None) -> None:
        done, self._done = self._done, None
        if done is None or done.done():
            return
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


def _status(frame: bytes) -> str:
    data = frame[frame.index(b"data: ") + 6 :].split(b"\n", 1)[0]
    return str(orjson.loads(data).get("status"))


def http_request(
    method: str, host: str, target: str, body: bytes = b"", extra_head: str = ""
) -> bytes:
    head = f"{method} {target} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n"
    head += extra_head
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def connect(base_url: str, marker: bytes) -> Connection:
    parts = urlsplit(base_url)
    loop = asyncio.get_running_loop()
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    _, conn = await loop.create_connection(lambda: Connection(marker), host, port)
    return conn


@dataclass(slots=True)
class Report:
    streams: int
    completed: int
    """Streams whose body ended with, for the service, a `complete` of status `completed`."""
    statuses: dict[str, int]
    errors: dict[str, int]
    wall_seconds: float
    events: int
    tokens: int
    turns_per_second: float
    events_per_second: float
    first_token_ms: dict[str, float]
    first_event_ms: dict[str, float]
    """Any event, the service's `start` included: the time its set-up takes before the model."""
    gap_ms: dict[str, float]
    stop_ms: dict[str, float] | None = None
    timings: list[tuple[int, float, float]] | None = None
    """With `--timings`: (stream number, sent, first model event), wall-clock seconds."""


def traceparent(index: int) -> str:
    """The W3C trace context of stream `index`: trace id index + 1 (never all zeros)."""
    return f"traceparent: 00-{index + 1:032x}-{1:016x}-01\r\n"


def percentiles(values: list[float]) -> dict[str, float]:
    """p50, p99 and max in milliseconds (nearest rank); zeros when there are no values."""
    if not values:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0, "n": 0}
    ordered = sorted(values)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered)) - 1))] * 1000

    return {"p50": rank(0.50), "p99": rank(0.99), "max": ordered[-1] * 1000, "n": len(ordered)}


class Load:
    """The state shared by the workers of one run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.marker = TOKEN_MARKERS[args.kind]
        self.host = urlsplit(args.url).netloc
        self.body = UPSTREAM_BODY if args.kind == "openai" else b""
        self.method = "POST" if self.body else "GET"
        self.next_index = 0
        self.results: list[Stream] = []
        self.errors: Counter[str] = Counter()
        self.stops: list[float] = []
        self.wall_offset = time.time() - time.perf_counter()
        """Added to a `perf_counter()` reading, the wall-clock time of that moment."""

    def take(self) -> int | None:
        if self.next_index >= self.args.streams:
            return None
        self.next_index += 1
        return self.next_index - 1

    def target(self, index: int, client: int) -> str:
        return str(self.args.path.format(n=index, run=self.args.run_id, client=client))

    async def worker(self, client: int) -> None:
        conn: Connection | None = None
        try:
            while (index := self.take()) is not None:
                try:
                    if conn is None or conn.closed:
                        conn = await connect(self.args.url, self.marker)
                    target = self.target(index, client)
                    extra = traceparent(index) if self.args.traceparent else ""
                    raw = http_request(self.method, self.host, target, self.body, extra)
                    stream = await conn.request(raw)
                    stream.index = index
                except (OSError, StreamFailed) as exc:
                    self.errors[str(exc) or type(exc).__name__] += 1
                    if conn is not None:
                        conn.close()
                    conn = None
                    continue
                self.results.append(stream)
                if stream.error:
                    self.errors[stream.error] += 1
        finally:
            if conn is not None:
                conn.close()

    async def stopper(self) -> None:
        """Open one stream at a time and stop it once it is flowing (see the module docstring)."""
        stop_host = urlsplit(self.args.stop_url).netloc
        while (index := self.take()) is not None:
            conn = await connect(self.args.url, self.marker)
            control = await connect(self.args.stop_url, b"\0")
            try:
                conn.first_token = asyncio.Event()
                conversation = f"{self.args.run_id}-stop-{index}"
                target = f"/agent/chat/stream?query=hi&conversationId={conversation}"
                running = asyncio.ensure_future(
                    conn.request(http_request("GET", self.host, target))
                )
                await asyncio.wait_for(conn.first_token.wait(), self.args.timeout)
                sent = time.perf_counter()
                await control.request(
                    http_request("GET", stop_host, f"/agent/stop?conversationId={conversation}")
                )
                stream = await running
                self.results.append(stream)
                if stream.complete_at is None:
                    self.errors["no complete after stop"] += 1
                else:
                    self.stops.append(stream.complete_at - sent)
            except (OSError, StreamFailed, TimeoutError) as exc:
                self.errors[str(exc) or type(exc).__name__] += 1
            finally:
                conn.close()
                control.close()

    async def run(self) -> Report:
        started = time.perf_counter()
        if self.args.stop_url:
            jobs = [self.stopper()]
        else:
            clients = min(self.args.concurrency, self.args.streams)
            jobs = [self.worker(client) for client in range(clients)]
        tasks = [asyncio.ensure_future(job) for job in jobs]
        _, pending = await asyncio.wait(tasks, timeout=self.args.timeout)
        for task in pending:
            task.cancel()
        if pending:
            self.errors["timed out"] += self.args.streams - len(self.results)
        await asyncio.gather(*tasks, return_exceptions=True)
        return self.report(time.perf_counter() - started)

    def report(self, wall: float) -> Report:
        results = self.results
        expect = "stopped" if self.args.stop_url else "completed"
        ok = [
            s
            for s in results
            if s.error is None and (self.args.kind != "service" or s.status == expect)
        ]
        events = sum(s.events for s in results)
        return Report(
            streams=self.args.streams,
            completed=len(ok),
            statuses=dict(Counter(s.status or "none" for s in results)),
            errors=dict(self.errors),
            wall_seconds=wall,
            events=events,
            tokens=sum(s.tokens for s in results),
            turns_per_second=len(ok) / wall if wall else 0.0,
            events_per_second=events / wall if wall else 0.0,
            first_token_ms=percentiles(
                [s.first_token - s.sent for s in results if s.first_token is not None]
            ),
            first_event_ms=percentiles(
                [s.first_event - s.sent for s in results if s.first_event is not None]
            ),
            gap_ms=percentiles([g for s in results for g in s.gaps]),
            stop_ms=percentiles(self.stops) if self.args.stop_url else None,
            timings=[
                (s.index, s.sent + self.wall_offset, s.first_token + self.wall_offset)
                for s in results
                if s.first_token is not None
            ]
            if self.args.timings
            else None,
        )


async def _main(args: argparse.Namespace) -> None:
    report = await Load(args).run()
    sys.stdout.write(orjson.dumps(asdict(report)).decode() + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="base URL of the server under test")
    parser.add_argument(
        "--kind",
        choices=sorted(TOKEN_MARKERS),
        default="service",
        help="the service's SSE (a stream completes with `complete`), the proxy's SSE"
        " (it completes when the body ends), or the upstream read directly",
    )
    parser.add_argument(
        "--path",
        default="/agent/chat/stream?query=hi&conversationId={run}-{n}",
        help="request target; {n} is the stream's number, {client} the client's (the"
        " worker running it), {run} the --run-id",
    )
    parser.add_argument("--run-id", default="bench")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--stop-url", default="", help="measure stops sent to this base URL")
    parser.add_argument(
        "--timings", action="store_true", help="report each stream's wall-clock timings"
    )
    parser.add_argument(
        "--traceparent", action="store_true", help="send each stream's own W3C traceparent"
    )
    return parser.parse_args(argv)


def main() -> None:
    raise_open_files_limit()
    fast_event_loop(_main(parse_args()))


if __name__ == "__main__":
    main()
