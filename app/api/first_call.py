"""An ASGI app built at its first call: what it imports loads only in a worker that is asked.

The A2A server and the AG-UI format each bring a package of their own (a2a-sdk with
protobuf; ag-ui-protocol's models) that would cost every worker's start. Their paths
are routes to one of these, which builds the real app (imports included) the first
time a request reaches it (tests/unit/test_lazy_imports.py).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send


class BuiltOnFirstCall:
    def __init__(self, build: Callable[[], ASGIApp]) -> None:
        self._build = build
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            self._app = self._build()
        await self._app(scope, receive, send)
