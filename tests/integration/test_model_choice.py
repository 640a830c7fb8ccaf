"""Picking the model: two upstreams, and every wire format shows which one answered.

The `LLM_*` model (`default`) is an OpenAI-compatible fake; `MODELS` adds an
Anthropic fake as `strong` (its key inline) and a second OpenAI-compatible
fake as `fast` (its key in an environment variable). Each fake answers in its
own words, so a turn's text says which model it reached, and each fake's
request log says which one was asked; prices make every answer's cost known.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr

from app.config import Settings
from app.factory import create_app
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.model_behaviours import Behaving, NativeOnly
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Body, Reply, ScriptedServer
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    TEST_LLM_KEY,
    Backend,
    ask,
    history,
    running_service,
    service_settings,
)
from tests.support.research import REPORT, over_http, step_named
from tests.support.server import serve
from tests.support.sse import Event, collect, text_of

STRONG_KEY = "sk-ant-strong-secret-7777"
FAST_KEY = "sk-fast-secret-from-env-8888"
FAST_KEY_ENV = "MODELS_TEST_FAST_KEY"
SECRETS = (TEST_LLM_KEY, STRONG_KEY, FAST_KEY)


def answering(words: str) -> Any:
    def respond(body: Body) -> Reply:
        return Reply.text(words, usage=(1000, 100))

    return respond


@pytest.fixture
async def default_llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(answering("Default here.")) as fake:
        yield fake


@pytest.fixture
async def strong_llm() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(answering("Strong here.")) as fake:
        yield fake


@pytest.fixture
async def fast_llm() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(answering("Fast here.")) as fake:
        yield fake


@pytest.fixture(autouse=True)
def fast_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAST_KEY_ENV, FAST_KEY)


def catalog(strong: ScriptedServer, fast: ScriptedServer, **default: Any) -> str:
    models: list[dict[str, Any]] = [
        {
            "id": "strong",
            "label": "Claude (strong)",
            "provider": "anthropic",
            "baseUrl": strong.base_url,
            "apiKey": STRONG_KEY,
            "model": "claude-test",
            "contextWindow": 200000,
            "vision": True,
            "inputPricePerMTok": 3.0,
            "outputPricePerMTok": 15.0,
        },
        {
            "id": "fast",
            "provider": "openai",
            "baseUrl": fast.base_url,
            "apiKeyEnv": FAST_KEY_ENV,
            "model": "fast-model",
            "inputPricePerMTok": 0.1,
            "outputPricePerMTok": 0.4,
        },
    ]
    if default:
        models.append({"id": "default", "provider": "openai", **default})
    return orjson.dumps(models).decode()


def settings_with(
    tmp_path: Path,
    default: ScriptedServer,
    strong: ScriptedServer,
    fast: ScriptedServer,
    backend: Backend | None = None,
    **extra: Any,
) -> Settings:
    backend = backend or Backend(f"sqlite+aiosqlite:///{tmp_path}/app.db", "", "")
    return service_settings(
        tmp_path,
        backend.database_url,
        backend.redis_url,
        redis_prefix=backend.redis_prefix or "dodo:",
        llm_base_url=default.base_url,
        models=catalog(strong, fast),
        **extra,
    )


@asynccontextmanager
async def three_models(
    tmp_path: Path,
    default: ScriptedServer,
    strong: ScriptedServer,
    fast: ScriptedServer,
    backend: Backend | None = None,
    **extra: Any,
) -> AsyncIterator[httpx.AsyncClient]:
    settings = settings_with(tmp_path, default, strong, fast, backend, **extra)
    async with running_service(settings) as client:
        yield client


async def stream(client: httpx.AsyncClient, params: dict[str, str]) -> list[Event]:
    async with client.stream("GET", "/agent/chat/stream", params=params) as response:
        assert response.status_code == 200
        return await collect(response)


def asked_model(fake: ScriptedServer) -> list[str]:
    return [str(body.get("model")) for body in fake.requests]


async def test_the_catalog_lists_every_model_without_a_key_or_an_endpoint(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    async with three_models(
        tmp_path, default_llm, strong_llm, fast_llm, agent_models="deep:strong"
    ) as client:
        response = await client.get("/agent/models")

    assert response.status_code == 200
    assert response.json()["data"] == [
        {
            "id": "default",
            "label": "fake-model",
            "provider": "openai",
            "vision": False,
            "contextWindow": None,
            "default": True,
            "defaultFor": [],
        },
        {
            "id": "strong",
            "label": "Claude (strong)",
            "provider": "anthropic",
            "vision": True,
            "contextWindow": 200000,
            "default": False,
            "defaultFor": ["deep"],
        },
        {
            "id": "fast",
            "label": "fast",
            "provider": "openai",
            "vision": False,
            "contextWindow": None,
            "default": False,
            "defaultFor": [],
        },
    ]
    for leak in (*SECRETS, strong_llm.base_url, fast_llm.base_url, "127.0.0.1"):
        assert leak not in response.text


async def test_each_turn_is_answered_by_the_model_it_names_and_says_so_with_its_cost(
    backend: Backend,
    tmp_path: Path,
    default_llm: FakeOpenAI,
    strong_llm: FakeAnthropic,
    fast_llm: FakeOpenAI,
) -> None:
    async with three_models(tmp_path, default_llm, strong_llm, fast_llm, backend) as client:
        plain = await ask(client, "Who are you?", "c-pick")
        strong = await stream(
            client, {"query": "And now?", "conversationId": "c-pick", "model": "strong"}
        )
        async with client.stream(
            "POST",
            "/agent/chat/stream",
            json={"query": "Quickly?", "conversationId": "c-pick", "model": "fast"},
        ) as response:
            fast = await collect(response)
        stored = await history(client, "c-pick")

    assert [text_of(plain), text_of(strong), text_of(fast)] == [
        "Default here.",
        "Strong here.",
        "Fast here.",
    ]
    assert asked_model(default_llm) == ["fake-model"]
    assert asked_model(strong_llm) == ["claude-test"]
    assert asked_model(fast_llm) == ["fast-model"]
    # Each upstream got its own key, and only its own.
    assert strong_llm.headers[0]["x-api-key"] == STRONG_KEY
    assert fast_llm.headers[0]["authorization"] == f"Bearer {FAST_KEY}"
    usages = [evts[-1]["usage"] for evts in (plain, strong, fast)]
    assert [u["model"] for u in usages] == ["default", "strong", "fast"]
    # No price for `default`: no cost. 1000 in and 100 out at $3 and $15 per million.
    assert "costUsd" not in usages[0]
    assert usages[1]["costUsd"] == pytest.approx(0.0045)
    assert usages[2]["costUsd"] == pytest.approx(0.00014)
    assert all("byModel" not in u for u in usages)
    assert [m["model"] for m in stored] == ["default", "strong", "fast"]
    assert [m["costUsd"] for m in stored] == [None, pytest.approx(0.0045), pytest.approx(0.00014)]


async def test_an_agent_kind_takes_its_model_from_agent_models(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    async with three_models(
        tmp_path, default_llm, strong_llm, fast_llm, agent_models="chat:fast"
    ) as client:
        evts = await ask(client, "Hello", "c-kind")
        named = await stream(
            client, {"query": "Hi", "conversationId": "c-kind", "model": "default"}
        )

    assert (text_of(evts), evts[-1]["usage"]["model"]) == ("Fast here.", "fast")
    assert (text_of(named), named[-1]["usage"]["model"]) == ("Default here.", "default")


async def test_an_answer_asked_again_keeps_its_model_unless_the_request_names_another(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    async with three_models(tmp_path, default_llm, strong_llm, fast_llm) as client:
        first = await stream(
            client, {"query": "Hi", "conversationId": "c-again", "model": "strong"}
        )
        turn = str(first[0]["sessionId"])
        again = await stream(client, {"conversationId": "c-again", "regenerate": turn})
        other = await stream(
            client, {"conversationId": "c-again", "regenerate": turn, "model": "fast"}
        )

    assert [text_of(e) for e in (first, again, other)] == [
        "Strong here.",
        "Strong here.",
        "Fast here.",
    ]
    assert [e[-1]["usage"]["model"] for e in (again, other)] == ["strong", "fast"]


async def test_a_model_with_a_small_context_window_is_given_less_memory(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    small = orjson.loads(catalog(strong_llm, fast_llm))
    small[1]["contextWindow"] = 400  # `fast`: memory within 200 tokens, not MEMORY_MAX_TOKENS
    settings = settings_with(tmp_path, default_llm, strong_llm, fast_llm)
    settings = settings.model_copy(update={"models": SecretStr(orjson.dumps(small).decode())})
    words = "tell me about heat pumps and their warranty " * 15
    questions = [f"Question {n}: {words}".strip() for n in "123"]
    async with running_service(settings) as client:
        for question in questions:
            await ask(client, question, "c-window")
        await stream(client, {"query": "And?", "conversationId": "c-window", "model": "fast"})
        await ask(client, "And again?", "c-window")

    def remembered(request: Body) -> list[str]:
        return [str(m["content"]) for m in request["messages"] if m["role"] == "user"][:-1]

    assert remembered(fast_llm.requests[-1]) == questions[-1:]
    assert remembered(default_llm.requests[-1]) == [*questions, "And?"]


async def test_a_decided_approval_goes_on_with_the_model_that_asked_for_it(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    fast_llm.script(Reply.tool_calls([("write_file", {"path": "a.txt", "content": "hi"})]))
    settings = settings_with(tmp_path, default_llm, strong_llm, fast_llm)
    settings = settings.model_copy(update={"tool_approval": "write_file"})
    async with running_service(settings) as client:
        body = {"query": "Write it", "conversationId": "c-decide", "model": "fast"}
        async with client.stream("POST", "/agent/skills/stream", json=body) as response:
            asked = await collect(response)
        [approval] = [e for e in asked if e["type"] == "approval"]
        decided = {"approvalId": approval["approvalId"], "decision": "approve"}
        answer = {"conversationId": "c-decide", "approval": decided}
        async with client.stream("POST", "/agent/skills/stream", json=answer) as response:
            went_on = await collect(response)

    assert text_of(went_on).startswith("Fast here.")
    assert went_on[-1]["usage"]["model"] == "fast"
    assert default_llm.requests == []


async def test_an_unknown_model_is_refused_before_the_stream_on_every_format(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    ai_sdk = {
        "id": "c-unknown",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "model": "gpt-nope",
    }
    ag_ui = {
        "threadId": "c-unknown",
        "runId": "r-1",
        "messages": [{"id": "u-1", "role": "user", "content": "Hi"}],
        "forwardedProps": {"model": "gpt-nope"},
    }
    async with three_models(tmp_path, default_llm, strong_llm, fast_llm) as client:
        answers = [
            await client.get(
                "/agent/chat/stream",
                params={"query": "Hi", "conversationId": "c-unknown", "model": "gpt-nope"},
            ),
            await client.post(
                "/agent/deep/stream",
                json={"query": "Hi", "conversationId": "c-unknown", "model": "gpt-nope"},
            ),
            await client.post("/ai-sdk/chat", json=ai_sdk),
            await client.post("/ag-ui/chat", json=ag_ui),
        ]
        a2a = await client.post("/a2a", json=a2a_send("Hi", "c-unknown", "gpt-nope"))
        listed = await client.get("/session/list")

    for answer in answers:
        assert answer.status_code == 400, answer.text
        body = answer.json()
        assert body["code"] == 400
        assert body["data"] == {"error": "MODEL_UNKNOWN"}
        assert "gpt-nope" in body["message"]
        assert "strong" in body["message"]
    error = a2a.json()["error"]
    assert error["code"] == -32602
    assert error["data"] == {"error": "MODEL_UNKNOWN"}
    assert listed.json()["data"]["total"] == 0
    assert default_llm.requests == strong_llm.requests == fast_llm.requests == []


def a2a_send(text: str, context: str, model: str) -> dict[str, Any]:
    message = {
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        "messageId": f"m-{context}-{model}",
        "contextId": context,
        "metadata": {"model": model},
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}


async def test_ag_ui_ai_sdk_and_a2a_pick_the_model_too(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    ag_ui = {
        "threadId": "c-ag-ui",
        "runId": "r-1",
        "messages": [{"id": "u-1", "role": "user", "content": "Hi"}],
        "forwardedProps": {"model": "strong"},
    }
    ai_sdk = {
        "id": "c-ai-sdk",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "trigger": "submit-message",
        "model": "fast",
    }
    async with three_models(tmp_path, default_llm, strong_llm, fast_llm) as client:
        ag_ui_answer = await client.post("/ag-ui/chat", json=ag_ui)
        ai_sdk_answer = await client.post("/ai-sdk/chat", json=ai_sdk)
        a2a_answer = await client.post("/a2a", json=a2a_send("Hi", "c-a2a", "strong"))
        stored = {c: await history(client, c) for c in ("c-ag-ui", "c-ai-sdk", "c-a2a")}

    assert ag_ui_answer.status_code == 200
    assert "Strong here." in ag_ui_answer.text
    finished = [
        orjson.loads(line[6:])
        for line in ag_ui_answer.text.splitlines()
        if line.startswith("data: ") and '"RUN_FINISHED"' in line
    ]
    assert finished[-1]["result"]["usage"]["model"] == "strong"
    assert ai_sdk_answer.status_code == 200
    assert "Fast here." in ai_sdk_answer.text
    [finish] = [
        orjson.loads(line[6:])
        for line in ai_sdk_answer.text.splitlines()
        if line.startswith("data: {") and '"finish"' in line
    ]
    assert finish["messageMetadata"]["usage"]["model"] == "fast"
    result = a2a_answer.json()["result"]
    [answer] = [a for a in result["artifacts"] if a["artifactId"] == "answer"]
    assert answer["parts"] == [{"kind": "text", "text": "Strong here."}]
    assert {c: [m["model"] for m in turns] for c, turns in stored.items()} == {
        "c-ag-ui": ["strong"],
        "c-ai-sdk": ["fast"],
        "c-a2a": ["strong"],
    }
    assert len(strong_llm.requests) == 2
    assert len(fast_llm.requests) == 1
    assert default_llm.requests == []


async def test_an_anthropic_turn_after_an_openai_one_keeps_its_memory_tool_calls_included(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    default_llm.script(
        Reply.tool_calls([("web_search", {"query": "heat pumps"})], usage=(50, 5)),
        Reply.text("Heat pumps are growing [1].", usage=(90, 8)),
    )
    async with (
        FakeTavily().running() as search,
        three_models(
            tmp_path,
            default_llm,
            strong_llm,
            fast_llm,
            tavily_api_key="tvly-test",
            tavily_base_url=search.base_url,
        ) as client,
    ):
        first = await ask(client, "How are heat pumps doing?", "c-switch")
        second = await stream(
            client,
            {"query": "Summarise that.", "conversationId": "c-switch", "model": "strong"},
        )
        stored = await history(client, "c-switch")

    assert text_of(first) == "Heat pumps are growing [1]."
    assert text_of(second) == "Strong here."
    [sent] = strong_llm.requests
    messages = sent["messages"]
    # The earlier turn in Anthropic's own shape: the question, the tool call and its result
    # as tool_use / tool_result blocks with one id, the answer, then the new question.
    assert messages[0]["role"] == "user"
    assert "How are heat pumps doing?" in orjson.dumps(messages[0]["content"]).decode()
    blocks = [b for m in messages for b in (m["content"] if isinstance(m["content"], list) else [])]
    [use] = [b for b in blocks if b["type"] == "tool_use"]
    [result] = [b for b in blocks if b["type"] == "tool_result"]
    assert (use["name"], use["input"]) == ("web_search", {"query": "heat pumps"})
    assert result["tool_use_id"] == use["id"]
    assert "Heat pumps are growing [1]." in orjson.dumps(messages).decode()
    last = messages[-1]
    assert last["role"] == "user"
    assert "Summarise that." in orjson.dumps(last["content"]).decode()
    assert [m["model"] for m in stored] == ["default", "strong"]


async def test_deep_research_runs_its_roles_on_their_models_and_costs_each_one(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    for fake in (default_llm, fast_llm, strong_llm):
        fake.responder = Behaving(fake, over_http, NativeOnly())
    async with (
        FakeTavily().running() as search,
        three_models(
            tmp_path,
            default_llm,
            strong_llm,
            fast_llm,
            agent_models="deep:fast",
            deep_task_model="default",
            deep_report_model="strong",
            tavily_api_key="tvly-test",
            tavily_base_url=search.base_url,
        ) as client,
    ):
        evts = await ask(client, "How big is the heat pump market?", "c-deep", "deep")
        stored = await history(client, "c-deep")

    assert evts[-1]["status"] == "completed", evts[-2:]
    assert text_of(evts) == REPORT
    # The report went to `strong`, the two tasks' calls to `default`, the rest to `fast`.
    steps = {
        name: [step_named(fake.system_text(body)) for body in fake.requests]
        for name, fake in (("default", default_llm), ("fast", fast_llm), ("strong", strong_llm))
    }
    assert steps["strong"] == ["report"]
    assert steps["default"] == ["task"] * 4
    assert set(steps["fast"]) == {"clarify", "brief", "plan", "critique"}
    usage = evts[-1]["usage"]
    assert usage["model"] == "fast"
    by_model = usage["byModel"]
    assert set(by_model) == {"fast", "default", "strong"}
    assert "costUsd" not in by_model["default"]
    assert by_model["strong"]["costUsd"] > 0
    assert by_model["fast"]["costUsd"] > 0
    assert usage["costUsd"] == pytest.approx(
        by_model["strong"]["costUsd"] + by_model["fast"]["costUsd"]
    )
    assert usage["promptTokens"] == sum(m["promptTokens"] for m in by_model.values())
    [turn] = stored
    assert turn["model"] == "fast"
    assert {u["model"] for u in turn["usageByModel"]} == {"fast", "default", "strong"}


async def test_usage_totals_a_users_turns_per_model_and_per_kind(
    backend: Backend,
    tmp_path: Path,
    default_llm: FakeOpenAI,
    strong_llm: FakeAnthropic,
    fast_llm: FakeOpenAI,
) -> None:
    async with three_models(tmp_path, default_llm, strong_llm, fast_llm, backend) as client:
        await ask(client, "One", "c-usage")
        await stream(client, {"query": "Two", "conversationId": "c-usage", "model": "strong"})
        await stream(client, {"query": "Three", "conversationId": "c-other", "model": "strong"})
        period = await client.get("/usage")
        before = await client.get("/usage", params={"from": "2020-01-01", "to": "2020-02-01"})
        backwards = await client.get("/usage", params={"from": "2030-01-01", "to": "2020-01-01"})
        year_one = await client.get("/usage", params={"to": "0001-01-01T10:06:00Z"})
        before_year_one = await client.get("/usage", params={"from": "0001-01-01T00:00:00+05:00"})

    assert period.status_code == 200
    data = period.json()["data"]
    assert data["total"]["turns"] == 3
    assert data["total"]["promptTokens"] == 3000
    assert data["total"]["costUsd"] == pytest.approx(0.009)
    assert data["total"]["estimated"] is False
    assert data["byModel"]["default"] == {
        "turns": 1,
        "promptTokens": 1000,
        "completionTokens": 100,
        "costUsd": None,
        "estimated": False,
    }
    assert data["byModel"]["strong"]["turns"] == 2
    assert data["byModel"]["strong"]["costUsd"] == pytest.approx(0.009)
    assert list(data["byKind"]) == ["chat"]
    assert data["byKind"]["chat"]["turns"] == 3
    assert set(data) >= {"from", "to"}
    assert before.json()["data"]["total"]["turns"] == 0
    assert before.json()["data"]["from"] == "2020-01-01T00:00:00Z"
    assert backwards.status_code == 422
    assert year_one.status_code == 200
    assert year_one.json()["data"]["from"] == "0001-01-01T00:00:00Z"
    assert before_year_one.status_code == 422


async def test_a_deep_readiness_check_covers_every_model_and_names_the_failing_one(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    fast_llm.script(Reply.error(401, message=f"bad key {FAST_KEY}"))
    async with three_models(tmp_path, default_llm, strong_llm, fast_llm) as client:
        response = await client.get("/ready", params={"deep": "1"})

    assert response.status_code == 503
    body = response.json()
    assert body["models"] == {
        "default": {"status": "ok"},
        "strong": {"status": "ok"},
        "fast": {"status": "unavailable", "error": "LLM_AUTH_FAILED"},
    }
    assert body["checks"]["model"] == "unavailable"
    assert body["errors"] == {"model": "LLM_AUTH_FAILED"}


async def test_no_model_key_reaches_a_log_an_answer_an_error_a_trace_or_the_history(
    tmp_path: Path,
    default_llm: FakeOpenAI,
    strong_llm: FakeAnthropic,
    fast_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Upstreams echo the key they were sent in their error, as real ones do.
    strong_llm.script(Reply.error(401, message=f"invalid x-api-key {STRONG_KEY}"))
    fast_llm.script(Reply.error(400, message=f"bad request from {FAST_KEY}"))
    caplog.set_level(logging.DEBUG)
    exporter = InMemorySpanExporter()
    settings = settings_with(tmp_path, default_llm, strong_llm, fast_llm)
    async with (
        serve(create_app(settings, span_exporter=exporter)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        seen = [
            await client.get("/agent/models"),
            await client.get("/ready", params={"deep": "1"}),
            await client.get(
                "/agent/chat/stream",
                params={"query": "Hi", "conversationId": "c-leak", "model": "strong"},
            ),
            await client.get(
                "/agent/chat/stream",
                params={"query": "Hi", "conversationId": "c-leak", "model": "fast"},
            ),
            await client.get("/session/c-leak"),
            await client.get("/session/c-leak/export", params={"format": "json"}),
            await client.get("/usage"),
        ]

    traced = [
        f"{span.name} {dict(span.attributes or {})} {[e.attributes for e in span.events]}"
        for span in exporter.get_finished_spans()
    ]
    assert any("claude-test" in line for line in traced)
    runs = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
    assert {r.get("dodo.run.model") for r in runs} >= {"strong", "fast"}
    said = "\n".join([*(r.text for r in seen), *(r.getMessage() for r in caplog.records), *traced])
    assert "invalid x-api-key" not in "\n".join(r.text for r in seen)
    for secret in SECRETS:
        assert secret not in said


def test_a_bad_catalog_stops_the_app_before_it_serves(tmp_path: Path) -> None:
    settings = service_settings(
        tmp_path,
        f"sqlite+aiosqlite:///{tmp_path}/app.db",
        models='[{"id": "x", "provider": "openia", "apiKey": "sk-typo-secret-1"}]',
    )
    with pytest.raises(ValueError, match="entry 1 \\('x'\\): unknown provider 'openia'") as caught:
        create_app(settings)
    assert "sk-typo-secret-1" not in str(caught.value)


async def test_a_default_in_models_replaces_the_llm_settings(
    tmp_path: Path, default_llm: FakeOpenAI, strong_llm: FakeAnthropic, fast_llm: FakeOpenAI
) -> None:
    settings = service_settings(
        tmp_path,
        f"sqlite+aiosqlite:///{tmp_path}/app.db",
        llm_base_url="http://127.0.0.1:9/v1",
        models=catalog(
            strong_llm, fast_llm, baseUrl=default_llm.base_url, model="named-default", label="Mine"
        ),
    )
    async with running_service(settings) as client:
        evts = await ask(client, "Hi", "c-named")
        listed = (await client.get("/agent/models")).json()["data"]

    assert text_of(evts) == "Default here."
    assert asked_model(default_llm) == ["named-default"]
    assert (listed[0]["id"], listed[0]["label"], listed[0]["default"]) == ("default", "Mine", True)
