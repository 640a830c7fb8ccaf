"""The documents' part of the app: the library of uploaded and generated files, and the
users' memory across conversations when `MEMORY_ENABLED` is on."""

from __future__ import annotations

from dataclasses import dataclass

from app.config import Settings
from app.documents.library import DocumentLibrary, LibrarySettings
from app.documents.user_memory import MemorySettings, UserMemory
from app.llm.factory import Models
from app.store.blobs import LocalBlobStore
from app.store.factory import Stores


@dataclass(frozen=True, slots=True, kw_only=True)
class Documents:
    library: DocumentLibrary
    user_memory: UserMemory | None
    """None: `MEMORY_ENABLED` is off."""


def build(settings: Settings, *, stores: Stores, models: Models) -> Documents:
    """Files' blobs under `DATA_DIR/files`; without an embedder, searched by their words alone."""
    embedder = models.embedder
    library = DocumentLibrary(
        stores.files,
        LocalBlobStore(settings.data_dir / "files"),
        embedder=embedder,
        settings=LibrarySettings.from_settings(settings),
    )
    memory_settings = MemorySettings.from_settings(settings)
    user_memory = None
    if memory_settings.enabled:
        user_memory = UserMemory(
            stores.user_memory, embedder=embedder, tokens=models.tokens, settings=memory_settings
        )
    return Documents(library=library, user_memory=user_memory)
