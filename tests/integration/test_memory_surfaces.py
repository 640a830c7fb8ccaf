"""`projectId` and `memory` on every surface (AG-UI `forwardedProps`, AI SDK body, A2A
metadata, MCP tool input), and ids of another user's memory and projects answering 404
everywhere, admins included."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, history, running_service, settings_for
from tests.integration.test_mcp_server import mcp_session
from tests.integration.test_projects import PIRATE, upload
from tests.integration.test_user_memory import system_prompt, tools_offered
from tests.support.a2a import a2a_client, message

KEYS = "key-alice:alice,key-bob:bob,key-root:root"
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
ROOT = {"Authorization": "Bearer key-root"}


def sent_in_project(fake: FakeOpenAI) -> tuple[bool, bool]:
    """Whether the last request had the project's instructions, and the user's memory."""
    prompt = system_prompt(fake)
    return PIRATE in prompt, "My name is Ada" in prompt


async def test_every_surface_takes_project_id_and_memory(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        await client.post("/memory", json={"content": "My name is Ada"})
        created = await client.post("/projects", json={"name": "Ship", "instructions": PIRATE})
        project_id = created.json()["data"]["projectId"]
        seen: dict[str, tuple[bool, bool]] = {}

        run = {
            "runId": "r-1",
            "threadId": "c-ag-ui",
            "messages": [{"id": "u-1", "role": "user", "content": "Hi"}],
            "forwardedProps": {"projectId": project_id, "memory": "off"},
        }
        async with client.stream("POST", "/ag-ui/chat", json=run) as r:
            assert r.status_code == 200
            await r.aread()
        seen["ag-ui"] = sent_in_project(fake_llm)

        chat = {
            "id": "c-ai-sdk",
            "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
            "projectId": project_id,
            "memory": "off",
        }
        async with client.stream("POST", "/ai-sdk/chat", json=chat) as r:
            assert r.status_code == 200
            await r.aread()
        seen["ai-sdk"] = sent_in_project(fake_llm)

        async with a2a_client(client) as a2a:
            sent = message("Hi", "c-a2a", projectId=project_id, memory="off")
            [_ async for _ in a2a.send_message(sent)]
        seen["a2a"] = sent_in_project(fake_llm)

        async with mcp_session(client) as session:
            arguments = {"query": "Hi", "projectId": project_id, "memory": "off"}
            await session.call_tool("chat", {**arguments, "conversationId": "c-mcp"})
        seen["mcp"] = sent_in_project(fake_llm)

        async with client.stream(
            "GET", "/agent/chat/stream", params={"query": "Hi", "conversationId": "c-plain"}
        ) as r:
            await r.aread()
        seen["plain"] = sent_in_project(fake_llm)
        listed = await client.get("/session/list", params={"projectId": project_id})

    assert seen == {
        "ag-ui": (True, False),
        "ai-sdk": (True, False),
        "a2a": (True, False),
        "mcp": (True, False),
        "plain": (False, True),
    }
    assert {r["conversationId"] for r in listed.json()["data"]["records"]} == {
        "c-ag-ui",
        "c-ai-sdk",
        "c-a2a",
        "c-mcp",
    }


async def test_an_a2a_message_without_a_skill_takes_its_projects_default_kind(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("In the courtyard shed."))
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as client:
        file_id = await upload(client, "rules.md", "Bicycles are kept in the courtyard shed.")
        body = {"name": "Flat", "defaultKind": "file"}
        project_id = (await client.post("/projects", json=body)).json()["data"]["projectId"]
        await client.post(f"/projects/{project_id}/files", json={"fileId": file_id})
        async with a2a_client(client) as a2a:
            sent = message("Where are bicycles kept?", "c-a2a-file", projectId=project_id)
            [_ async for _ in a2a.send_message(sent)]
        [stored] = await history(client, "c-a2a-file")
        detail = (await client.get("/session/c-a2a-file")).json()["data"]

    assert detail["agentType"] == "file"
    assert [t["name"] for t in stored["tools"]] == ["search_project_files"]
    assert "search_project_files" in tools_offered(fake_llm)


async def test_another_users_memory_and_project_ids_answer_404_everywhere(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, api_keys=KEYS, admin_users="root"
    )
    async with running_service(settings) as client:
        item = (
            await client.post("/memory", json={"content": "Alice's secret"}, headers=ALICE)
        ).json()["data"]["id"]
        project = (await client.post("/projects", json={"name": "Alice's"}, headers=ALICE)).json()[
            "data"
        ]["projectId"]
        alice_file = await upload_as(client, ALICE)
        await client.post(f"/projects/{project}/files", json={"fileId": alice_file}, headers=ALICE)
        answers: dict[str, list[int]] = {}
        for who, headers in (("bob", BOB), ("root", ROOT)):
            own_file = await upload_as(client, headers)
            own = (await client.post("/projects", json={"name": "Own"}, headers=headers)).json()
            own_project = own["data"]["projectId"]
            async with client.stream(
                "GET",
                "/agent/chat/stream",
                params={"query": "Hi", "conversationId": f"c-{who}"},
                headers=headers,
            ) as r:
                await r.aread()
            calls = [
                client.patch(f"/memory/{item}", json={"content": "mine now"}, headers=headers),
                client.delete(f"/memory/{item}", headers=headers),
                client.post(
                    "/memory", json={"content": "x", "projectId": project}, headers=headers
                ),
                client.get(f"/projects/{project}", headers=headers),
                client.patch(f"/projects/{project}", json={"name": "Mine"}, headers=headers),
                client.post(
                    f"/projects/{project}/files", json={"fileId": own_file}, headers=headers
                ),
                client.delete(f"/projects/{project}/files/{alice_file}", headers=headers),
                client.post(
                    f"/projects/{own_project}/files", json={"fileId": alice_file}, headers=headers
                ),
                client.patch(f"/session/c-{who}", json={"projectId": project}, headers=headers),
                client.post(
                    "/agent/chat/stream",
                    json={"query": "Hi", "projectId": project},
                    headers=headers,
                ),
                client.delete(f"/projects/{project}", headers=headers),
            ]
            answers[who] = [(await call).status_code for call in calls]
            mine = await client.get("/memory", headers=headers)
            assert mine.json()["data"] == []
            listed = await client.get(
                "/session/list", params={"projectId": project}, headers=headers
            )
            assert listed.json()["data"]["records"] == []
        still = await client.get(f"/projects/{project}", headers=ALICE)
        items = await client.get("/memory", headers=ALICE)

    assert answers == {"bob": [404] * 11, "root": [404] * 11}
    assert still.json()["data"]["files"] == [{"fileId": alice_file, "fileName": "notes.txt"}]
    assert [i["content"] for i in items.json()["data"]] == ["Alice's secret"]


async def upload_as(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    response = await client.post(
        "/file/upload", files={"file": ("notes.txt", b"Some notes.")}, headers=headers
    )
    assert response.status_code == 200, response.text
    file_id: str = response.json()["data"]["fileId"]
    return file_id
