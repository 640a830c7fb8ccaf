"""A2A: our agents as an A2A server; this module is all `app.factory` imports of it.

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

from app.agents.registry import AgentEntry
from app.api.first_call import BuiltOnFirstCall
from app.api.openapi_errors import amend_openapi

if TYPE_CHECKING:
    from starlette.routing import Router

JSONRPC_PATH = "/a2a"
REST_PATH = "/a2a/rest"
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
"""The card's place, and the one A2A 0.2 clients look at."""


def install_a2a(app: FastAPI, entries: Sequence[AgentEntry]) -> None:
    """Add the A2A paths, and their operations to the OpenAPI document.

    Call after the envelope is documented (`document_errors`): A2A's own errors are
    documented over it.
    """
    endpoint = BuiltOnFirstCall(lambda: _sdk_routes(app, entries))
    for path in (*CARD_PATHS, JSONRPC_PATH, REST_PATH + "/{operation:path}"):
        app.router.routes.append(Route(path, endpoint, include_in_schema=False))

    def documented(document: dict[str, Any]) -> dict[str, Any]:
        from app.api.a2a.routes import document_a2a

        return document_a2a(app, entries, document)

    amend_openapi(app, documented)


def _sdk_routes(app: FastAPI, entries: Sequence[AgentEntry]) -> Router:
    from app.api.a2a.routes import a2a_router

    return a2a_router(app, entries)
