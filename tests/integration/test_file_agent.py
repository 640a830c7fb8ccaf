"""The file agent end to end: real app, real HTTP, real documents, a fake model server.

Each test runs on the embedded defaults (SQLite, in-process tasks) and on the
production pair (PostgreSQL, Redis).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, running_service, settings_for
from tests.integration.service import ask as ask_agent
from tests.integration.test_document_search import TOPICS
from tests.support.documents import pdf_bytes, scanned_pdf_bytes
from tests.support.sse import text_of, types

SEARCHABLE = {"file_whole_text_chars": 0, "file_chunk_chars": 150, "file_chunk_overlap_chars": 30}
"""Small passages (a page of `TOPICS` each), and no file small enough to be read whole."""
ALICE = {"Authorization": "Bearer key-a"}
BOB = {"Authorization": "Bearer key-b"}
WRAPPED = '<untrusted-content source="manual.pdf">\n'
"""How a passage of the manual reaches the model: marked as data (app/tools/untrusted.py)."""


async def upload(client: httpx.AsyncClient, name: str, data: bytes, **kwargs: Any) -> str:
    response = await client.post("/file/upload", files={"file": (name, data)}, **kwargs)
    assert response.status_code == 200, response.text
    file_id: str = response.json()["data"]["fileId"]
    return file_id


async def ask(
    client: httpx.AsyncClient, query: str, conversation: str, file_id: str
) -> list[dict[str, Any]]:
    return await ask_agent(client, query, conversation, "file", file_id)


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_a_question_is_answered_from_the_right_page_with_references(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("The warranty lasts seven years (page 7)."))
    question = "How long is the pump warranty?"
    async with running_service(settings_for(backend, tmp_path, fake_llm, **SEARCHABLE)) as client:
        file_id = await upload(client, "manual.pdf", pdf_bytes(TOPICS))
        evts = await ask(client, question, "c-1", file_id)
        turn = (await client.get("/session/c-1")).json()["data"]
        listing = (await client.get("/session/list")).json()["data"]["records"]

    assert types(evts) == ["start", "tool_start", "tool_end", "text", "reference", "complete"]
    assert evts[0]["agentType"] == "file"
    start, end = evts[1], evts[2]
    assert (start["toolName"], end["toolName"]) == ("search_document", "search_document")
    assert start["toolCallId"] == end["toolCallId"]
    assert orjson.loads(start["arguments"]) == {"query": question}
    assert not end["isError"]
    assert end["result"].split("\n\n")[1].startswith(f"{WRAPPED}[1] page 7\n")
    assert "seven years" in end["result"]
    assert text_of(evts) == "The warranty lasts seven years (page 7)."
    refs = orjson.loads(next(e for e in evts if e["type"] == "reference")["content"])
    assert refs[0] == {
        "url": f"/file/download/{file_id}#page=7&passage=6",
        "title": "manual.pdf, page 7",
        "content": TOPICS[6],
    }
    assert all(r["url"].startswith(f"/file/download/{file_id}#page=") for r in refs)
    assert evts[-1]["status"] == "completed"
    assert evts[-1]["tools"] == ["search_document"]
    # The model's one call already held the search and its passages.
    (request,) = fake_llm.requests
    calls = [m for m in request["messages"] if m.get("tool_calls")]
    assert calls[0]["tool_calls"][0]["function"]["name"] == "search_document"
    assert "seven years" in tool_results(request)[0]
    assert [t["function"]["name"] for t in request["tools"]] == ["search_document", "remember"]
    (message,) = turn["messages"]
    assert (message["fileid"], message["answer"]) == (file_id, text_of(evts))
    assert message["reference"] == refs
    assert (turn["agentType"], turn["fileid"]) == ("file", file_id)
    assert listing[0]["fileid"] == file_id


async def test_the_model_can_search_again_with_other_words(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.tool_calls([("search_document", {"query": "refund returned thirty days"})]),
        Reply.text("Unused products can be returned within thirty days (page 8)."),
    )
    async with running_service(settings_for(backend, tmp_path, fake_llm, **SEARCHABLE)) as client:
        file_id = await upload(client, "manual.pdf", pdf_bytes(TOPICS))
        evts = await ask(client, "Can I give it back?", "c-2", file_id)

    assert types(evts) == [
        "start",
        "tool_start",
        "tool_end",
        "tool_start",
        "tool_end",
        "text",
        "reference",
        "complete",
    ]
    second = [e for e in evts if e["type"] == "tool_end"][1]
    assert second["result"].split("\n\n")[1].startswith(f"{WRAPPED}[1] page 8\n")
    assert "thirty days" in tool_results(fake_llm.requests[1])[1]
    refs = orjson.loads(next(e for e in evts if e["type"] == "reference")["content"])
    assert f"/file/download/{file_id}#page=8&passage=7" in [r["url"] for r in refs]


async def test_a_small_file_is_handed_over_whole(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        file_id = await upload(client, "short.pdf", pdf_bytes(TOPICS[:3]))
        evts = await ask(client, "Summarise it.", "c-3", file_id)

    end = next(e for e in evts if e["type"] == "tool_end")
    assert end["result"].startswith(
        'The whole text of "short.pdf":\n\n<untrusted-content source="short.pdf">\n[1] pages 1-3\n'
    )
    assert all(topic in tool_results(fake_llm.requests[0])[0] for topic in TOPICS[:3])
    refs = orjson.loads(next(e for e in evts if e["type"] == "reference")["content"])
    assert [r["title"] for r in refs] == ["short.pdf, pages 1-3"]


async def test_a_file_without_text_is_reported_not_answered_from(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        file_id = await upload(client, "scan.pdf", scanned_pdf_bytes())
        evts = await ask(client, "What does the letter say?", "c-4", file_id)
        turn = (await client.get("/session/c-4")).json()["data"]["messages"][0]

    assert types(evts) == ["start", "tool_start", "tool_end", "text", "complete"]
    assert evts[2]["isError"]
    answer = text_of(evts)
    assert answer.startswith('I cannot answer from this file. "scan.pdf" cannot be read.')
    assert "scanned image" in answer
    assert evts[-1]["status"] == "completed"
    assert fake_llm.requests == []
    assert (turn["answer"], turn["fileid"]) == (answer, file_id)


async def test_bad_file_ids_are_refused_before_the_stream_and_nothing_is_written(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys="key-a:alice,key-b:bob")
    async with running_service(settings) as client:
        alices = await upload(client, "mine.txt", b"Alice's notes.", headers=ALICE)
        answers = {
            "missing": await client.get("/agent/file/stream", params={"query": "hi"}, headers=BOB),
            "unknown": await client.get(
                "/agent/file/stream", params={"query": "hi", "fileId": "nope"}, headers=BOB
            ),
            "foreign": await client.get(
                "/agent/file/stream", params={"query": "hi", "fileId": alices}, headers=BOB
            ),
            "foreign-post": await client.post(
                "/agent/file/stream", json={"query": "hi", "fileId": alices}, headers=BOB
            ),
            "chat-unknown": await client.get(
                "/agent/chat/stream", params={"query": "hi", "fileId": "nope"}, headers=BOB
            ),
        }
        bobs_history = (await client.get("/session/list", headers=BOB)).json()["data"]

    statuses = {name: response.status_code for name, response in answers.items()}
    assert statuses == {
        "missing": 400,
        "unknown": 404,
        "foreign": 404,
        "foreign-post": 404,
        "chat-unknown": 404,
    }
    assert answers["missing"].json()["message"] == "fileId is required for the file agent"
    assert answers["foreign"].json() == {"code": 404, "message": "File not found", "data": None}
    assert bobs_history["total"] == 0
    assert fake_llm.requests == []


async def test_deleting_a_conversation_deletes_the_files_only_it_used(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        only_c1 = await upload(client, "a.txt", b"Apples are red.")
        shared = await upload(client, "b.txt", b"Bananas are yellow.")
        unused = await upload(client, "c.txt", b"Cherries are dark.")
        await ask(client, "Colour?", "c1", only_c1)
        await ask(client, "Colour?", "c1", shared)
        await ask(client, "Colour?", "c2", shared)

        deleted = await client.delete("/session/c1")
        after_c1 = {f["fileId"] for f in (await client.get("/file/list")).json()["data"]}
        blobs_after_c1 = {p.name for p in (settings.data_dir / "files").rglob("*") if p.is_file()}
        await client.delete("/session/c2")
        after_c2 = {f["fileId"] for f in (await client.get("/file/list")).json()["data"]}

    assert deleted.json()["data"] == {"conversationId": "c1", "deleted": 2}
    assert after_c1 == blobs_after_c1 == {shared, unused}
    assert after_c2 == {unused}
