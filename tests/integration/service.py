"""Build and serve the real app against local fakes, on the chosen backends."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.agents.base import BaseAgent
from app.agents.registry import AGENTS, AgentEntry
from app.agents.turn import AgentCore
from app.config import Settings
from app.factory import create_app
from app.llm.base import ChatModel
from tests.fakes.model_behaviours import Answers, Behaving, Behaviour
from tests.fakes.model_servers import FAKE_PROVIDERS
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.support.server import serve
from tests.support.sse import Event, collect, events

TEST_LLM_KEY = "sk-test-secret-key-0123456789"


def with_agent(cls: type[BaseAgent], kind: str = "test") -> list[AgentEntry]:
    """The registry and `cls` as one more kind: how a new agent arrives, one entry.

    Its routes, its place in `/agent/kinds` and in the A2A card all follow from the entry.
    """

    def factory(core: AgentCore, settings: Settings) -> BaseAgent:
        return cls(core)

    return [*AGENTS, AgentEntry(kind, "A test's agent", f"The {kind} agent stream", factory)]


def service_settings(
    tmp_path: Path, database_url: str, redis_url: str = "", **overrides: Any
) -> Settings:
    """Settings for a test app; nothing is read from the developer's `.env` or environment."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "redis_url": redis_url,
        "data_dir": tmp_path / "data",
        "llm_api_key": TEST_LLM_KEY,
        "llm_model": "fake-model",
        "llm_max_retries": 2,
        "llm_retry_max_delay_seconds": 0.05,
        "tavily_api_key": "",
        "recommendations_enabled": False,
        # Each costs a LibreOffice run: test_report_files.py turns them on.
        "deep_report_formats": "none",
        "api_keys": "",
        "log_level": "WARNING",
        # A deck's PDF starts LibreOffice (seconds of CPU a deck): only the tests of it ask.
        "pptx_pdf": False,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def process_env(fake_llm: FakeOpenAI, fake_search: FakeTavily) -> dict[str, str]:
    """The environment of the service run as a process (`ServiceProcess`) on the fake model
    and search, one model call a turn (no follow-up questions)."""
    return {
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_API_KEY": TEST_LLM_KEY,
        "LLM_MODEL": "fake-model",
        "TAVILY_API_KEY": "tvly-test",
        "TAVILY_BASE_URL": fake_search.base_url,
        "RECOMMENDATIONS_ENABLED": "false",
    }


@dataclass
class Backend:
    """Where a test app keeps its state: see the `backend` fixture in conftest.py."""

    database_url: str
    redis_url: str
    redis_prefix: str


def settings_for(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, **overrides: Any
) -> Settings:
    """Settings for an app on `backend` whose model is the fake."""
    return service_settings(
        tmp_path,
        backend.database_url,
        backend.redis_url,
        redis_prefix=backend.redis_prefix,
        llm_base_url=fake_llm.base_url,
        **overrides,
    )


@contextlib.asynccontextmanager
async def running_service(
    settings: Settings, agents: Sequence[AgentEntry] = AGENTS, model: ChatModel | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The app on a real socket (its model scripted, when given), and a client pointed at it."""
    async with (
        serve(create_app(settings, agents, model)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def app_on(
    tmp_path: Path,
    provider: str,
    answers: Answers,
    behaviour: Behaviour,
    search: FakeTavily | None = None,
    **settings: Any,
) -> AsyncIterator[tuple[Any, ScriptedServer, Behaving]]:
    """The app with `provider`'s fake as its model, answering `answers` in `behaviour`."""
    async with FAKE_PROVIDERS[provider]() as fake:
        behaving = Behaving(fake, answers, behaviour)
        fake.responder = behaving
        if search is not None:
            settings |= {"tavily_api_key": "tvly-test", "tavily_base_url": search.base_url}
        config = service_settings(
            tmp_path,
            f"sqlite+aiosqlite:///{tmp_path}/app.db",
            llm_provider=provider,
            llm_base_url=fake.base_url,
            pptx_previews=False,
            **settings,
        )
        async with running_service(config) as client:
            yield client, fake, behaving


def settings_with_search(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
    **overrides: Any,
) -> Settings:
    """`settings_for`, with web search pointed at the fake Tavily."""
    return settings_for(
        backend,
        tmp_path,
        fake_llm,
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
        **overrides,
    )


async def ask(
    client: httpx.AsyncClient,
    query: str,
    conversation: str,
    kind: str = "chat",
    file_id: str | None = None,
    headers: dict[str, str] | None = None,
    template_file_id: str | None = None,
) -> list[Event]:
    """One whole turn on an agent (web search unless `kind` says), read as the original
    client reads it."""
    params = {"query": query, "conversationId": conversation}
    if file_id is not None:
        params["fileId"] = file_id
    if template_file_id is not None:
        params["templateFileId"] = template_file_id
    url = f"/agent/{kind}/stream"
    async with client.stream("GET", url, params=params, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        return await collect(response)


async def ask_with(client: httpx.AsyncClient, conversation: str, **fields: Any) -> list[Event]:
    """One whole turn on the web-search agent with any stream `fields` (`parentId`,
    `regenerate`, `query`)."""
    params = {"conversationId": conversation, **fields}
    async with client.stream("GET", "/agent/chat/stream", params=params) as response:
        assert response.status_code == 200
        return await collect(response)


async def history(client: httpx.AsyncClient, conversation: str) -> list[dict[str, Any]]:
    response = await client.get(f"/session/{conversation}")
    assert response.status_code == 200
    messages: list[dict[str, Any]] = response.json()["data"]["messages"]
    return messages


async def resume(client: httpx.AsyncClient, conversation: str, after: int) -> list[Event]:
    """The run's events after `after`, read to the end, as a client that reconnects reads them."""
    headers = {"Last-Event-ID": str(after)}
    params = {"conversationId": conversation}
    async with client.stream("GET", "/agent/resume", params=params, headers=headers) as response:
        assert response.status_code == 200
        return await collect(response)


def instance_environment(
    database_url: str, redis: Mapping[str, str], fake_llm: FakeOpenAI, **settings: str
) -> dict[str, str]:
    """What an instance served as deployed (`ServiceProcess`) starts with: these backends
    (`redis` names the Redis: REDIS_URL and the rest), the fake model, and `settings`."""
    return {
        "DATABASE_URL": database_url,
        **redis,
        "LLM_BASE_URL": fake_llm.base_url,
        "LLM_API_KEY": TEST_LLM_KEY,
        "LLM_MODEL": "fake-model",
        "RECOMMENDATIONS_ENABLED": "false",
        "LOG_LEVEL": "WARNING",
        **settings,
    }


async def outcome(
    client: httpx.AsyncClient,
    conversation: str,
    headers: dict[str, str] | None = None,
    query: str = "Again",
) -> str | int:
    """How a question ends: the turn's final status, or the HTTP status that refused it."""
    params = {"query": query, "conversationId": conversation}
    async with client.stream(
        "GET", "/agent/chat/stream", params=params, headers=headers
    ) as response:
        if response.status_code != 200:
            return response.status_code
        status: str = (await collect(response))[-1]["status"]
        return status


async def stored_turns(
    client: httpx.AsyncClient, conversation: str, headers: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """The conversation's stored turns, as (status, answer)."""
    response = await client.get(f"/session/{conversation}", headers=headers)
    assert response.status_code == 200
    return [(t["status"], t["answer"]) for t in response.json()["data"]["messages"]]


class BackgroundTurn:
    """A question whose stream is read to the end in the background, its answer's start
    awaitable (`begun`), so a test can act while the turn runs."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        conversation: str,
        headers: dict[str, str] | None = None,
        query: str = "Tell me",
    ) -> None:
        self.seen: list[Event] = []
        self._answered = asyncio.Event()
        params = {"query": query, "conversationId": conversation}
        self.task = asyncio.create_task(self._read(client, params, headers))

    async def begun(self) -> None:
        """Return once the answer's first text came; fail if the stream ended before it."""
        answered = asyncio.ensure_future(self._answered.wait())
        await asyncio.wait([self.task, answered], return_when=asyncio.FIRST_COMPLETED)
        answered.cancel()
        if not self._answered.is_set():
            await self.task  # its failure (a refused request), if it failed
            raise AssertionError(f"the stream ended before any text: {self.seen}")

    async def _read(
        self, client: httpx.AsyncClient, params: dict[str, str], headers: dict[str, str] | None
    ) -> list[Event]:
        async with client.stream(
            "GET", "/agent/chat/stream", params=params, headers=headers
        ) as response:
            assert response.status_code == 200, (await response.aread()).decode()
            async for event in events(response):
                self.seen.append(event)
                if event["type"] == "text":
                    self._answered.set()
        return self.seen
