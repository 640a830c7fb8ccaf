"""The A2A endpoints on our app: the card, JSON-RPC at `/a2a`, REST under `/a2a/rest`.

The SDK's dispatchers speak the wire (JSON-RPC 2.0 with the 1.x method
names and, on the same endpoint, the 0.3 ones; the HTTP+JSON binding);
`RunTasks` answers them. Every call but the card is authenticated as the
rest of the API is (`API_KEYS`, a bearer key or `?access_token=`), before
the dispatcher reads the body; the caller's user and our public base URL
travel to the handler in the call context.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from itertools import chain
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.jsonrpc_models import JSONParseError
from a2a.server.request_handlers.response_helpers import agent_card_to_dict, build_error_response
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    add_a2a_routes_to_fastapi,
    create_jsonrpc_routes,
    create_rest_routes,
)
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, Router

from app.agents.registry import AgentEntry
from app.api.a2a import CARD_PATHS, JSONRPC_PATH, REST_PATH
from app.api.a2a.card import agent_card
from app.api.a2a.server import BASE_URL_KEY, LIMIT_KEY, USER_KEY, RunTasks
from app.api.auth import current_caller
from app.api.deps import Services, public_base_url
from app.api.envelope import ApiError
from app.api.openapi_errors import ERROR_ENVELOPE, with_envelope

A2A_ERROR = "A2AError"
_A2A_ERROR_SCHEMA: dict[str, Any] = {
    "title": A2A_ERROR,
    "description": (
        "An A2A call refused: A2A's own error (REST: google.rpc.Status as JSON; JSON-RPC"
        " answers errors in a 200 response's `error`), or, before the call reaches A2A"
        " (no valid key, too large), the service's envelope."
    ),
    "anyOf": [
        {"$ref": f"#/components/schemas/{ERROR_ENVELOPE}"},
        {
            "type": "object",
            "properties": {
                "error": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "integer"},
                        "status": {"type": "string"},
                        "message": {"type": "string"},
                        "details": {"type": "array"},
                    },
                    "required": ["code", "status", "message"],
                }
            },
            "required": ["error"],
        },
    ],
}
_CLIENT_MISTAKES = (
    "Failed to validate base JSON-RPC request",
    "Failed to parse request params",
)
"""How the SDK's JSON-RPC dispatchers (1.3.0) log a call that is not a valid request.

They answer it rightly (-32600, -32602), but log it at ERROR with a traceback."""
_REASON_MAX_CHARS = 300
_SDK_JSONRPC_LOGGERS = ("a2a.server.routes.jsonrpc_dispatcher", "a2a.compat.v0_3.jsonrpc_adapter")

Endpoint = Callable[[Request], Awaitable[Response]]


class _CallContext(DefaultServerCallContextBuilder):
    """The SDK's context, with who is calling (authenticated already) and where we are."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        caller = request.state.a2a_caller
        context.state[USER_KEY] = caller.user
        context.state[LIMIT_KEY] = caller.limit_key
        context.state[BASE_URL_KEY] = _base_url(request)
        return context


def a2a_router(app: FastAPI, entries: Sequence[AgentEntry]) -> Router:
    """The A2A routes of `app`; their parts are read from the app's state when a call comes."""
    _quiet_client_mistakes()
    return Router(list(chain.from_iterable(_routes(app, entries))))


def document_a2a(
    app: FastAPI, entries: Sequence[AgentEntry], document: dict[str, Any]
) -> dict[str, Any]:
    """`document` with the A2A operations, as the SDK describes them, and their errors.

    The SDK describes them by adding its routes to an app (proto-derived request
    bodies, tags): one made for that alone, since ours answers them through
    the routes `install_a2a` adds (api/a2a/__init__.py).
    """
    card, jsonrpc, rest = _routes(app, entries)
    described = FastAPI()
    add_a2a_routes_to_fastapi(
        described, agent_card_routes=card, jsonrpc_routes=jsonrpc, rest_routes=rest
    )
    sdk = get_openapi(title=app.title, version=app.version, routes=described.routes)
    document.setdefault("paths", {}).update(sdk.get("paths", {}))
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(sdk.get("components", {}).get("schemas", {}))
    with_envelope(document)
    content = {"application/json": {"schema": {"$ref": f"#/components/schemas/{A2A_ERROR}"}}}
    for path, item in document["paths"].items():
        if not path.startswith(JSONRPC_PATH):
            continue
        for operation in item.values():
            _name_path_parameters(path, operation)
            for status, response in operation.get("responses", {}).items():
                if status[0] in "45":
                    response["content"] = content
                    response["description"] = "A client error: A2A's, or the envelope"
    schemas[A2A_ERROR] = _A2A_ERROR_SCHEMA
    return document


def _routes(
    app: FastAPI, entries: Sequence[AgentEntry]
) -> tuple[list[BaseRoute], list[BaseRoute], list[BaseRoute]]:
    """The card's routes, JSON-RPC's and REST's, each call but the card's authenticated."""
    handler = RunTasks(lambda: _services(app), entries)
    context = _CallContext()
    jsonrpc = create_jsonrpc_routes(
        handler, rpc_url=JSONRPC_PATH, context_builder=context, enable_v0_3_compat=True
    )
    rest = create_rest_routes(handler, context_builder=context, path_prefix=REST_PATH)
    return (
        [Route(path, _card(entries), methods=["GET"]) for path in CARD_PATHS],
        _authenticated(jsonrpc, _jsonrpc_body),
        _authenticated(rest, _utf8_body),
    )


def _card(entries: Sequence[AgentEntry]) -> Endpoint:
    async def read_agent_card(request: Request) -> Response:
        """This service's A2A agent card: its skills, interfaces and security scheme."""
        services = _services(request.app)
        card = agent_card(
            entries,
            services.turns.kinds(),
            _base_url(request),
            schemes=services.auth.schemes,
            push=services.webhooks.enabled,
            issuer=services.auth.oidc.issuer if services.auth.oidc is not None else "",
        )
        return JSONResponse(agent_card_to_dict(card))

    return read_agent_card


BodyCheck = Callable[[bytes], Response | None]
"""What a guard makes of a call's body before the SDK reads it: a refusal, or None."""


def _authenticated(routes: Sequence[BaseRoute], check: BodyCheck) -> list[BaseRoute]:
    """The routes, each answering 401 before its dispatcher runs when the key is wrong,
    and refusing a body `check` refuses.

    The SDK's `/{tenant}` mount is left out: at the root of our app it would
    catch every two-segment path before the chat page.
    """
    guarded: list[BaseRoute] = []
    for route in routes:
        if isinstance(route, Route):
            methods = sorted(m for m in route.methods or () if m != "HEAD")
            guarded.append(Route(route.path, _guard(route.endpoint, check), methods=methods))
    return guarded


def _guard(endpoint: Endpoint, check: BodyCheck) -> Endpoint:
    async def a2a_call(request: Request) -> Response:
        request.state.a2a_caller = await current_caller(request, _services(request.app))
        # The body read here is the one the SDK reads, cached on the request.
        refusal = check(await request.body())
        if refusal is not None:
            return refusal
        return await endpoint(request)

    return a2a_call


def _utf8_body(body: bytes) -> Response | None:
    """The SDK's REST dispatcher answers a body that is not UTF-8 with a 500 (1.3.0)."""
    try:
        body.decode()
    except UnicodeDecodeError as exc:
        raise ApiError(400, "The body must be JSON in UTF-8") from exc
    return None


def _jsonrpc_body(body: bytes) -> Response | None:
    """A body that is not JSON is JSON-RPC's parse error (-32700).

    The SDK's dispatcher answers one nested deeper than the parser recurses
    (a `RecursionError`), or not in UTF-8, as its own internal error (-32603,
    logged with a traceback); it parses the body again, with the same parser,
    once it is known to parse.
    """
    try:
        json.loads(body)
    except json.JSONDecodeError as exc:
        reason = str(exc)
    except UnicodeDecodeError:
        reason = "the body is not UTF-8"
    except RecursionError:
        reason = "nested too deeply"
    else:
        return None
    error = JSONParseError(message=f"Parse error: {reason}")
    return JSONResponse(build_error_response(None, error))


class _ClientMistake(logging.Filter):
    """The SDK's report of an invalid call, without its traceback and at WARNING: the
    caller's mistake, answered in the protocol, is no error of ours."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.getMessage().startswith(_CLIENT_MISTAKES):
            reason = " ".join(str(record.exc_info[1]).split())[:_REASON_MAX_CHARS]
            record.msg = f"{record.getMessage()}: {reason}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno = logging.WARNING
            record.levelname = logging.getLevelName(logging.WARNING)
        return True


def _quiet_client_mistakes() -> None:
    for name in _SDK_JSONRPC_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ClientMistake) for f in logger.filters):
            logger.addFilter(_ClientMistake())


def _name_path_parameters(path: str, operation: dict[str, Any]) -> None:
    parameters: list[dict[str, Any]] = operation.setdefault("parameters", [])
    named = {p["name"] for p in parameters if p.get("in") == "path"}
    for name in re.findall(r"\{(\w+)\}", path):
        if name not in named:
            parameters.append(
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            )


def _services(app: FastAPI) -> Services:
    services: Services = app.state.services
    return services


def _base_url(request: Request) -> str:
    return public_base_url(request, _services(request.app))
