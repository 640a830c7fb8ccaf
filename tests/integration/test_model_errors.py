"""A failing model or tool call can be diagnosed: the log and the error event say what was
called (provider, model, URL) and what came back (status, the upstream's own message),
and never carry the key. `/ready?deep=1` finds the same failures before a user does."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import orjson
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import TEST_LLM_KEY, ask, running_service, service_settings


def sqlite(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/app.db"


def logged(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_a_base_url_without_v1_is_named_with_the_fix(
    tmp_path: Path, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    base = fake_llm.base_url.removesuffix("/v1")
    settings = service_settings(tmp_path, sqlite(tmp_path), llm_base_url=base)
    with caplog.at_level(logging.WARNING, logger="app"):
        async with running_service(settings) as client:
            evts = await ask(client, "Hello", "c-404")
            ready = await client.get("/ready", params={"deep": "1"})

    error = evts[-2]
    assert (error["type"], error["code"]) == ("error", "LLM_BAD_REQUEST")
    assert f"calling {base}/chat/completions" in error["detail"]
    assert "HTTP 404: no route POST /chat/completions" in error["detail"]
    assert f"try LLM_BASE_URL={base}/v1" in error["detail"]
    assert evts[-1]["status"] == "failed"
    # Logged once per failed call: the turn's, then the deep readiness check's.
    failures = logged(caplog, "app.llm.base")
    assert len(failures) == 2
    for line in failures:
        assert "provider=openai model=fake-model status=404" in line
        assert f"{base}/chat/completions" in line
        assert "no route POST /chat/completions" in line
    assert (ready.status_code, ready.json()["checks"]["model"]) == (503, "unavailable")
    assert ready.json()["errors"] == {"model": "LLM_BAD_REQUEST"}
    everything = "\n".join(r.getMessage() for r in caplog.records) + orjson.dumps(evts).decode()
    assert TEST_LLM_KEY not in everything


async def test_a_wrong_port_is_named_in_each_retry_and_the_final_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    settings = service_settings(tmp_path, sqlite(tmp_path), llm_base_url=url)
    with caplog.at_level(logging.WARNING, logger="app"):
        async with running_service(settings) as client:
            evts = await ask(client, "Hello", "c-port")

    assert [(e["type"], e.get("code")) for e in evts if e["type"] in ("error", "complete")] == [
        ("error", "RETRYING"),
        ("error", "RETRYING"),
        ("error", "LLM_UNAVAILABLE"),
        ("complete", None),
    ]
    assert (
        f"ModelConnectionError calling {url}/chat/completions: ConnectError" in evts[-2]["detail"]
    )
    # One line per failed call, the retries saying so.
    failures = logged(caplog, "app.llm.base")
    assert len(failures) == 3
    assert all(f"{url}/chat/completions" in line for line in failures)
    assert ["retrying in" in line for line in failures] == [True, True, False]
    assert "giving up" in failures[-1]


async def test_deep_readiness_calls_the_model_once_and_says_when_none_is_set(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("p"))
    configured = service_settings(tmp_path, sqlite(tmp_path), llm_base_url=fake_llm.base_url)
    async with running_service(configured) as client:
        shallow = await client.get("/ready")
        deep = await client.get("/ready", params={"deep": "1"})
    unset = service_settings(tmp_path, sqlite(tmp_path), llm_api_key="")
    async with running_service(unset) as client:
        without = await client.get("/ready", params={"deep": "1"})

    assert shallow.json()["checks"] == {"database": "ok", "tasks": "ok"}
    assert deep.status_code == 200
    assert deep.json()["checks"] == {"database": "ok", "tasks": "ok", "model": "ok"}
    assert [r["max_tokens"] for r in fake_llm.requests] == [1]
    assert without.status_code == 503
    assert without.json()["checks"]["model"] == "not_configured"


async def test_a_failed_search_is_logged_with_its_url_status_and_message(
    tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily, caplog: pytest.LogCaptureFixture
) -> None:
    fake_search.fail_status = 401
    fake_llm.script(Reply.tool_calls([("web_search", {"query": "tea"})]), Reply.text("No luck."))
    settings = service_settings(
        tmp_path,
        sqlite(tmp_path),
        llm_base_url=fake_llm.base_url,
        tavily_api_key="tvly-secret-key",
        tavily_base_url=fake_search.base_url,
    )
    with caplog.at_level(logging.WARNING, logger="app"):
        async with running_service(settings) as client:
            evts = await ask(client, "Tea?", "c-search")

    tool_end = next(e for e in evts if e["type"] == "tool_end")
    assert tool_end["isError"] is True
    (line,) = logged(caplog, "app.tools.web_search")
    assert f"url={fake_search.base_url}/search status=401" in line
    assert "Unauthorized: invalid API key (Bearer [redacted])." in line
    assert "tvly-secret-key" not in "\n".join(r.getMessage() for r in caplog.records)
