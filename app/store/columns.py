"""The column types the tables share, each one behaviour the same on SQLite and PostgreSQL.

Timestamps come back aware UTC (`UTCDateTime`), dollars as the driver's float
(`Dollars`), typed records and lists as JSON text (`JsonRecord`, `JsonList`: TEXT, not a
JSON type, so both backends store exactly the same thing), and a turn's id as a 64-bit
integer where SQLite's rowid is a plain one (`row_id`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import BigInteger, DateTime, Dialect, Float, Integer, Text
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that always comes back timezone-aware in UTC.

    PostgreSQL keeps `timestamptz` as an instant; SQLite has no timezone and
    returns naive values. Both store UTC here (SQLite as a fixed-width text,
    so text order is time order) and every value read is aware UTC, so
    callers compare and serialise one kind of datetime whatever the backend.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            # A naive time is ambiguous; guessing its zone would silently shift history.
            raise ValueError("naive datetime: pass an aware (UTC) datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Dollars(TypeDecorator[float]):
    """A double-precision float, read as the driver hands it (a Python float on both backends).

    SQLAlchemy's asyncpg float type asks the driver's column type to pick its
    reader, which the prepared statements (fast_path.py) do not have.
    """

    impl = Float(precision=53)
    cache_ok = True

    def result_processor(self, dialect: Dialect, coltype: object) -> None:
        return None


class JsonList(TypeDecorator[list[Any]]):
    """A list of typed records kept as JSON text, handed back typed.

    An empty list is stored as NULL, so a row written before its run ended
    (nothing there yet) and one that had nothing read the same: `[]`.
    """

    impl = Text
    cache_ok = True

    def __init__(self, item: Any) -> None:
        super().__init__()
        self.item = item
        self._adapter: TypeAdapter[list[Any]] = TypeAdapter(list[item])

    def process_bind_param(self, value: list[Any] | None, dialect: Dialect) -> str | None:
        if not value:
            return None
        # `fallback=str`: one odd value inside a tool result must not lose the whole turn.
        return self._adapter.dump_json(value, by_alias=True, fallback=str).decode()

    def process_result_value(self, value: str | None, dialect: Dialect) -> list[Any]:
        return self._adapter.validate_json(value) if value else []


class JsonRecord(TypeDecorator[Any]):
    """One typed record kept as JSON text (NULL for none), handed back typed."""

    impl = Text
    cache_ok = True

    def __init__(self, item: Any) -> None:
        super().__init__()
        self.item = item
        self._adapter: TypeAdapter[Any] = TypeAdapter(item)

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return self._adapter.dump_json(value, by_alias=True, fallback=str).decode()

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return self._adapter.validate_json(value) if value else None


def row_id() -> Any:
    """A turn's id type, where another column holds one (an id column's own is in its `Column`)."""
    return BigInteger().with_variant(Integer(), "sqlite")
