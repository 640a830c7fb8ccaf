"""What the base gives every agent: its own outcome (`paused`) and files that belong to the turn.

A test agent arrives as a new agent does: one class and one registry entry
(`with_agent`), its routes following from the entry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from app.agents.base import BaseAgent
from app.agents.turn import Turn, TurnState
from app.core.events import Event, TextEvent, ThinkingEvent
from app.documents.library import generated_event
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import (
    Backend,
    ask,
    history,
    running_service,
    settings_for,
    with_agent,
)

DECK_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
DECK = b"PK\x03\x04 a deck"


class AskingAgent(BaseAgent):
    """Asks what it still needs, then waits: the turn ends `paused`, not `completed`."""

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        yield ThinkingEvent("Checking the requirements…\n")
        yield TextEvent("How many slides, and for which audience?")
        state.pause()


class DeckAgent(BaseAgent):
    """Makes a file and hands it over, as the PowerPoint builder will."""

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        assert self.core.documents is not None
        stored = await self.core.documents.add_generated(
            turn.user_id, turn.conversation_id, "Solar power.pptx", DECK, DECK_MIME
        )
        event = generated_event(stored)
        yield event
        yield TextEvent(f"Your deck: [{stored.file_name}]({event.url})")


async def turn(client: httpx.AsyncClient, query: str, conversation: str) -> list[dict[str, object]]:
    return await ask(client, query, conversation, "test")


async def test_an_agent_ends_its_turn_paused_and_it_is_stored_so(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, recommendations_enabled=True)
    async with running_service(settings, with_agent(AskingAgent)) as client:
        events = await turn(client, "Make me a deck", "c-paused")
        [stored] = await history(client, "c-paused")
        again = await client.get("/agent/stop", params={"conversationId": "c-paused"})

    assert [e["type"] for e in events] == ["start", "thinking", "text", "complete"]
    assert events[-1]["status"] == "paused"
    assert stored["status"] == "paused"
    assert stored["answer"] == "How many slides, and for which audience?"
    # A turn waiting for the user asks no follow-up questions, and holds nothing running.
    assert fake_llm.requests == []
    assert again.json()["success"] is False


async def test_a_generated_file_is_part_of_the_turn_listed_downloadable_and_deleted_with_it(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings, with_agent(DeckAgent)) as client:
        events = await turn(client, "Make me a deck", "c-deck")
        [file_event] = [e for e in events if e["type"] == "file"]
        [stored] = await history(client, "c-deck")
        listing = (await client.get("/file/list")).json()["data"]
        download = await client.get(str(file_event["url"]))
        deleted = await client.delete("/session/c-deck")
        exists = (await client.get(f"/file/exists/{file_event['fileId']}")).json()["data"]
        listing_after = (await client.get("/file/list")).json()["data"]

    assert events[-1]["status"] == "completed"
    assert {k: v for k, v in file_event.items() if k != "_id"} == {
        "type": "file",
        "fileId": file_event["fileId"],
        "name": "Solar power.pptx",
        "url": f"/file/download/{file_event['fileId']}",
        "size": len(DECK),
        "mimeType": DECK_MIME,
    }
    assert stored["files"] == [{k: v for k, v in file_event.items() if k not in ("type", "_id")}]
    assert [(f["fileId"], f["source"], f["status"]) for f in listing] == [
        (file_event["fileId"], "generated", "ready")
    ]
    assert download.status_code == 200
    assert download.content == DECK
    assert deleted.status_code == 200
    assert exists is False
    assert listing_after == []
    assert not [p for p in (settings.data_dir / "files").rglob("*") if p.is_file()]
