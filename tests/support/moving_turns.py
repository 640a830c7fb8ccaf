"""Turns that move between instances, as clients and the model see them.

`Instances` starts uvicorn processes (`ServiceProcess`) on one Redis and one
PostgreSQL, each reached directly; `Balanced` is the one address of a load
balancer in front of them (tests/support/cluster.py). A test stops, kills or
drains instances. `follow` is a client that reads a turn's stream and, when
its connection ends without `complete` (its instance drained, or died),
resumes it with its last event id: on another instance, or through the load
balancer again, as the page does. `SlowWriter` is the model:
each question has its own answer, written a word at a time, and a request to
go on from an answer cut short gets the rest of it, so a turn that moved ends
with exactly the answer it would have had.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx

from app.agents.tool_history import CONTINUE_NOTE
from tests.fakes.scripted_server import Body, Reply
from tests.support.processes import ServiceProcess
from tests.support.sse import Event, events

RESUME_PAUSE_SECONDS = 0.2
"""How long a client waits before it resumes a stream that ended without `complete`."""


class Doors(Protocol):
    """Where a client sends its requests and its resumes: `clients[n]` while `n` is live."""

    clients: list[httpx.AsyncClient]

    def live(self, besides: int | None = None) -> list[int]: ...


class Balanced:
    """A load balancer's one address: every request and every resume goes through it."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.clients = [client]

    def live(self, besides: int | None = None) -> list[int]:
        return [0]


class Instances:
    """Instances of the service with one environment, each with a client; stopped on `close`."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self._workdir = workdir
        self._env = env
        self.processes: list[ServiceProcess] = []
        self.clients: list[httpx.AsyncClient] = []
        self.down: set[int] = set()
        """Instances a client no longer sends to: drained or killed."""

    async def start(self, count: int, **env: str) -> list[httpx.AsyncClient]:
        """Start `count` instances at once, with extra environment; their clients."""
        new = [
            ServiceProcess(f"i{len(self.processes) + n}", self._workdir, {**self._env, **env})
            for n in range(count)
        ]
        self.processes.extend(new)
        await asyncio.gather(*(p.start() for p in new))
        clients = [httpx.AsyncClient(base_url=p.url, timeout=30) for p in new]
        self.clients.extend(clients)
        return clients

    def live(self, besides: int | None = None) -> list[int]:
        """The instances a client may send to, other than `besides`."""
        return [n for n in range(len(self.processes)) if n not in self.down and n != besides]

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()
        await asyncio.gather(*(p.stop() for p in self.processes))


async def read_into(response: httpx.Response, seen: list[Event]) -> None:
    """Append the response's events to `seen` until `complete`, or until its connection ends."""
    try:
        async for event in events(response):
            seen.append(event)
    except httpx.TransportError:
        pass  # the instance died mid-stream: the client resumes elsewhere


async def follow(
    cluster: Doors,
    first: int,
    params: dict[str, str],
    *,
    kind: str = "chat",
    started: asyncio.Event | None = None,
    when: Callable[[Event], bool] = lambda event: event["type"] == "text",
    within: float = 90.0,
    seen: list[Event] | None = None,
) -> list[Event]:
    """A turn sent to `cluster.clients[first]` and read to `complete`, resuming on the live
    ones (in turn) with the last event id each time its stream ends without it. Without a
    `query`, the conversation's running turn is followed from its start.

    `started` is set once the turn has shown an event `when` holds for (its first text);
    `seen`, where the events go as they come (a new list if not given).
    """
    seen = [] if seen is None else seen
    conversation = params["conversationId"]

    async def read(response: httpx.Response) -> None:
        assert response.status_code == 200, response.text
        if started is None:
            await read_into(response, seen)
            return
        try:
            async for event in events(response):
                seen.append(event)
                if when(event):
                    started.set()
        except httpx.TransportError:
            pass

    async with asyncio.timeout(within):
        path = f"/agent/{kind}/stream" if "query" in params else "/agent/resume"
        async with cluster.clients[first].stream("GET", path, params=params) as response:
            await read(response)
        last = first
        for hop in itertools.count():
            if seen and seen[-1]["type"] == "complete":
                return seen
            await asyncio.sleep(RESUME_PAUSE_SECONDS)
            choices = cluster.live(besides=last) or cluster.live()
            last = choices[hop % len(choices)]
            headers = {"Last-Event-ID": str(seen[-1]["_id"] if seen else 0)}
            try:
                async with cluster.clients[last].stream(
                    "GET",
                    "/agent/resume",
                    params={"conversationId": conversation},
                    headers=headers,
                ) as response:
                    if response.status_code == 200:
                        await read(response)
            except httpx.TransportError:
                continue
    raise AssertionError("unreachable")


def answer_for(question: str, words: int) -> str:
    return " ".join(f"{question}-{n}" for n in range(1, words + 1))


class SlowWriter:
    """The model: `words` words an answer, one every `pause` seconds; it goes on from an
    answer cut short when asked to (the request ends with the continue note)."""

    def __init__(self, words: int = 20, pause: float = 0.5) -> None:
        self.words = words
        self.pause = pause
        self.continued: list[str] = []
        """The questions whose answers the model was asked to go on with."""

    def __call__(self, body: Body) -> Reply:
        messages: list[dict[str, Any]] = body["messages"]
        question = _text(next(m for m in messages if m["role"] == "user"))
        answer = answer_for(question, self.words)
        so_far = ""
        if _text(messages[-1]) == CONTINUE_NOTE:
            so_far = _text(messages[-2])
            self.continued.append(question)
        assert answer.startswith(so_far), (answer, so_far)
        return Reply.text(answer[len(so_far) :], delay=self.pause)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def event_ids(seen: Sequence[Event]) -> list[int]:
    return [int(event["_id"]) for event in seen]


def moved(seen: Sequence[Event], notice: str) -> bool:
    """Whether the turn said it moved to another instance."""
    return any(e["type"] == "thinking" and e["content"] == notice for e in seen)
