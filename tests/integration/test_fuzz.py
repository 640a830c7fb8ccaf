"""Fuzzing the HTTP surface: schemathesis from the service's own OpenAPI document.

Every non-streaming operation gets a bounded number of generated requests,
valid and invalid, and must answer without a 5xx and with a body that
matches the schema it documents (errors: the envelope). The streams and resume get property tests
of their own, over query, ids, agent and headers: each request is refused
with a 4xx in the envelope or its stream ends with `complete`. The service
runs on its own thread, since both call it through blocking clients.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import hypothesis
import orjson
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.generation.case import Case
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.agents.registry import AGENTS
from app.config import Settings
from app.factory import create_app
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.service import service_settings
from tests.support.server import serve
from tests.support.threaded import in_thread

EXAMPLES_PER_OPERATION = 25


@contextlib.asynccontextmanager
async def fuzzed_service(tmp_path: Path) -> AsyncIterator[str]:
    async with FakeOpenAI() as fake_llm:
        settings = service_settings(
            tmp_path, f"sqlite+aiosqlite:///{tmp_path}/app.db", llm_base_url=fake_llm.base_url
        )
        async with serve(create_app(settings)) as url:
            yield url


@pytest.fixture(scope="module")
def service_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp_path = tmp_path_factory.mktemp("fuzz")
    with in_thread(lambda: fuzzed_service(tmp_path)) as url:
        yield url


def api_document() -> dict[str, Any]:
    """The document `/openapi.json` serves; building the app runs none of its start-up."""
    settings = Settings(_env_file=None, data_dir=Path("unused"))
    return create_app(settings).openapi()


schema = schemathesis.openapi.from_dict(api_document())


def test_every_error_is_documented_as_the_envelope() -> None:
    """A client generated from the document reads errors as they are sent."""
    document = api_document()
    errors = {
        (path, method, status): response["content"]["application/json"]["schema"]["$ref"]
        for path, item in document["paths"].items()
        for method, operation in item.items()
        for status, response in operation["responses"].items()
        if status[0] in "45"
    }

    assert errors
    # A2A's endpoints answer A2A's errors too (app/api/a2a/routes.py).
    a2a = {key: ref for key, ref in errors.items() if key[0].startswith("/a2a")}
    assert set(a2a.values()) == {"#/components/schemas/A2AError"}
    ours = {key: ref for key, ref in errors.items() if key not in a2a}
    assert set(ours.values()) == {"#/components/schemas/ErrorEnvelope"}
    operations = [op for item in document["paths"].values() for op in item.values()]
    assert all("4XX" in op["responses"] for op in operations)
    assert "HTTPValidationError" not in str(document)


@schema.exclude(path_regex=r"/(stream|resume)$").parametrize()
@hypothesis.settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(hypothesis.HealthCheck),
    database=None,
)
def test_no_operation_answers_5xx_or_off_its_schema(service_url: str, case: Case[Any]) -> None:
    case.call_and_validate(
        base_url=service_url,
        checks=[
            not_a_server_error,
            status_code_conformance,
            response_schema_conformance,
            content_type_conformance,
        ],
    )


printable = st.characters(exclude_categories=["Cs"])
"""Any character a client can encode; lone surrogates cannot leave the client at all."""
header_bytes = st.from_regex(
    rb"([\x21-\x7e\x80-\xff][\x20-\x7e\x80-\xff]{0,38})?[\x21-\x7e\x80-\xff]", fullmatch=True
)
"""Any bytes a header value may carry: no CR, LF, NUL or white space at its ends, which
the client refuses to send."""
conversation_ids = st.one_of(
    st.none(),
    st.from_regex(r"[A-Za-z0-9_-]{1,128}", fullmatch=True),
    st.text(printable, max_size=200),
    st.just("c1\r\nX-Injected: yes"),
    st.just("a" * 10_000),
)
stream_requests = st.fixed_dictionaries(
    {
        "kind": st.sampled_from([entry.kind for entry in AGENTS if entry.built]),
        "method": st.sampled_from(["GET", "POST"]),
        "query": st.one_of(st.none(), st.text(printable, max_size=60), st.just("q" * 40_000)),
        "conversationId": conversation_ids,
        "fileId": st.one_of(st.none(), st.text(printable, max_size=80)),
        "onDisconnect": st.one_of(st.none(), st.sampled_from(["continue", "cancel"]), st.text()),
    }
)


def assert_refused_or_complete(response: httpx.Response) -> None:
    """A 4xx in the envelope (or 501: the host agent, with no remote agents configured, is
    not available), or an event stream whose last event is `complete`."""
    if response.status_code != 200:
        assert 400 <= response.status_code < 500 or response.status_code == 501, response.read()
        body = orjson.loads(response.read())
        assert body == {"code": response.status_code, "message": body["message"], "data": None}
        return
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    last = None
    for line in response.iter_lines():
        if line.startswith("data: "):
            last = orjson.loads(line[6:])
            if last["type"] == "complete":
                break
    assert last is not None
    assert last["type"] == "complete"


@hypothesis.settings(max_examples=40, deadline=None, database=None)
@hypothesis.given(request=stream_requests)
def test_a_stream_is_refused_with_a_4xx_or_ends_with_complete(
    service_url: str, request: dict[str, Any]
) -> None:
    kind, method = request.pop("kind"), request.pop("method")
    fields = {k: v for k, v in request.items() if v is not None}
    sent: dict[str, Any] = {"params": fields} if method == "GET" else {"json": fields}
    with (
        httpx.Client(base_url=service_url, timeout=30) as client,
        client.stream(method, f"/agent/{kind}/stream", **sent) as response,
    ):
        assert_refused_or_complete(response)


@hypothesis.settings(max_examples=30, deadline=None, database=None)
@hypothesis.given(
    conversation_id=conversation_ids.filter(lambda c: c is not None),
    last_event_id=st.one_of(st.none(), header_bytes),
    query_id=st.one_of(st.none(), st.text(printable, max_size=30)),
)
def test_resume_is_refused_with_a_4xx_or_ends_with_complete(
    service_url: str, conversation_id: str, last_event_id: bytes | None, query_id: str | None
) -> None:
    params = {"conversationId": conversation_id}
    if query_id is not None:
        params["lastEventId"] = query_id
    headers = {} if last_event_id is None else {b"Last-Event-ID": last_event_id}
    with (
        httpx.Client(base_url=service_url, timeout=30) as client,
        client.stream("GET", "/agent/resume", params=params, headers=headers) as response,
    ):
        assert_refused_or_complete(response)
