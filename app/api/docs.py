"""The OpenAPI page, `/docs` (Swagger UI), with its assets served by us.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so on an offline or
locked-down network (where many deployments run) `/docs` was a blank page. The
`fastapi-offline` package ships Swagger UI's files (version 5, which reads the
OpenAPI 3.1 document FastAPI writes); they are mounted under `ASSETS` and the
page points there, favicon included, so it asks no other host for anything.
ReDoc is left out: even served from here it fetches its logo from its CDN.
Like `/openapi.json`, the page needs no key: it describes the API, it does not use it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def install_docs(app: FastAPI) -> None:
    """Serve `/docs`; the app must be built with `docs_url=None, redoc_url=None`."""
    files = Path(str(resources.files("fastapi_offline") / "static"))
    app.mount(ASSETS, StaticFiles(directory=files), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - API",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            # No validator badge: it would send the document to validator.swagger.io.
            swagger_ui_parameters={"validatorUrl": None},
        )
