"""The project tables: `project` (a group of conversations with its own instructions and
defaults) and `project_file` (the files of the user's library attached to it).

A conversation's project is one of the marks a user sets on it, beside its title and pin
(`ai_conversation_title.project_id`, app/store/titles.py); a memory item's is on the item
(`user_memory.project_id`). Created by migration 0021, which spells the columns out by hand.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, String, Table, Text
from sqlmodel import Field, SQLModel

from app.store.columns import UTCDateTime


class ProjectBase(SQLModel):
    """A project as `GET /projects` shows it (the wire's model derives from it)."""

    name: str = Field(max_length=200)
    """1 to 200 characters, trimmed."""
    instructions: str = Field(default="", sa_type=Text)
    """Up to 8,000 characters, given to every turn in the project as the user's instructions."""
    default_kind: str | None = Field(default=None, max_length=32)
    """The agent kind a turn takes where the request names none (an A2A message without a
    `skill`, the page's picker, a schedule); None: the surface's own default."""
    default_model: str | None = Field(default=None, max_length=64)
    """The model id a turn takes when the request names none; None: the kind's default."""
    create_time: datetime = Field(sa_type=UTCDateTime)
    update_time: datetime = Field(sa_type=UTCDateTime)


class StoredProject(ProjectBase):
    project_id: str = Field(sa_column=Column(String(32), primary_key=True))
    """Random: the wire's `projectId`."""
    user_id: str = Field(max_length=128)
    """Owner; every query filters on it, so another user's project is simply not found."""


class Project(StoredProject, table=True):
    __tablename__ = "project"
    __table_args__ = (Index("ix_project_user_id_create_time", "user_id", "create_time"),)


class ProjectFile(SQLModel, table=True):
    """A file of the owner's library attached to a project: its turns search it.

    Detaching, or deleting the project, removes this row only; the file stays in the library.
    Deleting the file removes it (app/store/file_store.py).
    """

    __tablename__ = "project_file"
    __table_args__ = (Index("ix_project_file_file_id", "file_id"),)

    project_id: str = Field(sa_column=Column(String(32), primary_key=True))
    file_id: str = Field(sa_column=Column(String(64), primary_key=True))
    user_id: str = Field(max_length=128)
    create_time: datetime = Field(sa_type=UTCDateTime)


PROJECT: Table = Project.__table__  # type: ignore[attr-defined]
PROJECT_FILE: Table = ProjectFile.__table__  # type: ignore[attr-defined]
