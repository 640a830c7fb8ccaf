"""The OpenAPI document describes every event stream: `text/event-stream` of the event union.

Read as a client generator reads it, from `/openapi.json`: each stream
operation's 200 is `text/event-stream` whose schema is `AgentEvent`, a
`oneOf` with a discriminator on `type` naming every kind of event the
service has; its errors are the envelope. Then frames of real turns (a
search with its tools and references, a model failure) are validated
against that document, so the document and the frames cannot drift apart.
"""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs

from app.agents.registry import AGENTS
from app.core.events import Event
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import ask, running_service, service_settings
from tests.support.sse import collect

UNION = "#/components/schemas/AgentEvent"
ENVELOPE = "#/components/schemas/ErrorEnvelope"


def event_types() -> set[str]:
    """Every `type` the service's events have (app/core/events.py)."""
    return {
        str(next(f.default for f in fields(kind) if f.name == "type"))
        for kind in typing.get_args(Event)
    }


def stream_operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (path, method): operation
        for path, item in document["paths"].items()
        if path.startswith("/agent/") and path.endswith(("/stream", "/resume"))
        for method, operation in item.items()
    }


async def test_every_stream_is_documented_as_the_event_union(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        document = (await client.get("/openapi.json")).json()

    streams = stream_operations(document)
    kinds = {path.split("/")[2] for path, _ in streams} - {"resume"}
    assert kinds == {entry.kind for entry in AGENTS}
    assert ("/agent/resume", "get") in streams
    # The other wire formats' streams are not our frames, and do not say they are.
    for path, item in document["paths"].items():
        if path.startswith(("/ag-ui/", "/ai-sdk/")):
            for operation in item.values():
                assert UNION not in str(operation["responses"]["200"])
    for operation in streams.values():
        responses = operation["responses"]
        assert responses["200"]["content"] == {"text/event-stream": {"schema": {"$ref": UNION}}}
        errors = [r for status, r in responses.items() if status[0] == "4"]
        assert errors
        assert all(r["content"]["application/json"]["schema"]["$ref"] == ENVELOPE for r in errors)
    union = document["components"]["schemas"]["AgentEvent"]
    assert union["discriminator"]["propertyName"] == "type"
    assert set(union["discriminator"]["mapping"]) == event_types()
    assert sorted(r["$ref"] for r in union["oneOf"]) == sorted(
        union["discriminator"]["mapping"].values()
    )


def frame_validator(document: dict[str, Any]) -> jsonschema_rs.Validator:
    """Validates one frame's `data:` object against the document's event union."""
    schema = {"$ref": UNION, "components": document["components"]}
    return jsonschema_rs.validator_for(schema)


async def test_streamed_frames_match_the_documented_union(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "heat pumps"})]),
        Reply.text("They work [1].", reasoning="Read it."),
        Reply.error(400, message="bad request"),
    )
    settings = service_settings(
        tmp_path,
        sqlite_url,
        llm_base_url=fake_llm.base_url,
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
        recommendations_enabled=False,
    )
    async with running_service(settings) as client:
        document = (await client.get("/openapi.json")).json()
        searched = await ask(client, "Do heat pumps work?", "conv-1")
        failed = await ask(client, "And in winter?", "conv-2")
        resumed = await resume(client, "conv-2")

    validator = frame_validator(document)
    frames = [*searched, *failed, *resumed]
    seen = {frame["type"] for frame in frames}
    assert {"start", "thinking", "tool_start", "tool_end", "text", "reference"} <= seen
    assert {"error", "complete"} <= seen
    for frame in frames:
        errors = [e.message for e in validator.iter_errors(frame)]
        assert not errors, (frame, errors)
    assert not validator.is_valid({"type": "text"})
    assert not validator.is_valid({"type": "no_such_event", "content": "x"})


async def resume(client: httpx.AsyncClient, conversation: str) -> list[dict[str, Any]]:
    """The just-finished run's events again, through `/agent/resume`."""
    async with client.stream(
        "GET", "/agent/resume", params={"conversationId": conversation}
    ) as response:
        assert response.status_code == 200
        return await collect(response)
