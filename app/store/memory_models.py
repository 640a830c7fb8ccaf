"""The user memory tables: `user_memory` (facts and preferences a user keeps across
conversations) and `user_memory_setting` (their switch).

"User memory" is not a conversation's memory (its earlier turns, `app/agents/memory.py`):
these are short statements in the user's words that every conversation's turns may read,
that the user sees and edits (`/memory`), and that the agents save with the `remember` tool.
Created by migration 0021, which spells the same columns out by hand.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy import BigInteger, Column, Index, Integer, LargeBinary, String, Table, Text
from sqlmodel import Field, SQLModel

from app.store.columns import UTCDateTime

MemorySource = Literal["user", "agent"]


class UserMemoryBase(SQLModel):
    """An item as `GET /memory` shows it (the wire's model derives from it)."""

    content: str = Field(sa_type=Text)
    """The fact or preference, in the user's words: 1 to 1,000 characters."""
    project_id: str | None = Field(default=None, max_length=32)
    """The project it belongs to (read only by that project's turns); None: general."""
    source: MemorySource = Field(sa_type=String(8))
    """`user` (added on the memory screen or `POST /memory`) or `agent` (the `remember` tool)."""
    conversation_id: str | None = Field(default=None, max_length=128)
    """The conversation whose turn saved it (`agent` items)."""
    turn_id: int | None = Field(
        default=None, sa_type=BigInteger().with_variant(Integer(), "sqlite")
    )
    """That turn's id."""
    create_time: datetime = Field(sa_type=UTCDateTime)
    update_time: datetime = Field(sa_type=UTCDateTime)


class UserMemoryItem(UserMemoryBase):
    """An item as the store hands it back (built without validation, as rows are): not the
    table class, whose instances read their columns through SQLAlchemy's instrumentation,
    which is not there in a process that has not yet configured its mappers."""

    id: str = Field(sa_column=Column(String(32), primary_key=True))
    """Random: what the wire, the page and the `remember` tool name it by."""
    user_id: str = Field(max_length=128)
    """Owner; every query filters on it, so another user's item is simply not found."""
    vector: bytes | None = Field(default=None, sa_column=Column(LargeBinary(), nullable=True))
    """Unit-length embedding of `content` (as `ai_file_chunk.vector`); NULL without embeddings."""
    embedding_model: str | None = Field(default=None, max_length=128)
    """The model that made `vector`: a question is compared with it only under the same one."""


class UserMemoryRow(UserMemoryItem, table=True):
    """The table: every column comes from the item above, none is declared here."""

    __tablename__ = "user_memory"
    __table_args__ = (Index("ix_user_memory_user_id_create_time", "user_id", "create_time"),)


class UserMemorySetting(SQLModel, table=True):
    """A user's memory switch; no row: on (the default), so a new user costs no write."""

    __tablename__ = "user_memory_setting"

    user_id: str = Field(sa_column=Column(String(128), primary_key=True))
    enabled: bool
    update_time: datetime = Field(sa_type=UTCDateTime)


USER_MEMORY: Table = UserMemoryRow.__table__  # type: ignore[attr-defined]
USER_MEMORY_SETTING: Table = UserMemorySetting.__table__  # type: ignore[attr-defined]
