"""Memory follows the branch: what the model is sent on a branched conversation.

A conversation with two first questions (ALPHA, then BETA asked beside it), and work on
the BETA branch: the skills agent's context compaction summarises only that branch, and the
follow-up suggestions are made from the turn's own question and answer, on a new turn and on
a regenerated one. Read off the requests the fake model received, over HTTP on each backend.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from app.agents import compaction, recommend
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply
from tests.integration.service import Backend, history, running_service, settings_for
from tests.support.sse import Event, collect

NOTES = "Write the notes"
NOTE_WORDS = "heat pumps move heat rather than make it; " * 60
"""About 600 tokens: three of them in one task go past the smallest context budget."""
FOLLOW_UPS = ["What about costs?", "And in winter?", "Which brands?"]


async def turn(client: httpx.AsyncClient, kind: str, **fields: Any) -> list[Event]:
    params = {"conversationId": "c-memory", **{k: str(v) for k, v in fields.items()}}
    async with client.stream("GET", f"/agent/{kind}/stream", params=params) as response:
        assert response.status_code == 200, await response.aread()
        events = await collect(response)
    assert events[-1]["status"] == "completed"
    return events


def question_of(body: Body) -> str:
    """The last plain user message: the turn's question (or a summary standing for it)."""
    asked = [
        m["content"]
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], str)
    ]
    return asked[-1] if asked else ""


def responder(fake: FakeOpenAI) -> Callable[[Body], Reply]:
    """Answers each question; the notes take four rounds of writing, then a plain answer."""
    rounds = {"written": 0}

    def answer(body: Body) -> Reply:
        system = fake.system_text(body)
        if system.startswith(compaction.SUMMARY_PROMPT[:40]):
            return Reply.text("Summary: notes 1 to 2 are written.")
        if system.startswith(recommend.PROMPT[:40]):
            return Reply.text(orjson.dumps({"questions": FOLLOW_UPS}).decode())
        question = question_of(body)
        if NOTES in question and rounds["written"] < 4:
            rounds["written"] += 1
            path = f"notes{rounds['written']}.md"
            return Reply.tool_calls([("write_file", {"path": path, "content": NOTE_WORDS})])
        return Reply.text(f"Answer to {question}")

    return answer


def sent(fake: FakeOpenAI, since: int) -> list[str]:
    return [orjson.dumps(body).decode() for body in fake.requests[since:]]


async def test_compaction_on_a_branch_summarises_only_that_branch(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.responder = responder(fake_llm)
    settings = settings_for(
        backend, tmp_path, fake_llm, skills_context_tokens=1000, skills_keep_tool_results=1
    )
    async with running_service(settings) as client:
        await turn(client, "skills", query="ALPHA question")
        beta = await turn(client, "skills", query="BETA question", parentId=0)
        mark = len(fake_llm.requests)
        notes = await turn(client, "skills", query=NOTES, parentId=beta[0]["sessionId"])
        requests = sent(fake_llm, mark)
        stored = await history(client, "c-memory")

    summaries = [r for r in requests if compaction.SUMMARY_PROMPT[:40] in r]
    assert summaries, "the task went past its context budget, so it was summarised"
    # The first summary is of the branch's memory and the task's first round; any later one
    # is of the summary before it, and the rounds since.
    assert "user: BETA question\\nassistant: Answer to BETA question" in summaries[0]
    assert all(NOTES in summary for summary in summaries)
    # Nothing of the other branch, in the summaries or in any other request of the task.
    assert not [r for r in requests if "ALPHA" in r]
    assert [(t["question"], t["status"]) for t in stored] == [
        ("BETA question", "completed"),
        (NOTES, "completed"),
    ]
    assert stored[1]["id"] == notes[0]["sessionId"]


async def test_follow_ups_on_a_branch_come_from_the_turn_itself(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.responder = responder(fake_llm)
    settings = settings_for(backend, tmp_path, fake_llm, recommendations_enabled=True)
    async with running_service(settings) as client:
        await turn(client, "chat", query="ALPHA question")
        beta = await turn(client, "chat", query="BETA question", parentId=0)
        mark = len(fake_llm.requests)
        more = await turn(client, "chat", query="BETA more", parentId=beta[0]["sessionId"])
        asked = sent(fake_llm, mark)
        mark = len(fake_llm.requests)
        again = await turn(client, "chat", regenerate=more[0]["sessionId"])
        asked_again = sent(fake_llm, mark)
        stored = await history(client, "c-memory")

    for requests in (asked, asked_again):
        [follow_up] = [r for r in requests if recommend.PROMPT[:40] in r]
        assert "Question: BETA more" in follow_up
        assert "Answer: Answer to BETA more" in follow_up
        assert not [r for r in requests if "ALPHA" in r]
    shown = [e for e in again if e["type"] == "recommend"]
    assert [orjson.loads(e["content"]) for e in shown] == [FOLLOW_UPS]
    assert [(t["question"], t["recommend"]) for t in stored] == [
        ("BETA question", FOLLOW_UPS),
        ("BETA more", FOLLOW_UPS),
    ]
    assert stored[1]["siblings"] == [more[0]["sessionId"], again[0]["sessionId"]]
