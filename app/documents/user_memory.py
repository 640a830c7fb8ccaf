"""User memory: the facts and preferences a user keeps across conversations, and which of
them a turn is shown.

Written by the user (`/memory`) or by an agent's `remember` tool, through the same
calls here: an item is checked (1 to `MAX_CONTENT_CHARS` characters), embedded when
an embeddings endpoint is configured (as documents' passages are), and refused past
`MEMORY_MAX_ITEMS` a user.

Recall ranks a turn's candidates (the user's general items and the turn's project's)
against the question the way a document's passages are ranked
(app/documents/retrieval.py: BM25, fused with cosine similarity when the items and the
question have vectors of the same model), then the unranked ones newest first (BM25
ranks only items sharing a word with the question, and "I am vegetarian" matters to
"what should I cook?"), and keeps what fits in `MEMORY_TOKENS`. It costs one indexed
read of the user's few items, no model call, and one embeddings call only when the
items were embedded.

    MemoryRefused
    ├── MemoryFull       the user has `MEMORY_MAX_ITEMS` already
    └── BadMemoryText    empty, or longer than `MAX_CONTENT_CHARS`
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from app.config import SettingsPart
from app.documents.retrieval import Bm25Index, Embedder, normalize, rank
from app.llm.embeddings import EmbeddingError
from app.llm.tokens import TokenCounter
from app.store.memory_models import MemorySource, UserMemoryItem
from app.store.user_memory import Scope, SqlUserMemory, TurnMemory

log = logging.getLogger(__name__)

MAX_CONTENT_CHARS = 1000
LINE_OVERHEAD_TOKENS = 8
"""What an item's line costs beyond its text: the id and the list mark."""


class MemorySettings(SettingsPart, prefix="memory_"):
    enabled: bool
    tokens: int
    max_items: int


class MemoryRefused(Exception):
    pass


class MemoryFull(MemoryRefused):
    pass


class BadMemoryText(MemoryRefused):
    pass


@dataclass(frozen=True, slots=True)
class Recalled:
    """What a turn knows of its user: the items shown (best first) within the budget."""

    items: list[UserMemoryItem]


class UserMemory:
    def __init__(
        self,
        store: SqlUserMemory,
        *,
        embedder: Embedder | None,
        tokens: TokenCounter,
        settings: MemorySettings,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._tokens = tokens
        self.settings = settings

    async def items(self, user_id: str, project_id: str | None = None) -> list[UserMemoryItem]:
        return await self._store.items(user_id, project_id)

    async def add(
        self,
        user_id: str,
        content: str,
        source: MemorySource,
        project_id: str | None = None,
        conversation_id: str | None = None,
        turn_id: int | None = None,
    ) -> UserMemoryItem:
        """Keep a new item; raises `MemoryFull` or `BadMemoryText`."""
        text = checked(content)
        vector, model = await self._embed(text)
        now = datetime.now(UTC)
        item = UserMemoryItem(
            id=uuid.uuid4().hex[:16],
            user_id=user_id,
            content=text,
            project_id=project_id,
            source=source,
            conversation_id=conversation_id,
            turn_id=turn_id,
            embedding_model=model,
            create_time=now,
            update_time=now,
        )
        if not await self._store.add(item, vector, self.settings.max_items):
            raise MemoryFull(
                f"Memory is full: at most {self.settings.max_items} items; delete or change one"
            )
        return item

    async def change(
        self, user_id: str, item_id: str, content: str, scope: Scope | None = None
    ) -> tuple[UserMemoryItem, UserMemoryItem] | None:
        """Replace an item's text; (before, after), or None when it is not the user's."""
        text = checked(content)
        vector, model = await self._embed(text)
        return await self._store.change(user_id, item_id, text, vector, model, scope)

    async def forget(
        self, user_id: str, item_id: str, scope: Scope | None = None
    ) -> UserMemoryItem | None:
        return await self._store.delete(user_id, item_id, scope)

    async def forget_all(self, user_id: str) -> int:
        return await self._store.delete_all(user_id)

    async def enabled(self, user_id: str) -> bool:
        return await self._store.enabled(user_id)

    async def set_enabled(self, user_id: str, enabled: bool) -> None:
        await self._store.set_enabled(user_id, enabled)

    async def recall(
        self, user_id: str, project_id: str | None, question: str, read: TurnMemory | None = None
    ) -> Recalled | None:
        """The items a turn is shown; None when the user switched memory off. `read`: the
        user's memory as the turn's start read it already (else it is read here)."""
        if read is None:
            read = await self._store.for_turn(user_id)
        if not read.enabled:
            return None
        candidates = [
            (item, vector)
            for item, vector in read.items
            if item.project_id is None or item.project_id == project_id
        ]
        if not candidates:
            return Recalled([])
        query_vector = await self._query_vector(candidates, question)
        texts = [item.content for item, _ in candidates]
        vectors = None
        if query_vector is not None and self._embedder is not None:
            model = self._embedder.model
            vectors = [v if v and item.embedding_model == model else [] for item, v in candidates]
        ranked = rank(Bm25Index(texts), question, len(texts), vectors, query_vector)
        seen = set(ranked)
        order = ranked + [i for i in range(len(candidates)) if i not in seen]
        budget, used, shown = self.settings.tokens, 0, []
        for index in order:
            item = candidates[index][0]
            cost = self._tokens.count(item.content) + LINE_OVERHEAD_TOKENS
            if used + cost <= budget:
                shown.append(item)
                used += cost
        return Recalled(shown)

    async def _embed(self, text: str) -> tuple[list[float] | None, str | None]:
        if self._embedder is None:
            return None, None
        try:
            (vector,) = await self._embedder.embed([text])
        except EmbeddingError as exc:
            log.warning("a memory item is kept without embedding: %s", exc)
            return None, None
        return normalize(vector), self._embedder.model

    async def _query_vector(
        self, candidates: Sequence[tuple[UserMemoryItem, list[float] | None]], question: str
    ) -> list[float] | None:
        """The question's vector, when some candidate was embedded by the model configured now."""
        embedder = self._embedder
        if embedder is None or not any(
            v is not None and item.embedding_model == embedder.model for item, v in candidates
        ):
            return None
        try:
            (vector,) = await embedder.embed([question])
        except EmbeddingError as exc:
            log.warning("no question embedding, memory ranked by BM25 alone: %s", exc)
            return None
        return normalize(vector)


def checked(content: str) -> str:
    """The item's text trimmed; raises `BadMemoryText` when empty or too long."""
    text = content.strip()
    if not text or len(text) > MAX_CONTENT_CHARS:
        raise BadMemoryText(f"content must be 1 to {MAX_CONTENT_CHARS} characters")
    return text
