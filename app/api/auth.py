"""Who is calling: an API key maps to a user; without `API_KEYS` everyone is one local user.

Streams also accept `?access_token=` because `EventSource` cannot send
headers. Only the SHA-256 of each key is held (config.py, `user_by_key`); a
caller's key is hashed and compared with every digest, in constant time and
without stopping at a match, so timing tells nothing about any key.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request

from app.api.deps import ServicesDep
from app.api.envelope import ApiError
from app.config import key_digest

LOCAL_USER = "local"


async def current_user(request: Request, services: ServicesDep) -> str:
    """`async` though it never awaits: a plain `def` dependency costs a worker-thread hop."""
    keys = services.users_by_key
    if not keys:
        return LOCAL_USER
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        token = request.query_params.get("access_token", "")
    digest = key_digest(token.strip())
    user = None
    for known, owner in keys.items():
        if hmac.compare_digest(known, digest):
            user = owner
    if user is None:
        raise ApiError(401, "A valid API key is required", {"WWW-Authenticate": "Bearer"})
    return user


UserDep = Annotated[str, Depends(current_user)]
