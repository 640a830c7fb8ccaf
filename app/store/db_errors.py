"""What a driver's or SQLAlchemy's exception means for a store: unavailable, or an error.

Connection trouble becomes `StoreUnavailable` (503), anything else a
`StoreError`, with a message that never contains the URL's password nor the
statement's SQL and parameters.
"""

from __future__ import annotations

import sqlite3
import sys
from urllib.parse import quote_plus

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL

from app.store.base import StoreError, StoreUnavailable

# SQLSTATE classes meaning "the server cannot serve us now", not "the query is wrong":
# connection exception, invalid authorization, unknown database, insufficient
# resources (too many connections), operator intervention (shutdown, starting up).
_UNAVAILABLE_SQLSTATES = ("08", "28", "3D", "53", "57P")

DRIVER_ERRORS: tuple[type[BaseException], ...] = (OSError, TimeoutError, sqlite3.Error)
"""What our own drivers (not SQLAlchemy) raise on a statement; asyncpg's adds its own."""


def translate(exc: BaseException, url: URL) -> StoreError:
    """The store's error for `exc`, its reason with the URL's password masked."""
    reason = describe(exc)
    password = url.password
    if password:
        for form in {str(password), quote_plus(str(password))}:
            reason = reason.replace(form, "***")
    if is_unavailable(exc):
        safe = url.render_as_string(hide_password=True)
        return StoreUnavailable(f"database unavailable at {safe}: {reason}")
    return StoreError(f"database error: {reason}")


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        orig = current.orig if isinstance(current, sa_exc.StatementError) else None
        current = orig if isinstance(orig, BaseException) else current.__cause__
    return chain


def is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, sa_exc.DBAPIError) and (
        exc.connection_invalidated
        or isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError)
    ):
        return True
    if isinstance(exc, sa_exc.TimeoutError):  # no pooled connection came free in time
        return True
    if isinstance(exc, sqlite3.OperationalError) or _asyncpg_interface_error(exc):
        return True  # the drivers' own: the connection is gone, or the file cannot be used
    for cause in _causes(exc):
        if isinstance(cause, OSError | TimeoutError):
            return True
        sqlstate = getattr(cause, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(_UNAVAILABLE_SQLSTATES):
            return True
    return False


def _asyncpg_interface_error(exc: BaseException) -> bool:
    """Only a loaded asyncpg raises its errors: on SQLite it is never imported."""
    asyncpg = sys.modules.get("asyncpg")
    return asyncpg is not None and isinstance(exc, asyncpg.InterfaceError)


def describe(exc: BaseException) -> str:
    """The driver's own first line, without SQLAlchemy's SQL text and parameters."""
    inner = _causes(exc)[-1]
    lines = str(inner).strip().splitlines()
    first = lines[0] if lines else ""
    return f"{type(inner).__name__}: {first}"[:300]
