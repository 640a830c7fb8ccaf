"""Run an agent in the test's process, wired as the app wires it, on a model the test gives.

For a test of an agent's own logic: `agent_core` builds the `AgentCore` the
lifespan builds, on real parts (a migrated database, the turn store, the
document library, the tools' HTTP client) and the model the test gives (a
`ScriptedModel`, scripted_model.py), and `run_turn` drives one turn as the
runner does: `begin()` stores the question, then its events, then its
conclusion. To drive the whole HTTP app on a scripted model instead, pass
it to `create_app(settings, model=...)`.

    settings = service_settings(tmp_path, sqlite_url, tavily_api_key="tvly-test", ...)
    async with agent_core(settings, ScriptedModel(...)) as core:
        events = await run_turn(web_search.build(core, settings), "How long is the warranty?")
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.agents.base import BaseAgent
from app.agents.turn import AgentCore, AgentSettings, Turn
from app.config import Settings
from app.core.events import Event
from app.core.run import ConversationKey, NeverStopped
from app.documents.library import DocumentLibrary, LibrarySettings
from app.llm.base import ChatModel
from app.llm.http import build_http_client
from app.llm.tokens import TokenCounter, install_encodings
from app.store.blobs import LocalBlobStore
from app.store.db import Database
from app.store.file_store import SqlFileStore
from app.store.turns import SqlTurnStore
from app.tools.search import configured_search


@asynccontextmanager
async def agent_core(
    settings: Settings, model: ChatModel, limits: AgentSettings | None = None
) -> AsyncIterator[AgentCore]:
    """What the lifespan gives agents, on `settings.database_url` (migrated) and `data_dir`.

    `limits` replaces the agent settings read from `settings` (rounds, memory, follow-ups).
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    install_encodings(settings.data_dir / "tiktoken")
    async with (
        Database.open(settings.database_url, pool_size=2, migrate=True) as db,
        build_http_client(settings) as http,
    ):
        yield AgentCore(
            model=model,
            store=SqlTurnStore(db),
            tokens=TokenCounter(),
            http=http,
            limits=limits or AgentSettings.from_settings(settings),
            database=db,
            documents=document_library(db, settings),
            search=configured_search(http, settings),
        )


def document_library(db: Database, settings: Settings) -> DocumentLibrary:
    """The lifespan's library on `db` and `settings.data_dir`, without embeddings."""
    return DocumentLibrary(
        SqlFileStore(db),
        LocalBlobStore(settings.data_dir / "files"),
        embedder=None,
        settings=LibrarySettings.from_settings(settings),
    )


async def run_turn(
    agent: BaseAgent,
    question: str,
    *,
    conversation_id: str = "c1",
    user_id: str = "u1",
    file_id: str | None = None,
    template_file_id: str | None = None,
) -> list[Event]:
    """One whole turn, question stored first, as the runner drives it; every event."""
    key = ConversationKey(user_id, conversation_id)
    turn = Turn(key, question, uuid.uuid4().hex, file_id=file_id, template_file_id=template_file_id)
    await agent.begin(turn)
    program = agent.start(turn)
    events = [event async for event in program.events(NeverStopped())]
    conclusion = await program.conclude(None, events.append)
    return [*events, *conclusion.events, conclusion.complete]
