"""Liveness and readiness, for load balancers and orchestrators (no auth)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.api.deps import ServicesDep
from app.store.base import StoreError
from app.tasks.base import TaskError

router = APIRouter(tags=["health"])


@router.get("/health", summary="The process is up")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/ready", summary="The database and the task backend are reachable")
async def ready(services: ServicesDep) -> JSONResponse:
    """200 when every dependency answers, else 503 naming the ones that did not."""
    checks: dict[str, str] = {}
    try:
        await services.store.ping()
        checks["database"] = "ok"
    except StoreError:
        checks["database"] = "unavailable"
    try:
        await services.tasks.ping()
        checks["tasks"] = "ok"
    except TaskError:
        checks["tasks"] = "unavailable"
    healthy = all(v == "ok" for v in checks.values())
    body = {"status": "ready" if healthy else "unavailable", "checks": checks}
    return JSONResponse(body, status_code=200 if healthy else 503)
