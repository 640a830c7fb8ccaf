"""A cap on request bodies of one path, enforced as the body arrives, answered in the envelope.

FastAPI's own `max_body_size` answers a too-large declared `Content-Length`
with a plain-text 413 that replaces whatever the app sends; this one raises
an `ApiError` from the body stream instead, so the 413 goes through the
app's error handler (the `{code, message, data}` envelope, CORS headers).
A declared length over the cap fails the first read, before any byte is
taken; a chunked body fails the moment it passes the cap, so an upload
never fills the disk first.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.envelope import ApiError


class BodyLimit:
    def __init__(self, app: ASGIApp, path: str, max_bytes: int) -> None:
        self.app = app
        self.path = path
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        too_large = ApiError(413, f"The request body is larger than {self.max_bytes} bytes")
        received = 0

        async def limited() -> Message:
            nonlocal received
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise too_large
            return message

        await self.app(scope, limited, send)
