"""Liveness and readiness, for load balancers and orchestrators (no auth)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from app.api.deps import ServicesDep
from app.llm.errors import ModelNotConfigured
from app.service.errors import StoreError, TaskError

router = APIRouter(tags=["health"])


@router.get("/health", summary="The process is up")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/ready", summary="The database and the task backend are reachable")
async def ready(
    services: ServicesDep,
    deep: Annotated[
        bool, Query(description="Also make one tiny call to the language model (one token).")
    ] = False,
) -> JSONResponse:
    """200 when every dependency answers, else 503 naming the ones that did not.

    From SIGTERM on (the instance drains, `DRAIN_SECONDS`) it answers 503 with
    `status: draining` at once, whatever the dependencies say.

    `database` is each pool on it: SQLAlchemy's, the turn statements' asyncpg
    pool, and deep research's checkpoint pool; each one lends a connection and
    makes a round trip on it, as a turn would.

    Each MCP server's state is listed under `mcp` (`up`, `down` with its last
    error, or `starting`); a server that is down does not make the answer 503.
    With `deep=1` every model of the catalog is called too: `models` gives each one's
    `{status, error?}` by id, `checks.model` the first status that is not `ok` and
    `errors.model` the first failure's code; the details (URL, status, the
    provider's message) go to the service's log, not to this unauthenticated answer.
    """
    if services.drain.draining:
        # Going away (SIGTERM): load balancers stop sending new requests here at once.
        return JSONResponse({"status": "draining", "checks": {}}, status_code=503)
    checks: dict[str, str] = {}
    errors: dict[str, str] = {}
    try:
        await services.store.ping()
        await services.turns.ping()
        checks["database"] = "ok"
    except StoreError:
        checks["database"] = "unavailable"
    try:
        await services.tasks.backend.ping()
        checks["tasks"] = "ok"
    except TaskError:
        checks["tasks"] = "unavailable"
    models: dict[str, dict[str, str]] = {}
    if deep:
        for model_id, error in (await services.models.check()).items():
            if error is None:
                models[model_id] = {"status": "ok"}
            elif isinstance(error, ModelNotConfigured):
                models[model_id] = {"status": "not_configured"}
            else:
                models[model_id] = {"status": "unavailable", "error": error.code}
                errors.setdefault("model", error.code)
        checks["model"] = next((m["status"] for m in models.values() if m["status"] != "ok"), "ok")
    healthy = all(v == "ok" for v in checks.values())
    body: dict[str, object] = {"status": "ready" if healthy else "unavailable", "checks": checks}
    if models:
        body["models"] = models
    if errors:
        body["errors"] = errors
    if services.mcp is not None and services.mcp.connections:
        # Reported, never a reason for 503: the agents work on without a server's tools.
        body["mcp"] = services.mcp.report()
    return JSONResponse(body, status_code=200 if healthy else 503)
