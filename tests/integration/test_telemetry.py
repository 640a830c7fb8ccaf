"""Traces and metrics, seen from outside: the spans one turn leaves, and `/metrics`.

Tracing is turned on with OpenTelemetry's in-memory exporter (the same spans
an OTLP collector would get); each test reads them after the app has shut
down, when every span of the turn has ended. `/metrics` is parsed with
prometheus_client's own text parser. Each test runs on SQLite with the
in-process tasks and on PostgreSQL with Redis.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_trace_id
from prometheus_client.parser import text_string_to_metric_families

from app.config import Settings
from app.factory import create_app
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.otlp_server import FakeCollector
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import Backend, ask, running_service, settings_with_search
from tests.support.server import serve
from tests.support.sse import events

METRICS_KEY = "metrics-key-0123456789"


@contextlib.asynccontextmanager
async def traced_service(
    settings: Settings, exporter: InMemorySpanExporter
) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serve(create_app(settings, span_exporter=exporter)) as url,
        httpx.AsyncClient(base_url=url, timeout=10) as client,
    ):
        yield client


def _one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    span_id: int = span.context.span_id
    return span_id


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _model_call_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The service's debug lines about model calls, as its own log handler prints them."""
    handler = logging.getLogger("app").handlers[0]
    return [handler.format(r) for r in caplog.records if r.getMessage().startswith("model call")]


async def test_a_turn_is_one_trace_of_request_run_model_tool_and_store_spans(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "otel"})]),
        Reply.text("OpenTelemetry traces things.", chunks=3),
    )
    exporter = InMemorySpanExporter()
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search, log_level="DEBUG")
    with caplog.at_level(logging.DEBUG, logger="app"):
        async with traced_service(settings, exporter) as client:
            evts = await ask(client, "What is OpenTelemetry?", "conv-trace")
    spans = exporter.get_finished_spans()

    start, complete = evts[0], evts[-1]
    assert complete["status"] == "completed"
    trace_id = start["traceId"]
    turn = [
        s
        for s in spans
        if s.context is not None and format_trace_id(s.context.trace_id) == trace_id
    ]

    request = _one(turn, "GET /agent/chat/stream")
    assert request.kind == SpanKind.SERVER
    assert request.parent is None
    assert _attributes(request)["http.route"] == "/agent/chat/stream"
    assert _attributes(request)["http.response.status_code"] == 200

    run = _one(turn, "invoke_agent chat")
    assert _parent_id(run) == _span_id(request)
    assert _attributes(run)["gen_ai.operation.name"] == "invoke_agent"
    assert _attributes(run)["gen_ai.conversation.id"] == "conv-trace"
    assert _attributes(run)["dodo.run.status"] == "completed"

    model_calls = [s for s in turn if s.name == "chat fake-model"]
    assert len(model_calls) == 2
    for call in model_calls:
        assert _parent_id(call) == _span_id(run)
        assert call.kind == SpanKind.CLIENT
        attributes = _attributes(call)
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "fake-model"
        assert attributes["gen_ai.usage.output_tokens"] > 0
        lasted = ((call.end_time or 0) - (call.start_time or 0)) / 1e9
        assert 0 < attributes["gen_ai.response.time_to_first_chunk"] <= lasted
    input_tokens = [_attributes(c)["gen_ai.usage.input_tokens"] for c in model_calls]
    assert sum(input_tokens) == complete["usage"]["promptTokens"]

    tool = _one(turn, "execute_tool web_search")
    assert _parent_id(tool) == _span_id(run)
    tool_start = next(e for e in evts if e["type"] == "tool_start")
    assert _attributes(tool)["gen_ai.tool.name"] == "web_search"
    assert _attributes(tool)["gen_ai.tool.call.id"] == tool_start["toolCallId"]

    system = "postgresql" if backend.database_url.startswith("postgresql") else "sqlite"
    statements = [s for s in turn if _attributes(s).get("db.system.name") == system]
    # The question is stored by the request; the answer by the run, in its background task.
    assert any(
        _parent_id(s) == _span_id(request) and s.name in ("INSERT", "WITH") for s in statements
    ), [(s.name, _parent_id(s)) for s in statements]
    assert any(_parent_id(s) == _span_id(run) and s.name == "UPDATE" for s in statements)
    for statement in statements:
        assert "What is OpenTelemetry" not in str(_attributes(statement))
    if backend.redis_url:
        assert _parent_id(_one(turn, "tasks.claim")) == _span_id(request)
        # Released in the round trip of the run log's last copy, as without tracing:
        # not in a call (and a span) of its own.
        assert not [span.name for span in turn if span.name == "tasks.release"]

    lines = _model_call_lines(caplog)
    assert lines
    assert all(line.endswith(f" trace_id={trace_id}") for line in lines)


async def test_with_tracing_off_no_trace_id_is_sent_or_logged(
    backend: Backend,
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.script(Reply.text("Plain."))
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search, log_level="DEBUG")
    with caplog.at_level(logging.DEBUG, logger="app"):
        async with running_service(settings) as client:
            evts = await ask(client, "Hi", "conv-plain")

    assert "traceId" not in evts[0]
    assert evts[-1]["status"] == "completed"
    lines = _model_call_lines(caplog)
    assert lines
    assert not any("trace_id" in line for line in lines)


def _samples(page: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Each sample of the page by its name and labels (sorted)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(page)
        for sample in family.samples
    }


async def _metrics(client: httpx.AsyncClient, **headers: str) -> dict[Any, float]:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return _samples(response.text)


async def test_metrics_count_runs_tokens_tools_streams_and_first_events(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "prometheus"}), ("no_such_tool", {})]),
        Reply.text("Prometheus scrapes.", chunks=2),
        Reply.hang(first_text="Partial"),
    )
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search)
    async with running_service(settings) as client:
        before = await _metrics(client)
        turn = await ask(client, "What is Prometheus?", "conv-metrics")
        after_turn = await _metrics(client)
        async with client.stream(
            "GET", "/agent/chat/stream", params={"query": "Long", "conversationId": "conv-open"}
        ) as response:
            async for event in events(response):
                if event["type"] == "text":
                    while_open = await _metrics(client)
                    await client.get("/agent/stop", params={"conversationId": "conv-open"})
        after_stop = await _metrics(client)

    assert before[("dodo_open_streams", ())] == 0
    assert ("dodo_runs_total", (("agent", "chat"), ("status", "completed"))) not in before
    usage = turn[-1]["usage"]
    assert after_turn[("dodo_runs_total", (("agent", "chat"), ("status", "completed")))] == 1
    assert (
        after_turn[("dodo_model_tokens_total", (("direction", "input"), ("model", "fake-model")))]
        == (usage["promptTokens"])
    )
    assert (
        after_turn[("dodo_model_tokens_total", (("direction", "output"), ("model", "fake-model")))]
        == (usage["completionTokens"])
    )
    assert after_turn[("dodo_tool_calls_total", (("tool", "web_search"),))] == 1
    assert after_turn[("dodo_tool_calls_total", (("tool", "no_such_tool"),))] == 1
    assert after_turn[("dodo_tool_errors_total", (("tool", "no_such_tool"),))] == 1
    assert ("dodo_tool_errors_total", (("tool", "web_search"),)) not in after_turn
    assert after_turn[("dodo_time_to_first_event_seconds_count", (("agent", "chat"),))] == 1
    assert after_turn[("dodo_store_retries_total", ())] == 0
    assert while_open[("dodo_open_streams", ())] == 1
    assert after_stop[("dodo_runs_total", (("agent", "chat"), ("status", "stopped")))] == 1


@pytest.mark.parametrize(
    ("api_keys", "metrics_key", "sent", "status"),
    [
        ("", "", None, 200),
        ("user-key:alice", "", None, 404),
        ("user-key:alice", "", "user-key", 404),
        ("user-key:alice", METRICS_KEY, None, 401),
        ("user-key:alice", METRICS_KEY, "user-key", 401),
        ("user-key:alice", METRICS_KEY, METRICS_KEY, 200),
        ("", METRICS_KEY, None, 401),
        ("", METRICS_KEY, METRICS_KEY, 200),
    ],
)
async def test_metrics_take_their_own_key_or_are_off_with_api_keys(
    tmp_path: Path,
    fake_llm: FakeOpenAI,
    fake_search: FakeTavily,
    api_keys: str,
    metrics_key: str,
    sent: str | None,
    status: int,
) -> None:
    backend = Backend(f"sqlite+aiosqlite:///{tmp_path}/app.db", "", "")
    settings = settings_with_search(
        backend, tmp_path, fake_llm, fake_search, api_keys=api_keys, metrics_key=metrics_key
    )
    headers = {"Authorization": f"Bearer {sent}"} if sent else {}
    async with running_service(settings) as client:
        response = await client.get("/metrics", headers=headers)

    assert response.status_code == status
    if status == 200:
        assert "dodo_open_streams 0.0" in response.text
    else:
        assert response.json()["code"] == status
        assert METRICS_KEY not in response.text


async def test_spans_are_shipped_over_otlp_when_an_endpoint_is_set(
    tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(Reply.text("Shipped."))
    backend = Backend(f"sqlite+aiosqlite:///{tmp_path}/app.db", "", "")
    async with FakeCollector().running() as collector:
        settings = settings_with_search(
            backend, tmp_path, fake_llm, fake_search, otel_exporter_otlp_endpoint=collector.base_url
        )
        async with running_service(settings) as client:
            evts = await ask(client, "Hi", "conv-otlp")

    trace_id = bytes.fromhex(evts[0]["traceId"])
    (resource,) = collector.resource_spans
    service = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert service["service.name"] == "dodo-agent"
    shipped = [span for scope in resource.scope_spans for span in scope.spans]
    names = {span.name for span in shipped if span.trace_id == trace_id}
    assert {"GET /agent/chat/stream", "invoke_agent chat", "chat fake-model"} <= names
