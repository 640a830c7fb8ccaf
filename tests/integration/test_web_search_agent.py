"""The web-search agent's ReAct turn on a scripted model, with the fake Tavily over real HTTP.

The model is a `ScriptedModel` in this process (tests/support/scripted_model.py),
so the test says in Python what the model answers to what it was sent; the
search is the real `TavilySearch` against the fake server; the turn is stored
in a real SQLite database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from app.agents import web_search
from app.config import Settings
from app.core.events import (
    CompleteEvent,
    Event,
    ReferenceEvent,
    StartEvent,
    TextEvent,
    ThinkingEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from app.core.messages import ToolResultBlock
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import service_settings
from tests.support.agents import agent_core, run_turn
from tests.support.scripted_model import ModelRequest, Reply, ScriptedModel


def outline(events: list[Event]) -> list[tuple[str, Any]]:
    """Each event's kind and what a user sees of it; consecutive deltas joined."""
    out: list[tuple[str, Any]] = []
    for event in events:
        if isinstance(event, TextEvent | ThinkingEvent):
            if out and out[-1][0] == event.type:
                out[-1] = (event.type, out[-1][1] + event.content)
            else:
                out.append((event.type, event.content))
        elif isinstance(event, StartEvent):
            out.append(("start", event.agent_type))
        elif isinstance(event, ToolStartEvent):
            out.append(("tool_start", (event.tool_name, orjson.loads(event.arguments))))
        elif isinstance(event, ToolEndEvent):
            out.append(("tool_end", (event.tool_name, event.is_error)))
        elif isinstance(event, ReferenceEvent):
            out.append(("reference", [ref.url for ref in event.references()]))
        elif isinstance(event, CompleteEvent):
            out.append(("complete", event.status))
        else:
            out.append((event.type, None))
    return out


@pytest.fixture
def settings(tmp_path: Path, fake_search: FakeTavily) -> Settings:
    """The app's settings on SQLite, with web search pointed at the fake Tavily."""
    return service_settings(
        tmp_path,
        f"sqlite+aiosqlite:///{tmp_path}/app.db",
        tavily_api_key="tvly-test",
        tavily_base_url=fake_search.base_url,
    )


def cite_first_result(request: ModelRequest) -> Reply:
    """The model's second call: it answers from the search result it was sent."""
    [result] = request.tool_results()
    first_line = result.output.splitlines()[1]  # under the untrusted-content wrapper
    return Reply.text(f"Seven years, says {first_line}.")


async def test_the_agent_searches_then_answers_from_what_the_search_returned(
    settings: Settings, fake_search: FakeTavily
) -> None:
    model = ScriptedModel(
        Reply.tool_calls(("web_search", {"query": "pump warranty"}), reasoning="Look it up."),
        cite_first_result,
    )
    async with agent_core(settings, model) as core:
        events = await run_turn(web_search.build(core, settings), "How long is the pump warranty?")
        [stored] = await core.store.get_conversation("u1", "c1")

    urls = ["https://example.test/pump-warranty/1", "https://example.test/pump-warranty/2"]
    answer = "Seven years, says [1] pump warranty result 1."
    assert outline(events) == [
        ("start", "chat"),
        ("thinking", "Look it up.Searching the web: pump warranty\n"),
        ("tool_start", ("web_search", {"query": "pump warranty"})),
        ("tool_end", ("web_search", False)),
        ("text", answer),
        ("reference", urls),
        ("complete", "completed"),
    ]
    assert fake_search.queries == ["pump warranty"]
    assert fake_search.auth_headers == ["Bearer tvly-test"]
    first, second = model.requests
    assert first.tool_names == ["web_search"]
    assert first.messages[-1].text_content() == "How long is the pump warranty?"
    assert second.tool_results() == [
        ToolResultBlock(
            "call_1",
            "web_search",
            '<untrusted-content source="web search: pump warranty">\n'
            "[1] pump warranty result 1\nURL: https://example.test/pump-warranty/1\n"
            "Facts about pump warranty, number 1.\n\n"
            "[2] pump warranty result 2\nURL: https://example.test/pump-warranty/2\n"
            "Facts about pump warranty, number 2.\n</untrusted-content>",
        )
    ]
    assert (stored.status, stored.answer, stored.thinking) == (
        "completed",
        answer,
        "Look it up.Searching the web: pump warranty\n",
    )
    assert [call.name for call in stored.tools] == ["web_search"]
    assert [ref["url"] for ref in stored.reference] == urls
    assert stored.prompt_tokens > 0


async def test_a_result_whose_link_is_not_a_web_address_is_neither_shown_nor_sent(
    settings: Settings, fake_search: FakeTavily
) -> None:
    """The page shows references as links: a `javascript:` one would run in the user's page."""
    fake_search.extra_results = [
        {"title": "Claim your prize", "url": "javascript:alert(document.cookie)", "content": "!"},
        {"title": "No address", "content": "Nothing to link to."},
        "not a result at all",
    ]
    model = ScriptedModel(
        Reply.tool_calls(("web_search", {"query": "pump warranty"})), cite_first_result
    )
    async with agent_core(settings, model) as core:
        events = await run_turn(web_search.build(core, settings), "How long is the pump warranty?")
        [stored] = await core.store.get_conversation("u1", "c1")

    urls = ["https://example.test/pump-warranty/1", "https://example.test/pump-warranty/2"]
    assert ("reference", urls) in outline(events)
    assert [ref["url"] for ref in stored.reference] == urls
    [sent] = model.requests[1].tool_results()
    assert "prize" not in sent.output
    assert "javascript:" not in sent.output


async def test_a_turn_that_needs_a_call_the_script_lacks_fails_the_test_not_the_turn(
    settings: Settings, fake_search: FakeTavily
) -> None:
    model = ScriptedModel(Reply.tool_calls(("web_search", {"query": "pump warranty"})))
    async with agent_core(settings, model) as core:
        with pytest.raises(pytest.fail.Exception, match="model call 2 has no step"):
            await run_turn(web_search.build(core, settings), "How long is the pump warranty?")

    assert fake_search.queries == ["pump warranty"]
