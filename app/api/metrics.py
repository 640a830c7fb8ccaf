"""`GET /metrics`: the service's Prometheus metrics, in the text exposition format.

Who may read it: anyone while the service has no API keys and no
`METRICS_KEY`; with `METRICS_KEY` set, only a scraper sending
`Authorization: Bearer <METRICS_KEY>`. With `API_KEYS` set and no
`METRICS_KEY` the page does not exist (404): a user's key never opens it,
since the figures are the whole service's, not the user's.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from app.api.deps import Services
from app.api.envelope import ApiError
from app.config import key_digest
from app.telemetry import Telemetry

router = APIRouter(tags=["operations"])


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE_PLAIN_0_0_4: {}}, "description": "The metrics"},
        401: {"description": "METRICS_KEY is set and the request did not send it"},
        404: {"description": "API_KEYS is set and METRICS_KEY is not: the page is off"},
    },
)
async def read_metrics(request: Request) -> Response:
    """Runs, open streams, time to first event, tokens, tool calls and store retries."""
    services: Services = request.app.state.services
    telemetry: Telemetry = request.app.state.telemetry
    expected = services.http.metrics_key.get_secret_value()
    if expected:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        sent = token.strip() if scheme.lower() == "bearer" else ""
        if not hmac.compare_digest(key_digest(sent), key_digest(expected)):
            raise ApiError(401, "The metrics key is required", {"WWW-Authenticate": "Bearer"})
    elif services.auth.enabled:
        raise ApiError(404, "Not Found")
    return Response(telemetry.metrics.page(), media_type=CONTENT_TYPE_PLAIN_0_0_4)
