"""A burst of new turns stores its questions a few at a time, and every turn of it runs.

Starting a turn (the question stored with the memory read, the run launched)
costs far more than an event of a running stream. `MAX_STARTING_TURNS`
bounds how many turns start at once, so a burst of a thousand does not hold
the running streams' events back (bench/README.md). The limit holds only the
start: every turn of the burst still claims its conversation at once, and
runs once its turn to start comes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from app.agents.registry import AGENTS, AgentEntry
from app.agents.turn import AgentCore, Turn
from app.agents.web_search import WebSearchAgent
from app.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import Backend, ask, history, running_service, settings_for
from tests.support.polling import eventually


@dataclass
class Starts:
    release: asyncio.Event = field(default_factory=asyncio.Event)
    storing: int = 0
    most: int = 0
    """The most questions being stored at one time."""


class HeldStart(WebSearchAgent):
    """The web-search agent, whose questions wait to be stored until the test lets them."""

    def __init__(self, core: AgentCore, starts: Starts) -> None:
        super().__init__(core, None)
        self._starts = starts

    async def begin(self, turn: Turn) -> None:
        starts = self._starts
        starts.storing += 1
        starts.most = max(starts.most, starts.storing)
        try:
            await starts.release.wait()
            await super().begin(turn)
        finally:
            starts.storing -= 1


def agents_holding(starts: Starts) -> list[AgentEntry]:
    def factory(core: AgentCore, settings: Settings) -> HeldStart:
        return HeldStart(core, starts)

    return [
        dataclasses.replace(entry, factory=factory) if entry.kind == "chat" else entry
        for entry in AGENTS
    ]


async def until_claimed(client: httpx.AsyncClient, turns: int) -> None:
    """Until `turns` turns have claimed their conversations (listed as running)."""

    async def claimed() -> bool:
        runs: list[dict[str, str]] = (await client.get("/agent/runs")).json()["data"]
        return sum(run["status"] == "running" for run in runs) >= turns

    await eventually(claimed, within=30, what=f"{turns} claimed turns")


async def test_a_burst_of_turns_starts_a_few_at_a_time_and_every_one_runs(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    starts = Starts()
    settings = settings_for(backend, tmp_path, fake_llm, max_starting_turns=2)
    async with running_service(settings, agents_holding(starts)) as client:
        burst = [asyncio.create_task(ask(client, "Hi", f"burst-{n}")) for n in range(5)]
        await until_claimed(client, 5)
        storing_while_held = starts.storing
        starts.release.set()
        answers = await asyncio.gather(*burst)

    assert storing_while_held == 2
    assert starts.most == 2
    assert [events[-1]["status"] for events in answers] == ["completed"] * 5


async def test_a_turn_stopped_while_it_waits_to_start_ends_stopped(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    starts = Starts()
    settings = settings_for(backend, tmp_path, fake_llm, max_starting_turns=1)
    async with running_service(settings, agents_holding(starts)) as client:
        first = asyncio.create_task(ask(client, "Hi", "first"))
        second = asyncio.create_task(ask(client, "Hi", "second"))
        await until_claimed(client, 2)  # one stores its question, one waits its turn to start
        stop = asyncio.create_task(client.get("/agent/stop", params={"conversationId": "second"}))
        # A stop answers once its turn has ended, and this one cannot end before it starts.
        # The wait is also the stop's time to reach the instance (over Redis on one
        # backend): nothing outside shows that it has, so it gets a wide margin.
        done, _ = await asyncio.wait({stop}, timeout=0.5)
        assert not done
        starts.release.set()
        stopped, answered, stop_answer = await asyncio.gather(second, first, stop)
        stored = await history(client, "second")

    assert stopped[-1]["status"] == "stopped"
    assert answered[-1]["status"] == "completed"
    assert stop_answer.json()["success"] is True
    assert [turn["status"] for turn in stored] == ["stopped"]
