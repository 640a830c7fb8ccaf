"""The ReAct loop with the real OpenAI adapter over HTTP, a real store, and test tools."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest

from app.agents.react import FINAL_ROUND_NOTE, ReActAgent
from app.agents.turn import AgentCore, AgentSettings, Turn
from app.core.events import Reference
from app.core.messages import Msg, ToolResultBlock
from app.core.tools import ToolSchema
from app.llm.registry import build_chat_model
from app.llm.tokens import TokenCounter, install_encodings
from app.store.db import Database
from app.store.turns import SqlTurnStore
from app.tools.base import Tool, ToolContext, ToolOutput
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import service_settings
from tests.support.agents import document_library, run_turn


class Boom:
    schema = ToolSchema("boom", "Always fails.")

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise RuntimeError("the disk is on fire")


class Gate:
    """Two calls of this tool must be in flight together for either to finish."""

    schema = ToolSchema("gate", "Waits for its twin.")

    def __init__(self) -> None:
        self.arrived = 0
        self.both = asyncio.Event()

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.arrived += 1
        if self.arrived == 2:
            self.both.set()
        await asyncio.wait_for(self.both.wait(), timeout=5)
        return ToolOutput(
            f"gate {args['n']}", references=[Reference(f"https://g.test/{args['n']}", "g", "")]
        )


class StopAfterFirstAnswer:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def before_reasoning(self, turn: Turn, messages: list[Msg]) -> bool:
        self.seen.append("before_reasoning")
        return False

    async def after_reasoning(self, turn: Turn, response: object) -> bool:
        self.seen.append("after_reasoning")
        return True

    async def before_acting(self, turn: Turn, calls: object) -> bool:
        self.seen.append("before_acting")
        return False

    async def after_acting(self, turn: Turn, results: list[ToolResultBlock]) -> bool:
        self.seen.append("after_acting")
        return False


class ToolAgent(ReActAgent):
    agent_type = "chat"
    test_tools: Sequence[Tool] = ()

    def tools(self, turn: Turn) -> Sequence[Tool]:
        return self.test_tools


@pytest.fixture
async def deps(tmp_path: Path) -> AsyncIterator[tuple[AgentCore, FakeOpenAI]]:
    install_encodings(tmp_path / "tiktoken")
    async with (
        FakeOpenAI() as fake,
        Database.open(f"sqlite+aiosqlite:///{tmp_path}/a.db", pool_size=1, migrate=True) as db,
        httpx2.AsyncClient() as client,
    ):
        settings = service_settings(tmp_path, "unused", llm_base_url=fake.base_url)
        yield (
            AgentCore(
                model=build_chat_model(settings, client),
                store=SqlTurnStore(db),
                tokens=TokenCounter(),
                http=client,
                limits=dataclasses.replace(
                    AgentSettings.defaults(), max_rounds=2, recommendations=False
                ),
                documents=document_library(db, settings),
                database=db,
            ),
            fake,
        )


async def test_a_tool_that_raises_becomes_an_error_result_for_the_model(
    deps: tuple[AgentCore, FakeOpenAI],
) -> None:
    core, fake = deps
    agent = ToolAgent(core)
    agent.test_tools = (Boom(),)
    fake.script(Reply.tool_calls([("boom", {})]), Reply.text("Sorry, the tool failed."))

    events = await run_turn(agent, "Go")

    tool_end = next(e for e in events if e.type == "tool_end")
    assert tool_end.is_error
    assert "the disk is on fire" in tool_end.result
    tool_message = fake.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "the disk is on fire" in tool_message["content"]
    assert events[-1].status == "completed"  # type: ignore[union-attr]


async def test_parallel_calls_run_concurrently_and_results_keep_call_order(
    deps: tuple[AgentCore, FakeOpenAI],
) -> None:
    core, fake = deps
    agent = ToolAgent(core)
    agent.test_tools = (Gate(),)
    fake.script(
        Reply.tool_calls([("gate", {"n": 1}), ("gate", {"n": 2})], fragments=3),
        Reply.text("Both gates opened."),
    )

    events = await run_turn(agent, "Go")

    kinds = [e.type for e in events if e.type in ("tool_start", "tool_end")]
    assert kinds == ["tool_start", "tool_start", "tool_end", "tool_end"]
    results = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in results] == ["gate 1", "gate 2"]
    reference = next(e for e in events if e.type == "reference")
    assert [r.url for r in reference.references()] == [
        "https://g.test/1",
        "https://g.test/2",
    ]


async def test_after_max_rounds_one_last_call_without_tools_answers(
    deps: tuple[AgentCore, FakeOpenAI],
) -> None:
    core, fake = deps
    agent = ToolAgent(core)
    agent.test_tools = (Boom(),)
    fake.script(
        Reply.tool_calls([("boom", {})]),
        Reply.tool_calls([("boom", {})]),
        Reply.text("Here is what I have."),
    )

    events = await run_turn(agent, "Go")

    assert len(fake.requests) == 3
    assert "tools" in fake.requests[1]
    last = fake.requests[2]
    assert "tools" not in last
    assert last["messages"][-1] == {"role": "user", "content": FINAL_ROUND_NOTE}
    assert "".join(e.content for e in events if e.type == "text") == "Here is what I have."


async def test_a_hook_can_end_the_loop(deps: tuple[AgentCore, FakeOpenAI]) -> None:
    core, fake = deps
    hook = StopAfterFirstAnswer()
    agent = ToolAgent(core)
    agent.test_tools = (Boom(),)
    agent.hooks = (hook,)
    fake.script(Reply.tool_calls([("boom", {})]))

    events = await run_turn(agent, "Go")

    assert hook.seen == ["before_reasoning", "after_reasoning"]
    assert not any(e.type == "tool_start" for e in events)
    assert len(fake.requests) == 1
