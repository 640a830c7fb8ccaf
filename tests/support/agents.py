"""Run an agent in the test's process, wired as the app wires it, on a model the test gives.

`create_app` builds its model from the settings and offers no way to pass
one in, so a test that scripts a `ScriptedModel` (scripted_model.py) builds
the agent's `AgentDeps` here, on real parts (a migrated database, the session
and file stores, the tools' HTTP client), and drives one turn as the run
registry does: `begin()` stores the question, `run()` yields every event.

    settings = service_settings(tmp_path, sqlite_url, tavily_api_key="tvly-test", ...)
    async with agent_deps(settings, ScriptedModel(...)) as deps:
        events = await run_turn(WebSearchAgent(deps), "How long is the warranty?")
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.agents.base import AgentDeps, AgentSettings, BaseAgent, Turn
from app.config import Settings
from app.core.events import Event
from app.llm.base import ChatModel
from app.llm.http import build_http_client
from app.llm.tokens import TokenCounter, install_encodings
from app.store.blobs import LocalBlobStore
from app.store.db import Database
from app.store.files import SqlFileStore
from app.store.sessions import SqlSessionStore
from app.tasks.base import Claim
from app.tasks.runs import Run
from app.tools.files import FileLibrary, LibrarySettings


@asynccontextmanager
async def agent_deps(
    settings: Settings, model: ChatModel, agent: AgentSettings | None = None
) -> AsyncIterator[AgentDeps]:
    """What the lifespan gives agents, on `settings.database_url` (migrated) and `data_dir`.

    `agent` replaces the agent settings read from `settings` (rounds, memory, follow-ups).
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    install_encodings(settings.data_dir / "tiktoken")
    async with (
        Database.open(settings.database_url, pool_size=2, migrate=True) as db,
        build_http_client(settings) as http,
    ):
        yield AgentDeps(
            model=model,
            store=SqlSessionStore(db),
            tokens=TokenCounter(),
            http=http,
            settings=settings,
            agent=agent or AgentSettings.from_settings(settings),
            files=FileLibrary(
                SqlFileStore(db),
                LocalBlobStore(settings.data_dir / "files"),
                None,
                LibrarySettings.from_settings(settings),
            ),
        )


async def run_turn(
    agent: BaseAgent,
    question: str,
    *,
    conversation_id: str = "c1",
    user_id: str = "u1",
    file_id: str | None = None,
) -> list[Event]:
    """One whole turn, question stored first, as the run registry drives it; every event."""
    turn = Turn(conversation_id, user_id, question, uuid.uuid4().hex, file_id=file_id)
    await agent.begin(turn)
    run = Run(Claim(user_id, conversation_id, turn.task_id, agent.agent_type))
    return [event async for event in agent.run(turn, run)]
