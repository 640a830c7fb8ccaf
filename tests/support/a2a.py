"""The a2a-sdk's own client pointed at a running service, and readers of what it answers."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct

from app.agents.base import BaseAgent
from app.agents.registry import AGENTS, AgentEntry
from app.agents.turn import AgentCore, Turn, TurnState
from app.config import Settings
from app.core.events import Event, TextEvent
from app.documents.library import generated_event


@contextlib.asynccontextmanager
async def a2a_client(
    service: httpx.AsyncClient,
    key: str | None = None,
    *,
    streaming: bool = True,
    bindings: list[str] | None = None,
) -> AsyncIterator[Client]:
    """A client of the service at `service.base_url`, its card resolved the way the SDK does.

    `bindings`: the transports it may use, in order (JSON-RPC when left out).
    """
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx.AsyncClient(headers=headers, timeout=10) as http:
        config = ClientConfig(
            httpx_client=http,
            streaming=streaming,
            supported_protocol_bindings=bindings or [],
            use_client_preference=bindings is not None,
        )
        client = await create_client(str(service.base_url), config)
        async with client:
            yield client


def message(
    text: str,
    context_id: str = "",
    task_id: str = "",
    **metadata: Any,
) -> SendMessageRequest:
    """A user's text message, `metadata` (e.g. `skill`) on the message."""
    msg = Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )
    if metadata:
        data = Struct()
        data.update(metadata)
        msg.metadata.CopyFrom(data)
    return SendMessageRequest(message=msg)


def state_name(state: int) -> str:
    """`TASK_STATE_COMPLETED` -> `completed`, for readable assertions."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower()


def states(responses: list[StreamResponse]) -> list[str]:
    """The states the stream went through, repeats folded."""
    out: list[str] = []
    for response in responses:
        state = None
        if response.HasField("task"):
            state = state_name(response.task.status.state)
        elif response.HasField("status_update"):
            state = state_name(response.status_update.status.state)
        if state is not None and (not out or out[-1] != state):
            out.append(state)
    return out


def answer_of(responses: list[StreamResponse]) -> str:
    """The `answer` artifact's text, as its chunks came."""
    return "".join(
        part.text
        for response in responses
        if response.HasField("artifact_update")
        and response.artifact_update.artifact.artifact_id == "answer"
        for part in response.artifact_update.artifact.parts
    )


def artifact_text(task: Task, artifact_id: str) -> str:
    for artifact in task.artifacts:
        if artifact.artifact_id == artifact_id:
            return "".join(part.text for part in artifact.parts)
    raise AssertionError(f"no artifact {artifact_id}: {[a.artifact_id for a in task.artifacts]}")


def artifact_data(task: Task, artifact_id: str) -> Any:
    for artifact in task.artifacts:
        if artifact.artifact_id == artifact_id:
            return MessageToDict(artifact.parts[0].data)
    raise AssertionError(f"no artifact {artifact_id}: {[a.artifact_id for a in task.artifacts]}")


def status_text(response: StreamResponse) -> str:
    status = response.status_update.status if response.HasField("status_update") else None
    if status is None:
        return ""
    return "".join(part.text for part in status.message.parts)


REPORT_BYTES = b"Heat pumps: a report.\n"


class ReportAgent(BaseAgent):
    """Writes a short answer and hands back a generated file, as the deck builder does."""

    agent_type = "pptx"

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        assert self.core.documents is not None
        stored = await self.core.documents.add_generated(
            turn.user_id, turn.conversation_id, "report.txt", REPORT_BYTES, "text/plain"
        )
        yield TextEvent("Here is the report.")
        yield generated_event(stored)


def with_report_agent() -> list[AgentEntry]:
    """The registry with the PowerPoint kind answered by `ReportAgent`."""

    def factory(core: AgentCore, settings: Settings) -> BaseAgent:
        return ReportAgent(core)

    return [
        dataclasses.replace(entry, factory=factory) if entry.kind == "pptx" else entry
        for entry in AGENTS
    ]
