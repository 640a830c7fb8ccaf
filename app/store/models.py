"""The tables: `ai_session` (one row per turn, shaped as the original Java service stored it,
plus the turn it follows), `ai_active_path` (a conversation's chosen branch), `ai_file` and
`ai_file_chunk` (uploaded documents and their searchable passages).

Each table is declared once here and created by an Alembic revision in
`migrations/versions/`, which spells the same columns out by hand so a later
change to this model never rewrites history. Only the store modules in this
package read or write them.

One family per entity (SQLModel's base / table / public pattern): the
columns a client sees are declared in a base class, the table adds its keys
and owner, and the wire's model (api/) derives from the same base, camelCase
by alias only. So adding a column is one field here plus one migration: the
store writes and reads every column by rule, and the history shows it.

JSON-valued columns (tools, reference, recommend, files, plan) are TEXT, not
a JSON type, so SQLite and PostgreSQL store exactly the same thing;
`JsonList` (columns.py, with the other column types) turns them into typed
lists and back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlmodel import Field, SQLModel
from sqlmodel._compat import SQLModelConfig

from app.core.wire import WIRE_CONFIG
from app.store.columns import Dollars, JsonList, JsonRecord, UTCDateTime, row_id
from app.store.records import (
    CarryOn,
    DeckRecord,
    FileSource,
    FileStatus,
    ModelUsage,
    Pending,
    PlanRound,
    Rating,
    ToolCall,
    TurnFile,
    TurnStatus,
)

PUBLIC_CONFIG = cast(SQLModelConfig, WIRE_CONFIG)
"""A family's public (wire) model takes this: the wire's camelCase names, by alias only."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _json_list(item: Any) -> Any:
    """A list field stored in a `JsonList` column, nullable as the migrations made it."""
    return Field(default_factory=list, sa_type=JsonList(item), nullable=True)


class TurnOutcome(SQLModel):
    """What the end of a run writes to its turn, in one update (the family's `XUpdate`)."""

    answer: str | None = Field(default=None, sa_type=Text)
    """The answer text; partial while running, kept as far as it got when stopped or interrupted."""
    thinking: str | None = Field(default=None, sa_type=Text)
    """Reasoning text streamed as `thinking` events."""
    status: TurnStatus = Field(default="running", sa_type=String(16))
    """`running` until the run ends, then how it ended."""
    tools: list[ToolCall] = _json_list(ToolCall)
    """The turn's tool calls `{id, name, arguments, result, isError}`."""
    reference: list[dict[str, str]] = _json_list(dict[str, str])
    """Sources `{url, title, content}` the answer used."""
    recommend: list[str] = _json_list(str)
    """Suggested follow-up questions."""
    files: list[TurnFile] = _json_list(TurnFile)
    """The files the turn made `{fileId, name, url, size, mimeType}`."""
    plan: list[PlanRound] = _json_list(PlanRound)
    """A deep research turn's rounds `{round, tasks, critique}`; empty otherwise."""
    deck: DeckRecord | None = Field(default=None, sa_type=JsonRecord(DeckRecord), nullable=True)
    """A deck turn's slides as its last `deck` event showed them; None otherwise."""
    error: str | None = Field(default=None, sa_type=Text)
    """What went wrong, for a `failed` turn: its `error.code` (older turns: a sentence)."""
    error_message: str | None = Field(default=None, sa_type=Text)
    """The sentence the stream's `error.message` said (the step that failed and why); None
    on turns stored before it was kept, which show their code's fixed text."""
    first_response_time: int | None = None
    """Milliseconds from the question to the first streamed byte of the answer."""
    total_response_time: int | None = None
    """Milliseconds from the question to the end of the run."""
    prompt_tokens: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """Input tokens the turn spent across all its model calls."""
    completion_tokens: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """Output tokens the turn spent across all its model calls."""
    cost_usd: float | None = Field(default=None, sa_type=Dollars)
    """What those tokens cost at each model's prices; None when no model of it has prices."""
    usage_by_model: list[ModelUsage] = _json_list(ModelUsage)
    """The same per model `{model, promptTokens, completionTokens, costUsd, estimated}`."""
    pending: list[Pending] = _json_list(Pending)
    """What a `paused` turn waits for the user's decision on; empty otherwise."""
    approval_id: str | None = Field(default=None, max_length=64)
    """The undecided approval of a `paused` turn: the key its one decision is taken by
    (cleared in the same UPDATE, so a second decision finds nothing); null once decided."""


class TurnBase(TurnOutcome):
    """A turn as its conversation's history shows it: the outcome and the question."""

    question: str = Field(sa_type=Text)
    """The user's query as received."""
    fileid: str | None = Field(default=None, max_length=64)
    """The uploaded file the turn asked about, if any."""
    create_time: datetime = Field(default_factory=_utc_now, sa_type=UTCDateTime)
    """When the question arrived (aware UTC)."""
    parent_id: int | None = Field(default=None, sa_type=row_id())
    """The turn this one follows (its question came after that answer); None for a first
    question. A conversation is the tree these make; an edit or a regeneration is a sibling."""
    model: str | None = Field(default=None, max_length=64)
    """The catalog id of the model that answered (`MODELS`); None for turns stored before."""
    rating: Rating | None = Field(default=None, sa_type=String(8))
    """The user's verdict on the answer, `up` or `down`; None until they give one. Not a
    write to the conversation's activity: rating an old answer does not bring it to the top."""
    rating_comment: str | None = Field(default=None, sa_type=Text)
    """What the user said with their verdict, if anything."""


class StoredTurn(TurnBase):
    """A turn as the store hands it back: the base plus its keys and owner."""

    id: int | None = Field(
        default=None,
        sa_column=Column(
            # INTEGER on SQLite makes the column the rowid alias (its only autoincrement).
            BigInteger().with_variant(Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
    )
    """Row id, the wire's `sessionId` / `messages[].id`; increasing, so it orders turns."""
    session_id: str = Field(max_length=128)
    """The conversation id (the wire's `conversationId`), chosen by the client."""
    user_id: str = Field(max_length=128)
    """Owner of the turn; every query filters on it so users never see each other's rows."""
    agent_type: str = Field(max_length=32)
    """The name of the agent that answered, as the agent registry knows it."""
    update_time: datetime = Field(default_factory=_utc_now, sa_type=UTCDateTime)
    """Latest write to the row (aware UTC); a conversation's activity is its newest."""
    instance_id: str | None = Field(default=None, max_length=32)
    """The instance that runs the turn: while `running`, whose death hands it to another
    (or, past `TURN_TAKEOVERS` moves, makes it `interrupted`)."""
    takeovers: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    """Times another instance took the running turn over and carried it on."""
    carry_on: CarryOn | None = Field(default=None, sa_type=JsonRecord(CarryOn), nullable=True)
    """What the request asked beyond the row, for the instance that carries the turn on."""


class AiSession(StoredTurn, table=True):
    """The table: every column comes from the family above, none is declared here."""

    __tablename__ = "ai_session"
    __table_args__ = (
        # A conversation's turns, read by conversation and user (migration 0023).
        Index("ix_ai_session_session_id_user_id", "session_id", "user_id"),
        Index("ix_ai_session_user_id_update_time", "user_id", "update_time"),
        # Rated turns only: what admins read back (migration 0015).
        Index(
            "ix_ai_session_rated",
            "create_time",
            postgresql_where=text("rating IS NOT NULL"),
            sqlite_where=text("rating IS NOT NULL"),
        ),
        # Running rows only: the orphan sweep reads it every few seconds (migration 0006).
        Index(
            "ix_ai_session_running_instance",
            "instance_id",
            postgresql_where=text("status = 'running'"),
            sqlite_where=text("status = 'running'"),
        ),
        # Undecided approvals only: a decision finds its paused turn by it (migration 0011).
        Index(
            "ix_ai_session_approval_id",
            "approval_id",
            postgresql_where=text("approval_id IS NOT NULL"),
            sqlite_where=text("approval_id IS NOT NULL"),
        ),
    )


AI_SESSION: Table = AiSession.__table__  # type: ignore[attr-defined]
"""The Core table, for the store's single-statement queries without ORM overhead."""


class AiActivePath(SQLModel, table=True):
    """A conversation's active path when it is not simply its newest turn's (a switch, a delete).

    Its leaf holds while no turn newer than `newest_id` exists: the next question
    follows the active leaf and so becomes it, with nothing to write here. So a
    turn costs no write of this table; only a switch and a turn's deletion do.
    """

    __tablename__ = "ai_active_path"

    user_id: str = Field(sa_column=Column(String(128), primary_key=True))
    conversation_id: str = Field(sa_column=Column(String(128), primary_key=True))
    leaf_id: int = Field(sa_type=row_id())
    """The leaf of the path chosen."""
    newest_id: int = Field(sa_type=row_id())
    """The conversation's newest turn when it was chosen: a newer turn takes over."""


AI_ACTIVE_PATH: Table = AiActivePath.__table__  # type: ignore[attr-defined]


class FileUpload(SQLModel):
    """A stored file as its upload answers it."""

    file_name: str = Field(max_length=255)
    """The client's file name, sanitised (no path), kept for display only."""
    size: int = Field(sa_type=BigInteger)
    """Bytes stored."""
    mime_type: str = Field(max_length=128)
    """The type checked against the content at upload, not the one the client declared."""


class FileBase(FileUpload):
    """A file as `/file/info` and `/file/list` show it."""

    status: FileStatus = Field(sa_type=String(16))
    """`processing` while its text is extracted, then `ready` or `failed`."""
    error: str | None = Field(default=None, sa_type=Text)
    """Why a `failed` file has no text, in words a user understands."""
    source: FileSource = Field(
        default="upload", sa_type=String(16), sa_column_kwargs={"server_default": "upload"}
    )
    """`upload` (the user sent it) or `generated` (an agent made it)."""
    ocr: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    """Some of its text was read by text recognition (a picture, or a PDF's scanned pages)."""
    create_time: datetime = Field(sa_type=UTCDateTime)


class StoredFile(FileBase):
    """An uploaded or generated file; its bytes live in the blob store under `blob_key`."""

    id: str = Field(sa_column=Column(String(64), primary_key=True))
    """The wire's `fileId`: generated by the service, never derived from the client's name."""
    user_id: str = Field(max_length=128)
    """Owner; every query filters on it, so another user's file is simply not found."""
    blob_key: str = Field(max_length=255)
    """Where the bytes are in the blob store; generated, never the client's path."""
    content: str | None = Field(default=None, sa_type=Text)
    """The extracted text, as `/file/content` answers it."""
    embedding_model: str | None = Field(default=None, max_length=128)
    """The model that embedded the chunks; NULL when they have no vectors."""
    session_id: str | None = Field(default=None, max_length=128)
    """For a generated file, the conversation that made it: deleted with it."""
    update_time: datetime = Field(sa_type=UTCDateTime)


class AiFile(StoredFile, table=True):
    """The table: every column comes from the family above, none is declared here."""

    __tablename__ = "ai_file"
    __table_args__ = (
        Index("ix_ai_file_user_id_create_time", "user_id", "create_time"),
        Index("ix_ai_file_user_id_session_id", "user_id", "session_id"),
    )


class AiFileChunk(SQLModel, table=True):
    """One searchable passage of a file, with where it is in the document."""

    __tablename__ = "ai_file_chunk"
    __table_args__ = (Index("ix_ai_file_chunk_file_id_seq", "file_id", "seq", unique=True),)

    id: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
    )
    file_id: str = Field(sa_column=Column(String(64), ForeignKey("ai_file.id"), nullable=False))
    seq: int
    """Order of the passage in the document, from 0."""
    unit: str = Field(max_length=16)
    """What `first`/`last` count: `page` (pdf), `paragraph` (docx) or `line` (text)."""
    first: int
    last: int
    """The units the passage spans, from 1 (e.g. pages 3 to 4)."""
    text: str = Field(sa_type=Text)
    vector: bytes | None = Field(default=None, sa_column=Column(LargeBinary(), nullable=True))
    """Unit-length embedding as little-endian float32 (BLOB / bytea); NULL without embeddings."""


AI_FILE: Table = AiFile.__table__  # type: ignore[attr-defined]
AI_FILE_CHUNK: Table = AiFileChunk.__table__  # type: ignore[attr-defined]


class AiPptInst(SQLModel, table=True):
    """One build of a deck (the PowerPoint agent's state machine), one row per version.

    Each step's result and the next status are written before the next step
    starts, so the row is what the user's build is, whatever stopped it.
    """

    __tablename__ = "ai_ppt_inst"
    __table_args__ = (
        Index("ix_ai_ppt_inst_user_conversation_version", "user_id", "conversation_id", "version"),
    )

    id: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
    )
    conversation_id: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    """Owner; every query filters on it."""
    version: int
    """1 for a conversation's first deck, then one more for each new build or change."""
    template_code: str | None = Field(default=None, max_length=64)
    status: str = Field(max_length=16)
    """The step to run next (`REQUIREMENT` … `RENDER`), or `PAUSED`, `SUCCESS`, `FAILED`."""
    query: str = Field(sa_type=Text)
    """The request the build started from (and the answers a pause asked for)."""
    requirement: str | None = Field(default=None, sa_type=Text)
    """JSON: topic, audience, slideCount, style, language."""
    search_info: str | None = Field(default=None, sa_type=Text)
    """JSON: the web searches done so far `[{query, result}]`, each stored as it ends."""
    outline: str | None = Field(default=None, sa_type=Text)
    """JSON outline: title and slides `{title, pageType, points}`."""
    ppt_schema: str | None = Field(default=None, sa_type=Text)
    """JSON deck: slides `{pageType, fields}`, validated against the template."""
    file_id: str | None = Field(default=None, max_length=64)
    """The generated file (`ai_file.id`) of a `SUCCESS` build."""
    file_url: str | None = Field(default=None, max_length=255)
    failed_step: str | None = Field(default=None, max_length=16)
    """The step that failed, for a `FAILED` build; a resume starts there."""
    error_msg: str | None = Field(default=None, sa_type=Text)
    """Why it failed, in words a user understands."""
    create_time: datetime = Field(sa_type=UTCDateTime)
    update_time: datetime = Field(sa_type=UTCDateTime)


class AiPptTemplate(SQLModel, table=True):
    """The deck templates shipped with the package, as the agent last saw them."""

    __tablename__ = "ai_ppt_template"

    template_code: str = Field(sa_column=Column(String(64), primary_key=True))
    template_name: str = Field(max_length=128)
    template_desc: str = Field(sa_type=Text)
    template_schema: str = Field(sa_type=Text)
    """The template's JSON spec: its pages, their named fields and budgets."""
    file_path: str = Field(max_length=255)
    """The .pptx, relative to the package's templates folder."""
    style_tags: str = Field(max_length=255)
    """Comma-separated."""
    slide_count: int
    update_time: datetime = Field(sa_type=UTCDateTime)


AI_PPT_INST: Table = AiPptInst.__table__  # type: ignore[attr-defined]
AI_PPT_TEMPLATE: Table = AiPptTemplate.__table__  # type: ignore[attr-defined]


class AiConversationTitle(SQLModel, table=True):
    """What a user set on a conversation: its title, its pin, its project; stored only once
    they do (or once its first turn is asked in a project).

    A conversation without a row is titled by its first question, derived when read
    (`app/store/titles.py`), and not pinned, so a turn writes nothing here.
    """

    __tablename__ = "ai_conversation_title"
    __table_args__ = (Index("ix_ai_conversation_title_project", "user_id", "project_id"),)

    user_id: str = Field(sa_column=Column(String(128), primary_key=True))
    """Owner; every query filters on it."""
    conversation_id: str = Field(sa_column=Column(String(128), primary_key=True))
    title: str | None = Field(default=None, max_length=200)
    """1 to 200 characters, trimmed; None when the user pinned it but never renamed it."""
    pinned_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    """When the user pinned it to the top of their list; None: not pinned (migration 0016)."""
    project_id: str | None = Field(default=None, max_length=32)
    """The project it is in (app/store/project_models.py); None: none (migration 0021)."""


AI_CONVERSATION_TITLE: Table = AiConversationTitle.__table__  # type: ignore[attr-defined]


class AiShare(SQLModel, table=True):
    """A conversation shared by link, read-only, as it was up to one turn.

    The token is the link's secret (anyone holding it reads the conversation without
    signing in), so it is random and long; one share per conversation, which sharing
    again moves to the newest turn (`app/store/shares.py`).
    """

    __tablename__ = "ai_share"
    __table_args__ = (
        UniqueConstraint("user_id", "conversation_id", name="uq_ai_share_conversation"),
    )

    token: str = Field(sa_column=Column(String(64), primary_key=True))
    user_id: str = Field(max_length=128)
    conversation_id: str = Field(max_length=128)
    turn_id: int = Field(sa_type=row_id())
    """The last turn shared: the link shows the path from the first question to it."""
    created_at: datetime = Field(sa_type=UTCDateTime)
    """When it was shared (or shared again)."""


AI_SHARE: Table = AiShare.__table__  # type: ignore[attr-defined]


class A2aPushConfig(SQLModel, table=True):
    """Where to tell an A2A client that its task changed state (A2A push notifications).

    Stored, not kept in memory, so the instance that runs the task delivers it
    whichever instance the client set it on (`app/api/a2a/push.py`).
    """

    __tablename__ = "a2a_push_config"
    __table_args__ = (Index("ix_a2a_push_config_conversation", "user_id", "conversation_id"),)

    user_id: str = Field(sa_column=Column(String(128), primary_key=True))
    """Owner; every query filters on it."""
    task_id: str = Field(sa_column=Column(String(160), primary_key=True))
    """The A2A task id, `<conversationId>.<rowId>`."""
    config_id: str = Field(sa_column=Column(String(64), primary_key=True))
    """The client's id for the config, or one we made up."""
    conversation_id: str = Field(max_length=128)
    """The task's conversation: deleting it deletes its configs."""
    url: str = Field(sa_column=Column(Text, nullable=False))
    token: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """Sent back as `X-A2A-Notification-Token`, for the receiver to check."""
    auth_scheme: str | None = Field(default=None, max_length=64)
    auth_credentials: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """With the scheme, sent as `Authorization: <scheme> <credentials>`."""
    create_time: datetime = Field(default_factory=_utc_now, sa_type=UTCDateTime)


A2A_PUSH_CONFIG: Table = A2aPushConfig.__table__  # type: ignore[attr-defined]


class AuthKey(SQLModel, table=True):
    """A key a user made for scripts and other agents: only its SHA-256 is kept.

    The key itself is shown once, when it is made; `prefix` (its first
    characters) is what the owner recognises it by in the list.
    """

    __tablename__ = "auth_key"

    id: str = Field(sa_column=Column(String(32), primary_key=True))
    user_id: str = Field(sa_column=Column(String(128), nullable=False, index=True))
    """Owner; every query filters on it."""
    name: str | None = Field(default=None, max_length=200)
    prefix: str = Field(max_length=16)
    digest: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    """SHA-256 (hex) of the key: what a caller's key is looked up by."""
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    expires_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    last_used_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    """When it last let a request in, to the minute (written at most once a minute)."""


AUTH_KEY: Table = AuthKey.__table__  # type: ignore[attr-defined]


class UserLimit(SQLModel, table=True):
    """An admin's limits for one user, replacing the settings' for that user on every instance.

    A NULL column keeps the setting's value for that limit.
    """

    __tablename__ = "user_limit"

    user_id: str = Field(sa_column=Column(String(128), primary_key=True))
    max_streams: int | None = None
    streams_per_minute: int | None = None
    uploads_per_minute: int | None = None
    updated_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


USER_LIMIT: Table = UserLimit.__table__  # type: ignore[attr-defined]


class UserPreference(SQLModel, table=True):
    """What a user chose on one device for every device: the model the page offers first.

    A row only once the user chose something; no row: the service's defaults.
    """

    __tablename__ = "user_preference"

    user_id: str = Field(sa_column=Column(String(128), primary_key=True))
    model: str | None = Field(default=None, max_length=64)
    """The catalog id of the model the user picked last (`MODELS`); None: the agent's own."""
    updated_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))


USER_PREFERENCE: Table = UserPreference.__table__  # type: ignore[attr-defined]
