"""The OpenAPI document says what errors look like: every 4xx and 5xx answer is the envelope.

FastAPI documents a 422 shape of its own (`HTTPValidationError`), which
this service never sends (api/errors.py answers every error as
`{code, message, data}`), and only the statuses a route names. A client
generated from the document would then misread every error. Here each
documented error status gets the envelope's schema, and each operation a
`4XX` entry for the client errors any request may meet (401 without a valid
key, 413/414/431 for sizes, 422 for bad parameters, 429 over a limit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

ERROR_ENVELOPE = "ErrorEnvelope"
_SCHEMA: dict[str, Any] = {
    "title": ERROR_ENVELOPE,
    "description": "Every error: the HTTP status as `code`, a sentence to show, and no data"
    " but, where a client may act on it, the reason as a code (`MODEL_UNKNOWN`).",
    "type": "object",
    "properties": {
        "code": {"type": "integer", "description": "The HTTP status."},
        "message": {"type": "string", "description": "What went wrong, for a person."},
        "data": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "properties": {"error": {"type": "string"}},
                    "required": ["error"],
                },
            ]
        },
    },
    "required": ["code", "message", "data"],
}
_CONTENT = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ERROR_ENVELOPE}"}}}
_FASTAPI_SCHEMAS = ("HTTPValidationError", "ValidationError")


def document_errors(app: FastAPI) -> None:
    """Make `app.openapi()` describe errors as they are sent; call once routes are added."""
    amend_openapi(app, with_envelope)


def amend_openapi(app: FastAPI, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Pass the document `app.openapi()` builds through `change`, once, when first asked."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = change(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def with_envelope(document: dict[str, Any]) -> dict[str, Any]:
    """Every operation's client and server errors as the envelope; idempotent."""
    for path in document.get("paths", {}).values():
        for operation in path.values():
            responses: dict[str, Any] = operation.setdefault("responses", {})
            for status, response in responses.items():
                if status[0] in "45":
                    response["content"] = _CONTENT
            responses.setdefault(
                "4XX", {"description": "A client error, in the envelope", "content": _CONTENT}
            )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name in _FASTAPI_SCHEMAS:
        schemas.pop(name, None)
    schemas[ERROR_ENVELOPE] = _SCHEMA
    return document
