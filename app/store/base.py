"""The persistence interface agents and routes use; no database driver is imported here.

One turn is one `ai_session` row: written when the question arrives
(`add_question`, status `running`) and once more when the run ends
(`finish_turn`), never per token. Every read is scoped to a user, so a
conversation of another user is simply not found.

An uploaded file is one `ai_file` row (its metadata and extracted text) and
its passages in `ai_file_chunk`; its bytes are in a `BlobStore` (blobs.py),
never in the database.

    StoreError              base: callers catch this
    └── StoreUnavailable    the database cannot be reached (answer 503)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Protocol

from app.store.models import StoredFile, StoredTurn, TurnOutcome
from app.store.records import FileStatus, ToolCall, TurnStatus
from app.store.tree import ConversationTree


class StoreError(Exception):
    pass


class StoreUnavailable(StoreError):
    pass


@dataclass(slots=True)
class ConversationSummary:
    """One conversation in the history list: its first question, its latest activity."""

    conversation_id: str
    title: str
    """The user's title, or the first question cut (store/titles.py)."""
    question: str
    agent_type: str
    fileid: str | None
    create_time: datetime
    update_time: datetime
    pinned: bool = False
    """Pinned by the user: listed before the rest."""
    shared: bool = False
    """Shared by link (app/store/shares.py)."""
    project_id: str | None = None
    """The project it is in (app/store/projects.py); None: none."""


@dataclass(frozen=True, slots=True)
class GoneTurn:
    """A deleted turn, as the agents need it to drop what they kept of it beside the turns."""

    id: int
    asked: datetime
    """When it was asked (its `create_time`): what an agent's own rows are matched on."""
    agent_type: str
    """The kind that answered it: the only agent that may have kept anything of it."""


@dataclass(slots=True)
class DeletedConversation:
    turns: int
    """Turn rows deleted; 0 when the conversation did not exist (or is another user's)."""
    blob_keys: list[str] = field(default_factory=list)
    """Blobs of the files deleted with it (used by no other conversation)."""
    gone: list[GoneTurn] = field(default_factory=list)
    """The deleted turns, oldest first, for what the agents keep of each (a research's
    checkpoints, a deck's builds)."""


@dataclass(slots=True)
class DeletedTurns:
    """What deleting a turn and the turns below it did."""

    turns: int
    """Turn rows deleted; 0 when the turn was not found or one of them runs."""
    running: bool = False
    """Nothing was deleted: a turn of the subtree is running."""
    blob_keys: list[str] = field(default_factory=list)
    """Blobs of the files deleted with them (used by no other turn)."""
    gone: list[GoneTurn] = field(default_factory=list)
    """The deleted turns, oldest first, for what the agents keep of each (a research's
    checkpoints, a deck's builds)."""


class TurnStore(Protocol):
    async def add_question(self, turn: StoredTurn, parent_id: int | None = None) -> int:
        """Insert the turn with status `running` (its id and times set here); return its row id.

        `parent_id`: the turn it follows; 0 for none (a new first question); None
        for the conversation's active leaf. The new turn becomes the active leaf.
        """
        ...

    async def begin_turn(
        self, turn: StoredTurn, memory_turns: int, parent_id: int | None = None
    ) -> tuple[int, list[StoredTurn]]:
        """`add_question`, and the latest `memory_turns` turns of the path to its parent (oldest
        first, nothing of other branches), in one round trip where the database allows."""
        ...

    async def finish_turn(self, turn_id: int, outcome: TurnOutcome) -> None: ...

    async def finish_unfinished_turn(self, turn_id: int, outcome: TurnOutcome) -> bool:
        """`finish_turn` only while the turn is `running` or `interrupted`; True if it wrote."""
        ...

    async def save_partial(
        self,
        turn_id: int,
        answer: str,
        thinking: str,
        tools: list[ToolCall] | None = None,
    ) -> None:
        """Store a running turn's answer (and tool calls, if given) so far; no effect once ended."""
        ...

    async def mark_interrupted(
        self, older_than: datetime | None = None, *, unowned: bool = False
    ) -> int:
        """Mark `running` turns (matching every given filter) `interrupted`; return how many.

        Their partial answer stays. For turns whose run died with its process, at
        start-up. `older_than` compares with the turn's latest write (`update_time`);
        `unowned` keeps to rows stored before turns recorded their instance (no
        instance can take those over).
        """
        ...

    async def interrupt_turns(self, turns: Sequence[StoredTurn]) -> list[tuple[str, str]]:
        """Mark `turns` `interrupted` where each is still `running` on the instance it was read
        with (none took it over since); the (user, conversation) pairs of those marked."""
        ...

    async def running_turns(self, instance_id: str) -> list[StoredTurn]:
        """The instance's turns stored `running`, oldest first (it died, or drained)."""
        ...

    async def take_over(self, turn_id: int, dead: str, takeovers: int) -> StoredTurn | None:
        """Make the `dead` instance's running turn this instance's, as its move `takeovers + 1`;
        the turn as it is now, or None when it ended or another instance took that move."""
        ...

    async def recent_turns(
        self, user_id: str, conversation_id: str, limit: int, before_id: int | None = None
    ) -> list[StoredTurn]:
        """The last `limit` turns of the path to the turn `before_id` follows (to the active
        leaf without it), oldest first."""
        ...

    async def list_conversations(
        self, user_id: str, page: int, size: int, project_id: str | None = None
    ) -> tuple[list[ConversationSummary], int]:
        """A page of conversations (with `project_id`, that project's), newest activity first,
        and the total count."""
        ...

    async def get_conversation(self, user_id: str, conversation_id: str) -> list[StoredTurn]:
        """All turns, oldest first; empty when it does not exist or is another user's."""
        ...

    async def get_tree(self, user_id: str, conversation_id: str) -> ConversationTree:
        """All turns and the active path's chosen leaf; no turns when not found."""
        ...

    async def get_turn(self, user_id: str, conversation_id: str, turn_id: int) -> StoredTurn | None:
        """One turn of the conversation; None when it is not there or is another user's."""
        ...

    async def choose_path(
        self, user_id: str, conversation_id: str, turn_id: int
    ) -> ConversationTree | None:
        """Make the path through `turn_id` active (below it, the newest child at each step).

        The tree as it is now; None when the turn is not found.
        """
        ...

    async def delete_turns(self, user_id: str, conversation_id: str, turn_id: int) -> DeletedTurns:
        """Delete the turn, the turns below it and the files only they used, in one transaction,
        unless one of them runs. An active path through it moves to the newest remaining
        sibling's newest leaf, or to the parent. The caller removes `blob_keys` after."""
        ...

    async def delete_conversation(self, user_id: str, conversation_id: str) -> DeletedConversation:
        """Delete the conversation's rows and the files only it used, in one transaction.

        The files' bytes are not touched: the caller removes `blob_keys` after the commit.
        """
        ...

    async def delete_last_turn(
        self, user_id: str, conversation_id: str, statuses: tuple[TurnStatus, ...]
    ) -> GoneTurn | None:
        """Delete the conversation's newest turn if its status is one of `statuses`.

        For a turn rolled back by the next message (`multitaskStrategy: rollback`),
        which holds the conversation's claim, so nothing newer can appear meanwhile.
        Returns the deleted turn, or None.
        """
        ...

    async def paused_turns(self, user_id: str, limit: int) -> list[StoredTurn]:
        """The user's conversations whose active leaf waits for the user, newest first."""
        ...

    async def decide(
        self, user_id: str, conversation_id: str, approval_id: str, agent_type: str | None = None
    ) -> StoredTurn | None:
        """Take the decision on a paused turn's pending approval: the turn, `running` again
        (on this instance, its approval cleared), or None when no paused turn of the
        conversation (of `agent_type`, when given) waits on that id (unknown, another
        user's, another agent's, or already decided).

        One UPDATE: of two instances deciding at once, exactly one gets the turn.
        """
        ...

    async def ping(self) -> None:
        """Raise `StoreUnavailable` when the database cannot be reached."""
        ...


@dataclass(slots=True)
class FileChunk:
    """A passage and where it is: units `first`..`last` (pages, paragraphs or lines)."""

    seq: int
    unit: str
    first: int
    last: int
    text: str
    vector: list[float] | None = None


@dataclass(slots=True)
class FileOutcome:
    """What extraction produced, written in one transaction."""

    status: FileStatus
    error: str | None = None
    content: str | None = None
    chunks: list[FileChunk] = field(default_factory=list)
    embedding_model: str | None = None
    ocr: bool = False


class FileStore(Protocol):
    async def add_file(self, file: StoredFile) -> None:
        """Record a file whose bytes are stored (status `processing`)."""
        ...

    async def finish_file(self, file_id: str, outcome: FileOutcome) -> None:
        """Set the file's status, text and chunks together."""
        ...

    async def get_file(self, user_id: str, file_id: str) -> StoredFile | None: ...

    async def list_files(self, user_id: str) -> list[StoredFile]:
        """The user's files, newest first."""
        ...

    async def file_content(self, user_id: str, file_id: str) -> str | None:
        """The extracted text; None when the file is not found or has none."""
        ...

    async def file_chunks(self, user_id: str, file_id: str) -> list[FileChunk]:
        """The file's passages in document order, with their vectors."""
        ...

    async def delete_file(self, user_id: str, file_id: str) -> str | None:
        """Delete the file's rows in one transaction; its blob key, or None if not found."""
        ...


class Unset(Enum):
    """A field left out, where None is a value (a conversation moved out of its project)."""

    UNSET = "unset"


UNSET = Unset.UNSET


@dataclass(frozen=True, slots=True)
class Marks:
    """What a user set on a conversation."""

    title: str | None = None
    """The title the user gave; None when they never renamed the conversation."""
    pinned: bool = False
    project_id: str | None = None
    """The project it is in; None: none."""


class ConversationTitles(Protocol):
    """What users set on their conversations: titles (the rest are titled by their first
    question) and pins."""

    async def mark(
        self,
        user_id: str,
        conversation_id: str,
        *,
        title: str | None = None,
        pinned: bool | None = None,
        project_id: str | Unset | None = UNSET,
    ) -> Marks | None:
        """Store what is given (a project id, or None for none), keep the rest; the marks now,
        or None when the user has no such conversation."""
        ...

    async def place(self, user_id: str, conversation_id: str, project_id: str) -> None:
        """Put a conversation in a project before its first turn is stored."""
        ...

    async def marks(self, user_id: str, conversation_id: str) -> Marks:
        """What the user set on the conversation."""
        ...


@dataclass(slots=True)
class SearchHit:
    """A turn whose question or answer holds what was searched for."""

    conversation_id: str
    title: str
    turn_id: int
    snippet: str
    """Up to `SNIPPET_CHARS` of the matching text around its first match."""
    create_time: datetime


class TurnSearch(Protocol):
    async def search(
        self, user_id: str, text: str, page: int, size: int
    ) -> tuple[list[SearchHit], int]:
        """A page of the user's turns whose question or answer contains `text` (any case),
        newest first, and how many there are in all."""
        ...
