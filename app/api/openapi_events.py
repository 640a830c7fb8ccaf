"""The OpenAPI document says what a stream carries: the event union, told apart by `type`.

FastAPI can only say that a stream is `text/event-stream` of some string.
A client generated from that would know nothing of the frames, so every
operation that answers an event stream gets, as the schema of that media
type, `AgentEvent`: a `oneOf` of the frame objects with a discriminator on
`type`. The schema is of one frame's `data:` object (an SSE body is a
sequence of them: `id: <n>`, `data: <one object>`, a blank line; `: ping`
comments between). It comes from the same declaration that encodes the
frames (app/core/events.py), so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from app.api.openapi_errors import amend_openapi
from app.core.events import event_schema

EVENT_UNION = "AgentEvent"
STREAM_TYPE = "text/event-stream"


def document_events(app: FastAPI) -> None:
    """Make `app.openapi()` describe every event stream's frames; call once routes are added."""
    amend_openapi(app, _with_events)


def _with_events(document: dict[str, Any]) -> dict[str, Any]:
    union = event_schema(ref_template="#/components/schemas/{model}")
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    clashes = set(union.get("$defs", {})) & set(schemas)
    assert not clashes, f"event schemas named like the API's own: {clashes}"
    schemas.update(union.pop("$defs", {}))
    schemas[EVENT_UNION] = {
        **union,
        "title": EVENT_UNION,
        "description": "The `data:` object of one frame of an event stream, by `type`.",
    }
    stream = {"schema": {"$ref": f"#/components/schemas/{EVENT_UNION}"}}
    for route, path in document.get("paths", {}).items():
        if not route.startswith("/agent/"):
            continue  # AG-UI's, the AI SDK's and A2A's streams carry their own formats
        for operation in path.values():
            ok = operation.get("responses", {}).get("200", {})
            content: dict[str, Any] = ok.get("content", {})
            if any(media.startswith(STREAM_TYPE) for media in content):
                ok["content"] = {STREAM_TYPE: stream}
                ok["description"] = (
                    "The event stream: frames of `id: <n>` and `data: <one AgentEvent as JSON>`, "
                    "`: ping` comments while idle; it ends after `complete`."
                )
    return document
