"""Projects (API.md §4 "Projects"): conversations that share instructions, files, defaults
and memory, read from what the fake model was sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, running_service, settings_for
from tests.integration.test_user_memory import system_prompt, tools_offered, turn
from tests.support.sse import Event, collect

SEARCH = "search_project_files"
GUIDE = "\n\n".join(
    [
        "The boiler is serviced every spring by the caretaker.",
        "Rent is due on the first working day of each month.",
        "Bicycles are kept in the courtyard shed, never in the hall.",
    ]
)
PIRATE = "Always answer like a pirate."


async def upload(client: httpx.AsyncClient, name: str, text: str) -> str:
    response = await client.post("/file/upload", files={"file": (name, text.encode())})
    assert response.status_code == 200, response.text
    file_id: str = response.json()["data"]["fileId"]
    return file_id


async def project(client: httpx.AsyncClient, **fields: Any) -> str:
    response = await client.post("/projects", json={"name": "Flat", **fields})
    assert response.status_code == 200, response.text
    project_id: str = response.json()["data"]["projectId"]
    return project_id


async def listed(client: httpx.AsyncClient, **params: str) -> list[tuple[str, str | None]]:
    response = await client.get("/session/list", params={"pageSize": "100", **params})
    assert response.status_code == 200, response.text
    return [(r["conversationId"], r["projectId"]) for r in response.json()["data"]["records"]]


async def stream(
    client: httpx.AsyncClient, kind: str, body: dict[str, Any]
) -> tuple[int, list[Event]]:
    async with client.stream("POST", f"/agent/{kind}/stream", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            return response.status_code, []
        return 200, await collect(response)


async def test_a_projects_instructions_and_a_passage_of_its_file_reach_its_turns_only(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(
        Reply.tool_calls([(SEARCH, {"query": "bicycles"})]),
        Reply.text("Arr, in the shed (house-rules.md, line 5)."),
        Reply.text("Arr, still in the shed."),
        Reply.text("Bicycles go wherever you like."),
    )
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        file_id = await upload(client, "house-rules.md", GUIDE)
        project_id = await project(client, instructions=PIRATE)
        attached = await client.post(f"/projects/{project_id}/files", json={"fileId": file_id})
        first = await turn(client, "Where do bicycles go?", "c-flat", projectId=project_id)
        in_project = (system_prompt(fake_llm, 0), tools_offered(fake_llm, 0))
        passages = fake_llm.requests[1]["messages"][-1]["content"]
        await turn(client, "And scooters?", "c-flat")
        later = system_prompt(fake_llm, 2)
        await turn(client, "Where do bicycles go?", "c-elsewhere")
        outside = (system_prompt(fake_llm), tools_offered(fake_llm))
        everything = await listed(client)
        only = await listed(client, projectId=project_id)
        detail = (await client.get(f"/projects/{project_id}")).json()["data"]

    assert attached.json()["data"] == {"fileId": file_id, "fileName": "house-rules.md"}
    assert PIRATE in in_project[0]
    assert SEARCH in in_project[1]
    assert "courtyard shed" in passages
    [end] = [e for e in first if e["type"] == "tool_end"]
    assert end["toolName"] == SEARCH
    [reference] = orjson.loads(next(e for e in first if e["type"] == "reference")["content"])
    assert reference["url"].startswith(f"/file/download/{file_id}#line=")
    assert reference["title"].startswith("house-rules.md, line")
    assert PIRATE in later
    assert PIRATE not in outside[0]
    assert SEARCH not in outside[1]
    assert sorted(everything) == [("c-elsewhere", None), ("c-flat", project_id)]
    assert only == [("c-flat", project_id)]
    assert detail["files"] == [{"fileId": file_id, "fileName": "house-rules.md"}]
    assert detail["conversations"] == 1
    assert detail["instructions"] == PIRATE


async def test_the_file_agent_searches_every_project_file_when_no_file_is_named(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("In the shed, and rent on the first working day."))
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        rules = await upload(client, "house-rules.md", GUIDE)
        keys = await upload(client, "keys.txt", "Spare bicycle keys hang behind the door.")
        project_id = await project(client)
        empty_project = await project(client)
        for file_id in (rules, keys):
            await client.post(f"/projects/{project_id}/files", json={"fileId": file_id})
        body = {"query": "bicycles and bicycle keys", "conversationId": "c-file"}
        status, events = await stream(client, "file", body | {"projectId": project_id})
        without = await stream(client, "file", body | {"conversationId": "c-none"})
        no_files = await stream(
            client, "file", body | {"conversationId": "c-empty", "projectId": empty_project}
        )

    assert status == 200
    [start, end] = [e for e in events if e["type"] in ("tool_start", "tool_end")]
    assert (start["toolName"], end["toolName"]) == (SEARCH, SEARCH)
    assert "courtyard shed" in end["result"]
    assert "behind the door" in end["result"]
    assert (without[0], no_files[0]) == (400, 400)


async def test_a_project_memory_stays_out_of_other_projects(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        flat = await project(client)
        office = await project(client, name="Office")
        await client.post("/memory", json={"content": "My name is Ada"})
        await client.post(
            "/memory", json={"content": "The landlord is Mr Brown", "projectId": flat}
        )
        fake_llm.script(
            Reply.tool_calls(
                [("remember", {"action": "save", "content": "The flat is on floor 3"})]
            ),
            Reply.text("Noted."),
            Reply.text("Hello from the office."),
        )
        await turn(client, "The flat is on floor 3", "c-flat", projectId=flat)
        in_flat = system_prompt(fake_llm, 0)
        await turn(client, "Who am I?", "c-office", projectId=office)
        in_office = system_prompt(fake_llm)
        flat_items = [
            i["content"] for i in (await client.get(f"/memory?projectId={flat}")).json()["data"]
        ]

    assert "Ada" in in_flat
    assert "Mr Brown" in in_flat
    assert "Ada" in in_office
    assert "Mr Brown" not in in_office
    assert "floor 3" not in in_office
    assert flat_items == ["The flat is on floor 3", "The landlord is Mr Brown"]


async def test_a_conversation_stays_in_its_project_and_moves_only_when_asked(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        flat = await project(client, instructions=PIRATE)
        office = await project(client, name="Office")
        await turn(client, "Hello", "c-one", projectId=flat)
        other = await stream(
            client, "chat", {"query": "Hi", "conversationId": "c-one", "projectId": office}
        )
        await turn(client, "Hello", "c-two")
        outside = await stream(
            client, "chat", {"query": "Hi", "conversationId": "c-two", "projectId": flat}
        )
        unknown = await stream(client, "chat", {"query": "Hi", "projectId": "no-such-project"})
        moved = await client.patch("/session/c-two", json={"projectId": office})
        in_office = await listed(client, projectId=office)
        out = await client.patch("/session/c-one", json={"projectId": None})
        await turn(client, "Still a pirate?", "c-one")
        after_out = system_prompt(fake_llm)
        nowhere = await client.patch("/session/c-one", json={"projectId": "no-such-project"})
        detail = (await client.get("/session/c-two")).json()["data"]

    assert (other[0], outside[0], unknown[0]) == (409, 409, 404)
    assert moved.json()["data"]["projectId"] == office
    assert in_office == [("c-two", office)]
    assert out.json()["data"]["projectId"] is None
    assert PIRATE not in after_out
    assert nowhere.status_code == 404
    assert detail["projectId"] == office


async def test_a_projects_default_model_answers_when_a_turn_names_none(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with FakeOpenAI() as fast:
        fast.script(Reply.text("Fast here."))
        fake_llm.script(Reply.text("Default here."))
        models = [
            {"id": "fast", "provider": "openai", "baseUrl": fast.base_url, "apiKey": "sk-fast-key"}
        ]
        settings = settings_for(backend, tmp_path, fake_llm, models=orjson.dumps(models).decode())
        async with running_service(settings) as client:
            unknown = await client.post("/projects", json={"name": "X", "defaultModel": "nope"})
            bad_kind = await client.post("/projects", json={"name": "X", "defaultKind": "nope"})
            project_id = await project(client, defaultModel="fast", defaultKind="deep")
            in_project = await turn(client, "Hi", "c-fast", projectId=project_id)
            named = await turn(client, "Hi", "c-named", projectId=project_id, model="default")

    assert (unknown.status_code, bad_kind.status_code) == (400, 400)
    assert in_project[-1]["usage"]["model"] == "fast"
    assert named[-1]["usage"]["model"] == "default"


async def test_deleting_a_project_deletes_its_conversations_and_memory_not_its_files(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        file_id = await upload(client, "house-rules.md", GUIDE)
        project_id = await project(client)
        await client.post(f"/projects/{project_id}/files", json={"fileId": file_id})
        await client.post("/memory", json={"content": "Mr Brown", "projectId": project_id})
        await client.post("/memory", json={"content": "My name is Ada"})
        await turn(client, "Hello", "c-in", projectId=project_id, fileId=file_id)
        await turn(client, "Hello", "c-out")
        deleted = await client.delete(f"/projects/{project_id}")
        gone = await client.get(f"/projects/{project_id}")
        conversations = await listed(client)
        items = [i["content"] for i in (await client.get("/memory")).json()["data"]]
        file = await client.get(f"/file/info/{file_id}")
        detached = await client.delete(f"/projects/{project_id}/files/{file_id}")

    assert deleted.json()["data"] == {"projectId": project_id, "deletedConversations": 1}
    assert gone.status_code == 404
    assert conversations == [("c-out", None)]
    assert items == ["My name is Ada"]
    assert file.status_code == 200
    assert detached.status_code == 404
