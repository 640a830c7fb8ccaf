"""Anthropic's `redacted_thinking`: kept, sent back verbatim in the tool loop, never shown.

Anthropic encrypts reasoning its safety systems flag and requires the block
back, unchanged, with the tool calls it led to; a client that drops or
alters it gets the next request refused. A person never sees it: not as
`thinking`, not as `text`, not in the stored turn.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.fakes.anthropic_server import FakeAnthropic, RedactedThinkingReply
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import ask, history, running_service, service_settings
from tests.support.sse import text_of, types

SEALED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP+sealed=="


async def test_redacted_thinking_goes_back_verbatim_and_is_never_shown(
    tmp_path: Path, fake_search: FakeTavily
) -> None:
    async with FakeAnthropic() as fake:
        fake.script(
            RedactedThinkingReply(
                SEALED, Reply.tool_calls([("web_search", {"query": "python 3.13"})])
            ),
            Reply.text("Python 3.13 is out [1]."),
        )
        settings = service_settings(
            tmp_path,
            f"sqlite+aiosqlite:///{tmp_path}/app.db",
            llm_provider="anthropic",
            llm_base_url=fake.base_url,
            llm_thinking_budget=2048,
            tavily_api_key="tvly-test",
            tavily_base_url=fake_search.base_url,
        )
        async with running_service(settings) as client:
            evts = await ask(client, "What is new in Python?", "conv-1")
            stored = await history(client, "conv-1")
        requests = list(fake.requests)

    # The one `thinking` is the search's own notice.
    assert types(evts) == [
        "start",
        "thinking",
        "tool_start",
        "tool_end",
        "text",
        "reference",
        "complete",
    ]
    assert evts[-1]["status"] == "completed"
    assert text_of(evts) == "Python 3.13 is out [1]."
    assert SEALED not in orjson.dumps(evts).decode()
    assert SEALED not in orjson.dumps(stored).decode()
    assert len(requests) == 2
    replayed = requests[1]["messages"][1]
    assert replayed["role"] == "assistant"
    assert replayed["content"][0] == {"type": "redacted_thinking", "data": SEALED}
    assert replayed["content"][1]["type"] == "tool_use"
