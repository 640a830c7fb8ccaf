"""Every error answers in the `{code, message, data}` envelope, with a message a user can act on.

A turn the service refuses (`TurnRefused`, app/service/errors.py) answers
the status of its kind. A user over one of their limits (`LimitExceeded`,
from app/limits) is 429 with `Retry-After`, from wherever it is checked.
Dependencies that are down surface as `StoreUnavailable` / `TaskBackendUnavailable`
from anywhere below the routes; they are mapped to 503 here (`OUTAGES`), once, instead
of in every route. A client that hangs up before its request is read is no
error of ours: it is logged at DEBUG, not as a traceback. Unexpected errors
are logged and answered without detail.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from app.api.envelope import error_body
from app.limits import LimitExceeded
from app.service.errors import (
    OUTAGES,
    BadRequest,
    Conflict,
    Draining,
    Gone,
    NotAvailable,
    NotFound,
    OverLimit,
    TooLong,
    TurnRefused,
    Unavailable,
)

log = logging.getLogger(__name__)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    for outage, what in OUTAGES.items():
        app.add_exception_handler(outage, _dependency_down(what))
    app.add_exception_handler(LimitExceeded, _over_limit)
    app.add_exception_handler(TurnRefused, _turn_refused)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected_error)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return JSONResponse(
        error_body(exc.status_code, str(exc.detail)),
        status_code=exc.status_code,
        headers=exc.headers,
    )


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err.get('loc', ())[1:]) or 'request'}: {err.get('msg')}"
        for err in exc.errors()
    )
    return JSONResponse(error_body(422, f"Invalid request: {problems}"), status_code=422)


def _dependency_down(what: str) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        return JSONResponse(error_body(503, f"Service unavailable: {what}"), status_code=503)

    return handler


async def _over_limit(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LimitExceeded)
    return JSONResponse(
        error_body(429, str(exc)),
        status_code=429,
        headers={"Retry-After": str(exc.retry_after)},
    )


_REFUSED_STATUS: dict[type[TurnRefused], int] = {
    BadRequest: 400,
    NotFound: 404,
    Conflict: 409,
    Gone: 410,
    TooLong: 413,
    OverLimit: 429,
    NotAvailable: 501,
    Unavailable: 503,
}


async def _turn_refused(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TurnRefused)
    status = next(s for kind, s in _REFUSED_STATUS.items() if isinstance(exc, kind))
    retry = exc.retry_after if isinstance(exc, OverLimit | Draining) else None
    headers = None if retry is None else {"Retry-After": str(retry)}
    body = error_body(status, str(exc))
    if exc.code is not None:
        body["data"] = {"error": exc.code}
    return JSONResponse(body, status_code=status, headers=headers)


async def _client_gone(request: Request, exc: Exception) -> JSONResponse:
    log.debug(
        "%s %s: the client hung up before its request was read", request.method, request.url.path
    )
    # Nobody reads it; uvicorn drops it, and the span records what was answered.
    return JSONResponse(error_body(400, "The request ended before its body"), status_code=400)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse(error_body(500, "Internal server error"), status_code=500)
