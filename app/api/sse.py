"""The SSE response: a reader of a run's log, written straight to the ASGI channel.

Frames are already encoded by the log, so this only copies bytes: one
`send` per wake-up with everything new, a `: ping` comment when the run has
been silent for the ping interval, and the end of the body once the log is
closed and read. The log may be this instance's memory or another
instance's copy in Redis: any `EventLogReader` will do.

A client that goes away is a normal event here, not an error: it is
noticed through `http.disconnect` (or a failing send), reported to
`on_disconnect`, and never logged as a traceback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.core.frames import PING_FRAME

if TYPE_CHECKING:
    from app.tasks.log import EventLogReader

SSE_HEADERS = {
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
    "connection": "keep-alive",
}


class EventStreamResponse(Response):
    media_type = "text/event-stream; charset=utf-8"

    def __init__(
        self,
        log: EventLogReader,
        *,
        after: int = 0,
        ping_seconds: float = 15.0,
        on_disconnect: Callable[[], object] | None = None,
    ) -> None:
        # Like StreamingResponse: no body attribute, so no Content-Length header.
        self.status_code = 200
        self.background = None
        self.init_headers(SSE_HEADERS)
        self._log = log
        self._after = after
        self._ping = ping_seconds
        self._on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = False
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                nonlocal gone
                while (await receive())["type"] != "http.disconnect":
                    pass
                gone = True
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                await self._stream(send)
            except OSError:
                gone = True
            group.cancel_scope.cancel()
        # A run that already ended ignores the callback (a stop of nothing).
        if gone and self._on_disconnect is not None:
            self._on_disconnect()

    async def _stream(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        cursor = self._after
        while True:
            data, cursor = await self._log.wait(cursor, self._ping)
            if data:
                await send({"type": "http.response.body", "body": data, "more_body": True})
            elif self._log.finished(cursor):
                break
            else:
                await send({"type": "http.response.body", "body": PING_FRAME, "more_body": True})
        with contextlib.suppress(OSError):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
