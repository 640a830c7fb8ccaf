"""The `{code, message, data}` envelope the original client reads, and API errors.

Errors keep the envelope with the HTTP status as `code`, so a client reads
every answer the same way. `ApiError` is raised only in routes and deps.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from fastapi import HTTPException
from pydantic import BaseModel

from app.store.base import StoreUnavailable

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    code: int = 200
    message: str = "success"
    data: T | None = None


def ok(data: T) -> Envelope[T]:
    return Envelope[T](data=data)


class ApiError(HTTPException):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(status_code=status, detail=message, headers=headers)


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"code": status, "message": message, "data": None}


@contextmanager
def database_errors() -> Iterator[None]:
    """A database that cannot be reached inside the block answers 503."""
    try:
        yield
    except StoreUnavailable as exc:
        raise ApiError(503, "Service unavailable: the database is down") from exc
