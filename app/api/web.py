"""The chat page: `app/web/` served as static files at `/`, with no build step.

It is mounted after every API route, so it only answers paths no route
claims. Its files get a strict Content-Security-Policy: the page runs only
its own scripts and talks only to its own origin, so even markup that got
past the Markdown sanitiser could not run a script. What is not a file
answers the API's JSON 404, whatever the method, so a client that calls a
wrong path learns that, not "method not allowed".
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

WEB_DIR = Path(__file__).resolve().parent.parent / "web"


def security_headers(connect_to: str = "") -> dict[str, str]:
    """The page's headers; `connect_to` is one more origin its scripts may call: the OIDC
    issuer's, where the page trades its sign-in code for tokens."""
    connect = f"'self' {connect_to}" if connect_to else "'self'"
    return {
        "content-security-policy": (
            "default-src 'self'; script-src 'self'; style-src 'self'; "
            # blob: the slide previews, fetched with the API key, are shown from local URLs.
            f"img-src 'self' data: blob: https:; connect-src {connect}; object-src 'none'; "
            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
        ),
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
    }


class WebPage(StaticFiles):
    def __init__(self, directory: Path = WEB_DIR, *, connect_to: str = "") -> None:
        super().__init__(directory=directory, html=True)
        self._headers = security_headers(connect_to)

    async def get_response(self, path: str, scope: Scope) -> Response:
        if scope["method"] not in ("GET", "HEAD"):
            raise HTTPException(status_code=404)
        return await super().get_response(path, scope)

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(self._headers)
        return response
