"""Who is calling, for every route: the `Caller` the authenticator (app/auth) makes of a request.

The token is `Authorization: Bearer …`, or `?access_token=` because
`EventSource` cannot send headers. A missing or wrong credential answers 401
with the `WWW-Authenticate` challenge (`error="invalid_token"` when one was
sent), an identity provider that cannot be read 503.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.api.deps import ServicesDep
from app.api.envelope import ApiError
from app.auth import LOCAL_USER, Caller, IssuerUnreachable, NotAuthenticated

__all__ = ["LOCAL_USER", "CallerDep", "UserDep", "current_caller", "current_user"]


def bearer_token(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        token = request.query_params.get("access_token", "")
    return token.strip()


async def current_caller(request: Request, services: ServicesDep) -> Caller:
    """`async` though it rarely awaits: a plain `def` dependency costs a worker-thread hop.

    Kept on the request, so a route (or a guard) asking again does not check again."""
    known: Caller | None = getattr(request.state, "caller", None)
    if known is not None:
        return known
    auth = services.auth
    try:
        caller = await auth.identify(
            bearer_token(request), request.headers, request.client.host if request.client else None
        )
    except NotAuthenticated as exc:
        raise ApiError(401, str(exc), {"WWW-Authenticate": exc.challenge}) from exc
    except IssuerUnreachable as exc:
        raise ApiError(503, "The identity provider could not be reached") from exc
    request.state.caller = caller
    return caller


CallerDep = Annotated[Caller, Depends(current_caller)]


async def current_user(request: Request, services: ServicesDep) -> str:
    """The caller's user id: what most routes need (and what non-FastAPI guards call)."""
    return (await current_caller(request, services)).user


UserDep = Annotated[str, Depends(current_user)]
