"""Caps on what one request may send (headers, query string, body, the body's time),
answered in the envelope.

Every cap answers before the app reads what is over it, so a request of
hostile size costs no more than the cap: headers and the query string are
measured as they arrive at the app (431, 414), the body as it streams in
(413). The body cap is one for every path, larger for uploads; so is the
time the whole body may take to arrive (408, and the connection is closed:
a body that trickles in a byte at a time would otherwise hold it, and a
worker's memory, for as long as the client likes).

FastAPI's own `max_body_size` answers a too-large declared `Content-Length`
with a plain-text 413 that replaces whatever the app sends; this one raises
an `ApiError` from the body stream instead, so the 413 goes through the
app's error handler (the `{code, message, data}` envelope, CORS headers).
A declared length over the cap fails the first read, before any byte is
taken; a chunked body fails the moment it passes the cap, so an upload
never fills the disk first. Headers and query string are refused here, with
the envelope written directly, since no route is reached.

The server in front (uvicorn, a proxy) still reads the head of a request
before the app sees it: uvicorn's size caps bound it, and the time it may
take is bounded in api/head_timeout.py.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.envelope import ApiError, error_body

ENCODED_BYTES_PER_CHAR = 12
"""The most a character of `query` takes on the wire: an emoji percent-encoded, or JSON-escaped."""
OTHER_FIELDS_BYTES = 16 * 1024


class BodyCap(NamedTuple):
    """The most a body may hold, and the most time it may take to arrive whole."""

    max_bytes: int
    seconds: float


def request_max_bytes(query_max_chars: int) -> int:
    """The largest query string or JSON body: the longest `query` however encoded, and the rest."""
    return query_max_chars * ENCODED_BYTES_PER_CHAR + OTHER_FIELDS_BYTES


class BodyLimit:
    def __init__(
        self,
        app: ASGIApp,
        cap: BodyCap,
        *,
        per_path: dict[str, BodyCap] | None = None,
        max_header_bytes: int,
        max_query_bytes: int,
    ) -> None:
        self.app = app
        self.cap = cap
        self.per_path = per_path or {}
        self.max_header_bytes = max_header_bytes
        self.max_query_bytes = max_query_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        max_bytes, seconds = self.per_path.get(scope["path"], self.cap)
        declared = Headers(scope=scope).get("content-length", "")
        deadline = asyncio.get_running_loop().time() + seconds
        received = 0
        whole = False

        async def limited() -> Message:
            nonlocal received, whole
            if whole:
                return await receive()
            if declared.isdigit() and int(declared) > max_bytes:
                raise _too_large(max_bytes)
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _too_slow(seconds) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > max_bytes:
                    raise _too_large(max_bytes)
                whole = not message.get("more_body", False)
            return message

        await self.app(scope, limited, send)

    def _refusal(self, scope: Scope) -> JSONResponse | None:
        header_bytes = sum(len(name) + len(value) + 4 for name, value in scope["headers"])
        if header_bytes > self.max_header_bytes:
            message = f"The request headers are larger than {self.max_header_bytes} bytes"
            return JSONResponse(error_body(431, message), status_code=431)
        if len(scope.get("query_string", b"")) > self.max_query_bytes:
            message = f"The query string is longer than {self.max_query_bytes} bytes"
            return JSONResponse(error_body(414, message), status_code=414)
        return None


def _too_large(max_bytes: int) -> ApiError:
    return ApiError(413, f"The request body is larger than {max_bytes} bytes")


def _too_slow(seconds: float) -> ApiError:
    # `Connection: close` makes uvicorn close the connection after the answer, rather
    # than read the rest of the body for as long as it trickles.
    message = f"The request body did not arrive within {seconds:g} seconds"
    return ApiError(408, message, headers={"Connection": "close"})
