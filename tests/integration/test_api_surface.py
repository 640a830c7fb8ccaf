"""The HTTP surface the original client and API users rely on, beyond the agent's work."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from app.agents.registry import AGENTS
from app.config import Settings
from tests.integration.service import running_service, service_settings


def sqlite_settings(tmp_path: Path) -> Settings:
    return service_settings(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/app.db")


async def test_openapi_documents_every_endpoint(tmp_path: Path) -> None:
    async with running_service(sqlite_settings(tmp_path)) as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
        docs = await client.get("/docs")

    assert docs.status_code == 200
    expected = {
        "/agent/chat/stream": {"get", "post"},
        "/agent/file/stream": {"get", "post"},
        "/agent/pptx/stream": {"get", "post"},
        "/agent/deep/stream": {"get", "post"},
        "/agent/skills/stream": {"get", "post"},
        "/agent/host/stream": {"get", "post"},
        "/agent/stop": {"get", "post"},
        "/agent/resume": {"get"},
        "/agent/kinds": {"get"},
        "/agent/models": {"get"},
        "/agent/limits": {"get"},
        "/usage": {"get"},
        "/agent/runs": {"get"},
        "/session/list": {"get"},
        "/session/search": {"get"},
        "/session/{conversation_id}": {"get", "delete", "patch"},
        "/session/{conversation_id}/export": {"get"},
        "/session/{conversation_id}/active": {"post"},
        "/session/{conversation_id}/turns/{turn_id}": {"delete"},
        "/session/{conversation_id}/turns/{turn_id}/rating": {"put"},
        "/session/{conversation_id}/share": {"get", "post", "delete"},
        "/shared/{token}": {"get"},
        "/memory": {"get", "post", "delete"},
        "/memory/settings": {"get", "patch"},
        "/memory/{item_id}": {"patch", "delete"},
        "/projects": {"get", "post"},
        "/projects/{project_id}": {"get", "patch", "delete"},
        "/projects/{project_id}/files": {"post"},
        "/projects/{project_id}/files/{file_id}": {"delete"},
        "/health": {"get"},
        "/ready": {"get"},
        "/metrics": {"get"},
        "/file/upload": {"post"},
        "/file/info/{file_id}": {"get"},
        "/file/content/{file_id}": {"get"},
        "/file/exists/{file_id}": {"get"},
        "/file/list": {"get"},
        "/file/download/{file_id}": {"get"},
        "/file/preview/{file_id}": {"get"},
        "/file/{file_id}": {"delete"},
        "/ag-ui/{kind}": {"post"},
        "/ai-sdk/{kind}": {"post"},
        "/ai-sdk/{kind}/{chat_id}/stream": {"get"},
        "/.well-known/agent-card.json": {"get"},
        "/.well-known/agent.json": {"get"},
        "/a2a": {"post"},
        "/a2a/rest/message:send": {"post"},
        "/a2a/rest/message:stream": {"post"},
        "/a2a/rest/tasks": {"get"},
        "/a2a/rest/tasks/{id}": {"get"},
        "/a2a/rest/tasks/{id}:cancel": {"post"},
        "/a2a/rest/tasks/{id}:subscribe": {"get", "post"},
        "/a2a/rest/tasks/{id}/pushNotificationConfigs": {"get", "post"},
        "/a2a/rest/tasks/{id}/pushNotificationConfigs/{push_id}": {"get", "delete"},
        "/a2a/rest/extendedAgentCard": {"get"},
        "/auth/config": {"get"},
        "/auth/me": {"get"},
        "/auth/keys": {"get", "post"},
        "/auth/keys/{key_id}": {"delete"},
        "/account/preferences": {"get", "patch"},
        "/admin/runs": {"get"},
        "/admin/runs/stop": {"post"},
        "/admin/usage": {"get"},
        "/admin/ratings": {"get"},
        "/admin/users/{user_id}/limits": {"get", "put"},
        "/schedules": {"get", "post"},
        "/schedules/{schedule_id}": {"get", "patch", "delete"},
        "/schedules/{schedule_id}/run": {"post"},
        "/schedules/{schedule_id}/runs": {"get"},
        "/admin/schedules": {"get"},
        "/admin/schedules/{schedule_id}": {"patch"},
    }
    assert {path: set(ops) for path, ops in paths.items()} == expected
    assert "text/event-stream" in paths["/agent/chat/stream"]["get"]["responses"]["200"]["content"]
    for method in ("get", "post"):
        stream = paths["/agent/chat/stream"][method]
        assert {p["name"] for p in stream["parameters"] if p["in"] == "query"} >= {
            "query",
            "conversationId",
            "onDisconnect",
            "multitaskStrategy",
            "approval",
        }
        assert "x-dodo-query-model" not in stream


async def test_cors_preflight_allows_the_original_client(tmp_path: Path) -> None:
    async with running_service(sqlite_settings(tmp_path)) as client:
        stream = await client.options(
            "/agent/chat/stream",
            headers={
                "Origin": "http://localhost:5173",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "cache-control",
            },
        )
        delete = await client.options(
            "/session/c1",
            headers={"Origin": "http://x.test", "Access-Control-Request-Method": "DELETE"},
        )
        listing = await client.get("/session/list", headers={"Origin": "http://x.test"})

    assert stream.status_code == 200
    assert "cache-control" in stream.headers["access-control-allow-headers"].lower()
    assert delete.status_code == 200
    assert "DELETE" in delete.headers["access-control-allow-methods"]
    assert listing.headers["access-control-allow-origin"] == "*"


async def test_agent_kinds_list_what_runs_and_the_rest_answer_501(tmp_path: Path) -> None:
    # A build without the PowerPoint agent: its kind is listed, unavailable, and answers 501.
    without_pptx = [
        dataclasses.replace(entry, factory=None) if entry.kind == "pptx" else entry
        for entry in AGENTS
    ]
    async with running_service(sqlite_settings(tmp_path), without_pptx) as client:
        kinds = (await client.get("/agent/kinds")).json()["data"]
        unavailable = {
            k["kind"]: await client.get(f"/agent/{k['kind']}/stream", params={"query": "hi"})
            for k in kinds
            if not k["available"]
        }
        listing = await client.get("/session/list")

    assert [
        {k: v for k, v in kind.items() if k not in ("description", "examples")} for kind in kinds
    ] == [
        {"kind": "chat", "name": "Web search", "available": True,
         "needsFile": False, "acceptsFile": True},
        {"kind": "file", "name": "Ask a file", "available": True,
         "needsFile": True, "acceptsFile": True},
        {"kind": "pptx", "name": "PowerPoint", "available": False,
         "needsFile": False, "acceptsFile": False},
        {"kind": "deep", "name": "Deep research", "available": True,
         "needsFile": False, "acceptsFile": False},
        {"kind": "skills", "name": "Skills", "available": True,
         "needsFile": False, "acceptsFile": True},
        # No remote agents configured: the host agent has nothing to delegate to.
        {"kind": "host", "name": "Remote agents", "available": False,
         "needsFile": False, "acceptsFile": False},
    ]  # fmt: skip
    assert {kind: r.status_code for kind, r in unavailable.items()} == {"pptx": 501, "host": 501}
    # Each kind says what it does and offers a new user two or three things to ask.
    assert all(kind["description"] and 2 <= len(kind["examples"]) <= 3 for kind in kinds)
    assert all(r.json()["code"] == 501 for r in unavailable.values())
    assert listing.json()["data"]["total"] == 0


async def test_unknown_things_answer_404_in_the_envelope(tmp_path: Path) -> None:
    async with running_service(sqlite_settings(tmp_path)) as client:
        resume = await client.get("/agent/resume", params={"conversationId": "nope"})
        session = await client.get("/session/nope")
        deleted = await client.delete("/session/nope")
        stop = await client.get("/agent/stop", params={"conversationId": "nope"})

    assert (resume.status_code, resume.json()["code"]) == (404, 404)
    assert (session.status_code, session.json()["code"]) == (404, 404)
    assert deleted.status_code == 404
    assert stop.json() == {"success": False, "message": "No task is running for this conversation"}
