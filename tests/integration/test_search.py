"""Searching your turns (API.md §4) through the HTTP app, on SQLite and on PostgreSQL.

The answers come from the fake model, so what is found was stored as a real
turn stores it (the question's INSERT, then the answer's UPDATE): both reach
the index. Each backend's index has its own short-query path (under three
characters no trigram exists), tested here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, ask_with, running_service, settings_for

LONG_ANSWER = "Filler sentence. " * 30 + "The NEEDLE is here." + " More filler." * 30
CHINESE_ANSWER = "我们在这个项目中使用向量数据库来存储嵌入，并且检索速度很快。"


async def search(client: httpx.AsyncClient, q: str, **params: Any) -> dict[str, Any]:
    response = await client.get("/session/search", params={"q": q, **params})
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()["data"]
    return page


def found(page: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["conversationId"], r["snippet"]) for r in page["records"]]


async def test_search_finds_questions_and_answers_in_any_case_and_script(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.text("Servers push events over one HTTP response."),
        Reply.text(LONG_ANSWER),
        Reply.text(CHINESE_ANSWER),
        Reply.text("Une ÉCOLE de pensée; discount 100% off."),
        Reply.text("Nothing to see: 1000 items."),
    )
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        await ask(client, "What is SSE?", "sse")
        await ask(client, "Where is the needle?", "hay")
        await ask(client, "用什么存储嵌入？", "zh")
        await ask(client, "Parlez-moi de l'enseignement", "fr")
        await ask(client, "How many items?", "items")
        await client.patch("/session/hay", json={"title": "Haystack"})
        by_question = await search(client, "what is sse")
        by_question_twice = await search(client, "needle")
        by_answer = await search(client, "needle is here")
        newest_first = await search(client, "wh")
        chinese = await search(client, "向量数据库")
        short_chinese = await search(client, "数据")
        accented = await search(client, "école")
        short_accented = await search(client, "éc")
        literal_percent = await search(client, "100%")
        literal_underscore = await search(client, "1_0")
        nothing = await search(client, "absent words")

    assert found(by_question) == [("sse", "What is SSE?")]
    assert by_question["records"][0]["title"] == "What is SSE?"
    # A turn whose question and answer both match is one record, its question the snippet.
    [hit] = by_question_twice["records"]
    assert (hit["snippet"], hit["title"], by_question_twice["total"]) == (
        "Where is the needle?",
        "Haystack",
        1,
    )
    [in_answer] = by_answer["records"]
    assert in_answer["turnId"] == hit["turnId"]
    assert len(in_answer["snippet"]) == 200
    assert "The NEEDLE is here." in in_answer["snippet"]
    assert in_answer["snippet"] in LONG_ANSWER
    assert [r["conversationId"] for r in newest_first["records"]] == ["hay", "sse"]
    assert found(chinese) == [("zh", CHINESE_ANSWER)]
    assert found(short_chinese) == [("zh", CHINESE_ANSWER)]
    # Only the answer's "ÉCOLE" holds them: case folded beyond ASCII, long or short.
    french = ("fr", "Une ÉCOLE de pensée; discount 100% off.")
    assert found(accented) == [french]
    assert found(short_accented) == [french]
    assert found(literal_percent) == [french]
    assert literal_underscore["records"] == []
    assert nothing == {"records": [], "total": 0, "pageNum": 1, "pageSize": 10}


async def test_search_pages_and_never_shows_another_users_turns(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, api_keys="key-alice:alice,key-bob:bob")
    alice = {"Authorization": "Bearer key-alice"}
    bob = {"Authorization": "Bearer key-bob"}
    async with running_service(settings) as client:
        for n in range(3):
            await ask(client, f"Alice's secret plan {n}", f"a{n}", headers=alice)
        await ask(client, "Bob's secret plan", "b0", headers=bob)
        pages = [
            (await client.get("/session/search", params=p, headers=alice)).json()["data"]
            for p in (
                {"q": "secret plan", "pageSize": "2"},
                {"q": "secret plan", "pageSize": "2", "pageNum": "2"},
                {"q": "secret plan", "pageSize": "2", "pageNum": "3"},
            )
        ]
        bobs = (await client.get("/session/search", params={"q": "plan"}, headers=bob)).json()
        alices_words = [
            (await client.get("/session/search", params={"q": q}, headers=bob)).json()["data"]
            for q in ("Alice", "al")
        ]
        await client.delete("/session/b0", headers=bob)
        # The newest row deleted, the next turn may take its id (SQLite's rowid): the
        # deleted text must have left the index with it.
        await ask(client, "Something else", "a3", headers=alice)
        after_delete = await client.get(
            "/session/search", params={"q": "secret plan"}, headers=alice
        )
        bobs_after = await client.get("/session/search", params={"q": "plan"}, headers=bob)

    assert [[r["conversationId"] for r in page["records"]] for page in pages] == [
        ["a2", "a1"],
        ["a0"],
        [],
    ]
    assert [page["total"] for page in pages] == [3, 3, 3]
    assert [r["conversationId"] for r in bobs["data"]["records"]] == ["b0"]
    # In Alice's questions only: Bob finds nothing, by the index or by the short path.
    assert [page["total"] for page in alices_words] == [0, 0]
    assert bobs_after.json()["data"]["total"] == 0
    assert [r["conversationId"] for r in after_delete.json()["data"]["records"]] == [
        "a2",
        "a1",
        "a0",
    ]


async def test_a_search_is_one_to_two_hundred_characters(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        refused = [
            await client.get("/session/search", params=params)
            for params in ({"q": ""}, {"q": "x" * 201}, {}, {"q": "x", "pageSize": "101"})
        ]
        longest = await client.get("/session/search", params={"q": "x" * 200})

    assert [r.status_code for r in refused] == [422, 422, 422, 422]
    assert all(r.json()["code"] == 422 for r in refused)
    assert longest.status_code == 200


async def test_a_turn_with_versions_is_one_hit_on_its_active_version(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.text("Otters swim."),
        Reply.text("Otters play."),
        Reply.text("Otters sleep."),
        Reply.text("Pups float."),
    )
    async with running_service(settings_for(backend, tmp_path, fake_llm)) as client:
        [start, *_] = await ask(client, "Tell me about otters", "c")
        first = start["sessionId"]
        [regenerated, *_] = await ask_with(client, "c", regenerate=first)
        second = regenerated["sessionId"]
        await ask_with(client, "c", regenerate=first)
        switched = await client.post("/session/c/active", json={"turnId": first})
        assert switched.status_code == 200
        one_turn = await search(client, "otters")
        in_one_version = await search(client, "play")
        await ask(client, "And otter pups?", "c")
        two_turns = await search(client, "otter")
        past_the_end = await search(client, "otter", pageSize="1", pageNum="3")

    # Three versions of one question: one hit, on the version shown (not the newest).
    assert [(r["turnId"], r["snippet"]) for r in one_turn["records"]] == [
        (first, "Tell me about otters")
    ]
    assert one_turn["total"] == 1
    # Only another version holds the words: that one is the hit.
    assert [r["turnId"] for r in in_one_version["records"]] == [second]
    assert in_one_version["total"] == 1
    assert [r["snippet"] for r in two_turns["records"]] == [
        "And otter pups?",
        "Tell me about otters",
    ]
    assert two_turns["total"] == 2
    assert (past_the_end["records"], past_the_end["total"]) == ([], 2)
