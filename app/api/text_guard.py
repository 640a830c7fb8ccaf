"""Text the stores cannot hold is refused at the edge: 400 in the envelope, before any route.

PostgreSQL's `text` holds no NUL, and no store holds a lone surrogate (half
of a UTF-16 pair, which JSON's `\\ud800` escape or a CESU-8 byte sequence
makes of a Python string: it has no UTF-8). Left to the store, such text
failed a statement, which the store reports as `StoreUnavailable`: a 503
that every monitor reads as an outage, for a client's mistake.

They are refused here once, for every route. In the path and query string
only `%00` can make one (bytes that are not UTF-8 are read as U+FFFD, and
the HTTP parser refuses NUL in a head). A body is scanned for the escapes
and bytes that can make one; only a body that has one is parsed, to see
whether a string really holds it (an emoji escaped as a surrogate pair is
fine, and so is an escaped backslash before `u0000`). A multipart upload is
a file's bytes, not text: its file name is checked where it is read
(api/files.py). The body is handed on whole, as the routes read it anyway.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.envelope import ApiError, error_body

_SUSPECT_BODY = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])|\xed[\xa0-\xbf]")
"""An escaped NUL or surrogate, or a surrogate in CESU-8 (which Python's JSON reader takes)."""


def text_problem(text: str) -> str | None:
    """What in `text` no store can hold, said for a client; None when it can be stored."""
    if "\x00" in text:
        return "a NUL character"
    if text.isascii():
        return None
    try:
        text.encode()
    except UnicodeEncodeError:
        return "a lone surrogate (half of a UTF-16 pair, not a character)"
    return None


def unstorable(where: str, problem: str) -> str:
    return f"The {where} holds {problem}, which cannot be stored"


class TextGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        where = _nul_in_url(scope)
        if where is not None:
            message = unstorable(where, "a NUL character")
            await JSONResponse(error_body(400, message), status_code=400)(scope, receive, send)
            return
        content_type = Headers(scope=scope).get("content-type", "")
        if content_type.startswith("multipart/"):
            await self.app(scope, receive, send)
            return
        await self.app(scope, _checked_body(receive), send)


def _nul_in_url(scope: Scope) -> str | None:
    if "\x00" in scope["path"]:
        return "path"
    if b"%00" in scope.get("query_string", b""):
        return "query string"
    return None


def _checked_body(receive: Receive) -> Receive:
    """`receive`, its body read whole at the first call and refused with 400 when unstorable."""
    read = False

    async def checked() -> Message:
        nonlocal read
        if read:
            return await receive()
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return message
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        read = True
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        problem = _body_problem(body)
        if problem is not None:
            raise ApiError(400, unstorable("request body", problem))
        return {"type": "http.request", "body": body, "more_body": False}

    return checked


def _body_problem(body: bytes) -> str | None:
    if _SUSPECT_BODY.search(body) is None:
        return None
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON: the route answers that
    return _problem_in(parsed)


def _problem_in(value: Any) -> str | None:
    """The first unstorable string anywhere in a parsed JSON value, keys included."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return problem
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return None
