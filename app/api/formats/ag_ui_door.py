"""AG-UI's path as `app.factory` installs it: answered by `ag_ui.router`, built at its first call.

AG-UI's event and input models (the `ag-ui-protocol` package, 50 ms of every
worker's import) load with the first AG-UI request, so a worker no AG-UI
client calls never loads them (tests/unit/test_lazy_imports.py). The OpenAPI
document still describes `POST /ag-ui/{kind}` whole: the router is put in its
place when the document is first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from starlette.routing import Route

from app.api.first_call import BuiltOnFirstCall

if TYPE_CHECKING:
    from fastapi import APIRouter

PATH = "/ag-ui/{kind}"


def install_ag_ui(app: FastAPI) -> None:
    """Add the AG-UI path; the OpenAPI document describes it as an included router would.

    Call where the router would be included. When the document is first built,
    the router's own routes take the lazy route's place, so the document is the
    one FastAPI builds with them (model names shared with ours resolved the same
    way), and the envelope and event documentation added after describe it too.
    """
    lazy = Route(PATH, BuiltOnFirstCall(_router), methods=["POST"], include_in_schema=False)
    app.router.routes.append(lazy)
    build = app.openapi

    def openapi() -> dict[str, Any]:
        routes = app.router.routes
        if app.openapi_schema is None and lazy in routes:
            router = _router()
            app.include_router(router)  # appended last: moved to where the lazy route stood
            included = routes[-len(router.routes) :]
            del routes[-len(router.routes) :]
            at = routes.index(lazy)
            routes[at : at + 1] = included
        return build()

    app.openapi = openapi  # type: ignore[method-assign]


def _router() -> APIRouter:
    from app.api.formats.ag_ui import router

    return router
