"""Remote A2A agents: their cards, kept fresh, and one delegated message at a time.

`A2A_AGENTS` lists them by base URL, each with an optional key
(`URL|KEY`). Their cards are resolved when the app starts and again every
`A2A_REFRESH_SECONDS`; one that cannot be reached (or answers no valid
card) is logged and left out until a later refresh finds it, and never
stops the app from starting.

The URLs are the operator's, not a model's or a user's, so the SSRF guard
(`app/core/outbound.py`) does not apply; it could not anyway, as the SDK
speaks `httpx` and the guard wraps the `httpx2` network layer.

    RemoteError            base: `str()` is fit to show a model
    └── RemoteUnavailable  the agent is not (or no longer) known
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field

import httpx
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct

from app.config import Settings
from app.core.events import Reference
from app.core.urls import public_url
from app.tools.a2a_parts import text_of

log = logging.getLogger(__name__)

CANCEL_SECONDS = 10.0
"""How long a stop waits for the remote agent to confirm its task was canceled."""
CONNECT_SECONDS = 10.0


class RemoteError(Exception):
    pass


class RemoteUnavailable(RemoteError):
    pass


@dataclass(frozen=True, slots=True)
class RemoteConfig:
    url: str
    key: str = field(default="", repr=False)


def parse_remotes(value: str) -> list[RemoteConfig]:
    """`URL` or `URL|KEY`, comma-separated (`|` never appears in a URL unescaped)."""
    remotes = []
    for item in value.split(","):
        url, _, key = item.strip().partition("|")
        if url.strip():
            remotes.append(RemoteConfig(url.strip().rstrip("/"), key.strip()))
    return remotes


@dataclass(slots=True)
class RemoteAgent:
    """One remote agent as its card describes it, with the client that calls it."""

    config: RemoteConfig
    card: AgentCard
    client: Client
    tool_name: str


@dataclass(slots=True)
class RemoteReply:
    """What a delegated message came back with."""

    task_id: str = ""
    state: str = "working"
    """`completed`, `input_required`, `failed`, `canceled`, ... (A2A's state, lower case)."""
    text: list[str] = field(default_factory=list)
    status: str = ""
    """The last status message: a question when input is required, a reason when it failed."""
    references: list[Reference] = field(default_factory=list)
    files: list[RemoteFile] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RemoteFile:
    name: str
    url: str
    mime_type: str


Progress = Callable[[str], None]
"""Told what the remote agent is doing (its task id once known, its status messages)."""


class RemoteAgents:
    """The remote agents the host agent may call, by tool name."""

    def __init__(self, remotes: list[RemoteConfig], refresh_seconds: float, timeout: float):
        self._remotes = remotes
        self._refresh_seconds = refresh_seconds
        self._timeout = timeout
        self._http: dict[str, httpx.AsyncClient] = {}
        self._agents: dict[str, RemoteAgent] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> RemoteAgents:
        return cls(
            parse_remotes(settings.a2a_agents.get_secret_value()),
            settings.a2a_refresh_seconds,
            settings.a2a_timeout_seconds,
        )

    def available(self) -> list[RemoteAgent]:
        return list(self._agents.values())

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[RemoteAgents]:
        """Resolve the cards now, then again every period, until the app stops."""
        for remote in self._remotes:
            headers = {"Authorization": f"Bearer {remote.key}"} if remote.key else {}
            timeout = httpx.Timeout(self._timeout, connect=CONNECT_SECONDS)
            self._http[remote.url] = httpx.AsyncClient(headers=headers, timeout=timeout)
        refresher: asyncio.Task[None] | None = None
        try:
            await self.refresh()
            if self._remotes:
                refresher = asyncio.create_task(self._refresh_forever())
            yield self
        finally:
            if refresher is not None:
                refresher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await refresher
            for http in self._http.values():
                await http.aclose()
            self._http.clear()
            self._agents.clear()

    async def refresh(self) -> None:
        """Read every card again; the ones read replace the known agents."""
        cards = await asyncio.gather(*(self._card(remote) for remote in self._remotes))
        agents: dict[str, RemoteAgent] = {}
        for remote, card in zip(self._remotes, cards, strict=True):
            if card is None:
                continue
            name = _tool_name(card.name, agents)
            try:
                client = ClientFactory(
                    ClientConfig(httpx_client=self._http[remote.url], streaming=True)
                ).create(card)
            except ValueError as exc:
                log.warning("A2A agent at %s: %s; skipped", public_url(remote.url), exc)
                continue
            agents[name] = RemoteAgent(remote, card, client, name)
        self._agents = agents

    async def ask(
        self, tool_name: str, text: str, skill: str | None, progress: Progress
    ) -> RemoteReply:
        """Send `text` (to `skill`, when named) and follow the task to its end.

        Cancelled (the host's turn was stopped), it cancels the remote task
        before it lets go, so the remote agent stops working too.
        """
        agent = self._agents.get(tool_name)
        if agent is None:
            raise RemoteUnavailable(f"The agent {tool_name} is not available now")
        reply = RemoteReply()
        try:
            async for response in agent.client.send_message(_request(text, skill)):
                _apply(reply, response, progress)
        except asyncio.CancelledError:
            if reply.task_id and reply.state == "working":
                await self._cancel(agent, reply.task_id)
            raise
        except (A2AError, A2AClientError, httpx.HTTPError) as exc:
            raise RemoteError(f"{agent.card.name} failed: {exc}") from exc
        return reply

    async def _cancel(self, agent: RemoteAgent, task_id: str) -> None:
        """Cancel the remote task, within a bound, whatever cancels this one meanwhile."""
        cancel = asyncio.ensure_future(agent.client.cancel_task(CancelTaskRequest(id=task_id)))
        try:
            # Not `wait_for`: on Python 3.11 it can swallow a cancel of this task (gh-86296).
            async with asyncio.timeout(CANCEL_SECONDS):
                await asyncio.shield(cancel)
        except (A2AError, A2AClientError, httpx.HTTPError, TimeoutError) as exc:
            log.warning("could not cancel task %s of %s: %s", task_id, agent.card.name, exc)

    async def _card(self, remote: RemoteConfig) -> AgentCard | None:
        try:
            return await A2ACardResolver(self._http[remote.url], remote.url).get_agent_card()
        except (A2AClientError, httpx.HTTPError, ValueError) as exc:
            log.warning(
                "A2A agent at %s unreachable or without a valid card, skipped: %s",
                public_url(remote.url),
                type(exc).__name__,
            )
            return None

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self._refresh_seconds)
            await self.refresh()


def _request(text: str, skill: str | None) -> SendMessageRequest:
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)])
    if skill:
        metadata = Struct()
        metadata.update({"skill": skill})
        message.metadata.CopyFrom(metadata)
    return SendMessageRequest(message=message)


def _apply(reply: RemoteReply, response: StreamResponse, progress: Progress) -> None:
    """Fold one streamed response into the reply."""
    if response.HasField("task"):
        task = response.task
        if not reply.task_id:
            reply.task_id = task.id
            progress(f"task {task.id}")
        reply.state = _state(task.status.state)
        reply.status = text_of(task.status.message.parts)
        for artifact in task.artifacts:
            _artifact(reply, artifact.name, artifact.parts)
    elif response.HasField("status_update"):
        update = response.status_update
        reply.state = _state(update.status.state)
        reply.status = text_of(update.status.message.parts)
        if reply.status and reply.state == "working":
            progress(reply.status)
    elif response.HasField("artifact_update"):
        art = response.artifact_update.artifact
        _artifact(reply, art.name, art.parts)


def _artifact(reply: RemoteReply, name: str, parts: Iterable[Part]) -> None:
    """Text is the answer; URL parts are files; data parts listing `url`s are references."""
    for part in parts:
        if part.HasField("text"):
            reply.text.append(part.text)
        elif part.HasField("url"):
            reply.files.append(RemoteFile(part.filename or name, part.url, part.media_type))
        elif part.HasField("data"):
            reply.references.extend(Reference.listed(MessageToDict(part.data)))


def _state(state: int) -> str:
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower()


def _tool_name(card_name: str, taken: dict[str, RemoteAgent]) -> str:
    """`a2a_<card name>`, as a model's tool names must be; numbered when two agents share one."""
    base = "a2a_" + (re.sub(r"[^a-z0-9]+", "_", card_name.lower()).strip("_") or "agent")
    base = base[:56]
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}_{number}"
    return name
