"""A2A: our agents as an A2A server; this module is all `app.main` imports of it.

Its paths are answered by the SDK's routes, built at the first call to any of them.

The SDK (a2a-sdk with protobuf, its JSON-RPC and REST dispatchers, and through
them httpx's command line with rich and pygments) costs a worker about 13 MB and
a tenth of a second of import; a worker no A2A client calls never loads it
(tests/unit/test_lazy_imports.py). The OpenAPI document still lists every A2A
operation: it is built, SDK included, when it is first asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.agents.registry import AgentEntry
from app.api.openapi_errors import amend_openapi

if TYPE_CHECKING:
    from starlette.routing import Router

JSONRPC_PATH = "/a2a"
REST_PATH = "/a2a/rest"
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
"""The card's place, and the one A2A 0.2 clients look at."""


class A2aEndpoint:
    """Every A2A path of one app: the SDK's routes, built at the first call to any of them."""

    def __init__(self, app: FastAPI, entries: Sequence[AgentEntry]) -> None:
        self._app = app
        self._entries = entries
        self._router: Router | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._router is None:
            from app.api.a2a.routes import a2a_router

            self._router = a2a_router(self._app, self._entries)
        await self._router(scope, receive, send)


def install_a2a(app: FastAPI, entries: Sequence[AgentEntry]) -> None:
    """Add the A2A paths, and their operations to the OpenAPI document.

    Call after the envelope is documented (`document_errors`): A2A's own errors are
    documented over it.
    """
    endpoint = A2aEndpoint(app, entries)
    for path in (*CARD_PATHS, JSONRPC_PATH, REST_PATH + "/{operation:path}"):
        app.router.routes.append(Route(path, endpoint, include_in_schema=False))

    def documented(document: dict[str, Any]) -> dict[str, Any]:
        from app.api.a2a.routes import document_a2a

        return document_a2a(app, entries, document)

    amend_openapi(app, documented)
