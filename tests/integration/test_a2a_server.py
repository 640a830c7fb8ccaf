"""Our agents over A2A, driven by the a2a-sdk's own client against a running service.

The card on both well-known paths, a streamed chat turn that lands in the
history like any other, a cancel (from the other instance too), a subscribe
that joins a running task, a deep research that asks a question
(input-required) and goes on when answered, and per-user scoping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest
from a2a.client import A2ACardResolver
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    SubscribeToTaskRequest,
)
from a2a.utils.errors import (
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from google.protobuf.json_format import MessageToDict

from app.agents.registry import AGENTS
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import (
    Backend,
    history,
    running_service,
    settings_for,
    settings_with_search,
)
from tests.integration.test_deep_research import INDEPENDENT, QUESTION, deep_settings, on_sqlite
from tests.integration.test_deep_research import research_service as deep_service
from tests.support.a2a import (
    REPORT_BYTES,
    a2a_client,
    answer_of,
    artifact_data,
    artifact_text,
    message,
    state_name,
    states,
    status_text,
    with_report_agent,
)
from tests.support.logs import LogSignal, attached, server_errors
from tests.support.raw_http import request_head, send_and_hang_up
from tests.support.research import REPORT, Researcher


async def test_the_card_is_on_both_paths_with_a_skill_per_running_agent(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    without_pptx = [entry for entry in AGENTS if entry.kind != "pptx"]
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with (
        running_service(settings, without_pptx) as service,
        httpx.AsyncClient() as http,
    ):
        resolver = A2ACardResolver(http, str(service.base_url))
        card = await resolver.get_agent_card()
        older = await resolver.get_agent_card(relative_card_path="/.well-known/agent.json")

    assert card == older
    assert card.name == "dodo-agent"
    assert card.capabilities.streaming
    # No remote agents configured: the host agent, with none to delegate to, is not offered.
    assert [skill.id for skill in card.skills] == ["chat", "file", "deep", "skills"]
    assert {
        (i.protocol_binding, i.url.removeprefix(str(service.base_url).rstrip("/")))
        for i in card.supported_interfaces
    } == {
        ("JSONRPC", "/a2a"),
        ("HTTP+JSON", "/a2a/rest"),
    }
    assert not card.security_schemes


async def test_with_api_keys_the_card_names_the_bearer_scheme_and_calls_need_a_key(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Alice's answer."))
    settings = settings_for(
        Backend(sqlite_url, "", ""), tmp_path, fake_llm, api_keys="ka:alice,kb:bob"
    )
    async with running_service(settings) as service:
        async with a2a_client(service, "ka") as alice:
            done = [r async for r in alice.send_message(message("Hi", "c-alice"))]
            task_id = done[0].task.id
            mine = await alice.get_task(GetTaskRequest(id=task_id))
        async with a2a_client(service, "kb") as bob:
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=task_id))
            with pytest.raises(TaskNotFoundError):
                await bob.cancel_task(CancelTaskRequest(id=task_id))
        async with a2a_client(service, "wrong") as stranger:
            with pytest.raises(A2AClientError, match="401"):
                await stranger.get_task(GetTaskRequest(id=task_id))
        resolved = await A2ACardResolver(service, str(service.base_url)).get_agent_card()

    assert list(resolved.security_schemes) == ["bearer"]
    assert resolved.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert state_name(mine.status.state) == "completed"
    assert artifact_text(mine, "answer") == "Alice's answer."


async def test_a_streamed_chat_turn_is_a_task_and_a_stored_turn(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, fake_search: FakeTavily
) -> None:
    fake_llm.script(
        Reply.tool_calls([("web_search", {"query": "heat pumps"})]),
        Reply.text("Heat pumps are efficient [1].", chunks=3),
    )
    settings = settings_with_search(backend, tmp_path, fake_llm, fake_search)
    async with running_service(settings) as service:
        async with a2a_client(service) as client:
            responses = [r async for r in client.send_message(message("Heat pumps?", "c-a2a"))]
            task_id = responses[0].task.id
            task = await client.get_task(GetTaskRequest(id=task_id))
        stored = await history(service, "c-a2a")

    first = responses[0].task
    assert (first.context_id, state_name(first.status.state)) == ("c-a2a", "working")
    assert task_id == f"c-a2a.{stored[0]['id']}"
    assert states(responses) == ["working", "completed"]
    progress = [status_text(r) for r in responses if r.HasField("status_update")]
    assert "Calling web_search" in progress
    assert answer_of(responses) == "Heat pumps are efficient [1]."
    assert state_name(task.status.state) == "completed"
    assert artifact_text(task, "answer") == "Heat pumps are efficient [1]."
    refs = artifact_data(task, "references")
    assert [r["url"] for r in refs] == [
        "https://example.test/heat-pumps/1",
        "https://example.test/heat-pumps/2",
    ]
    assert [(t["question"], t["answer"], t["status"]) for t in stored] == [
        ("Heat pumps?", "Heat pumps are efficient [1].", "completed")
    ]


async def test_a_message_send_without_streaming_answers_the_finished_task(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Done in one go."))
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as service, a2a_client(service, streaming=False) as client:
        [response] = [r async for r in client.send_message(message("Quick one?"))]

    assert state_name(response.task.status.state) == "completed"
    assert artifact_text(response.task, "answer") == "Done in one go."


async def read_until_answer(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    seen = [await anext(stream)]
    while not answer_of(seen):
        seen.append(await anext(stream))
    return seen


async def test_cancel_stops_the_turn_and_keeps_its_partial_answer(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"))
    settings = settings_for(backend, tmp_path, fake_llm)
    async with running_service(settings) as service, a2a_client(service) as client:
        stream = client.send_message(message("Long one", "c-cancel"))
        seen = await read_until_answer(stream)
        task_id = seen[0].task.id
        canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
        rest = [r async for r in stream]
        stored = await history(service, "c-cancel")
        with pytest.raises(TaskNotCancelableError, match="stopped"):
            await client.cancel_task(CancelTaskRequest(id=task_id))

    assert fake_llm.disconnected.is_set()
    assert state_name(canceled.status.state) == "canceled"
    assert artifact_text(canceled, "answer") == "Partial"
    assert states(rest)[-1] == "canceled"
    assert [(t["status"], t["answer"]) for t in stored] == [("stopped", "Partial")]


@pytest.mark.postgres
@pytest.mark.redis
async def test_another_instance_follows_and_cancels_a_running_task(
    tmp_path: Path, postgres_url: str, redis_url: str, redis_prefix: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Partial"))
    settings = settings_for(Backend(postgres_url, redis_url, redis_prefix), tmp_path, fake_llm)
    async with running_service(settings) as first, a2a_client(first) as runner:
        stream = runner.send_message(message("Long one", "c-far"))
        task_id = (await read_until_answer(stream))[0].task.id
        async with running_service(settings) as second, a2a_client(second) as other:
            follow = other.subscribe(SubscribeToTaskRequest(id=task_id))
            joined = await anext(follow)
            canceled = await other.cancel_task(CancelTaskRequest(id=task_id))
            followed = [r async for r in follow]
        rest = [r async for r in stream]
        stored = await history(first, "c-far")

    assert state_name(joined.task.status.state) == "working"
    assert artifact_text(joined.task, "answer") == "Partial"
    assert state_name(canceled.status.state) == "canceled"
    assert states(followed)[-1] == "canceled"
    assert states(rest)[-1] == "canceled"
    assert [t["status"] for t in stored] == ["stopped"]


async def test_deep_research_asks_and_the_answer_continues_the_same_task(
    backend: Backend, tmp_path: Path, fake_search: FakeTavily
) -> None:
    asked = "Which region and which years?"
    researcher = Researcher(orjson.dumps(INDEPENDENT).decode(), clarify=asked)
    settings = deep_settings(backend, tmp_path, fake_search)
    async with deep_service(settings, researcher) as service, a2a_client(service) as client:
        paused = [r async for r in client.send_message(message(QUESTION, "c-deep", skill="deep"))]
        task_id = paused[0].task.id
        waiting = await client.get_task(GetTaskRequest(id=task_id))
        answered = [
            r
            async for r in client.send_message(
                message("Europe, 2020 to 2024", "c-deep", task_id=task_id)
            )
        ]
        done = await client.get_task(GetTaskRequest(id=task_id))
        stored = await history(service, "c-deep")

    assert states(paused) == ["working", "input_required"]
    assert status_text(paused[-1]) == asked
    assert state_name(waiting.status.state) == "input_required"
    assert answered[0].task.id == task_id
    assert states(answered) == ["working", "completed"]
    assert answer_of(answered) == REPORT
    assert state_name(done.status.state) == "completed"
    assert artifact_text(done, "answer") == REPORT
    assert [part.text for m in done.history for part in m.parts if part.text] == [
        QUESTION,
        asked,
        "Europe, 2020 to 2024",
    ]
    assert [(t["question"], t["status"]) for t in stored] == [
        (QUESTION, "paused"),
        ("Europe, 2020 to 2024", "completed"),
    ]


async def test_a_failed_task_says_the_sentence_naming_its_step_live_and_when_read_back(
    tmp_path: Path, sqlite_url: str, fake_search: FakeTavily
) -> None:
    researcher = Researcher("No plan today.", "Still no plan.")
    settings = on_sqlite(tmp_path, sqlite_url, fake_search)
    async with deep_service(settings, researcher) as service:
        async with a2a_client(service) as client:
            asked = message(QUESTION, "c-fail", skill="deep")
            streamed = [r async for r in client.send_message(asked)]
            task = await client.get_task(GetTaskRequest(id=streamed[0].task.id))
        async with a2a_client(service, streaming=False) as client:
            asked = message(QUESTION, "c-fail-2", skill="deep")
            researcher.plans = ["No plan today.", "Still no plan."]
            [sent] = [r async for r in client.send_message(asked)]
        [stored] = await history(service, "c-fail")

    sentence = stored["errorMessage"]
    assert sentence.startswith("Planning the research failed: ")
    assert states(streamed) == ["working", "failed"]
    assert status_text(streamed[-1]) == sentence
    for read in (task, sent.task):
        assert state_name(read.status.state) == "failed"
        text, data = read.status.message.parts
        assert text.text == sentence
        assert MessageToDict(data.data)["code"] == "LLM_INVALID_OUTPUT"


async def test_a_busy_conversation_and_an_unknown_skill_are_refused_before_any_run(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.hang(first_text="Busy"))
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as service, a2a_client(service) as client:
        stream = client.send_message(message("Long one", "c-busy"))
        await read_until_answer(stream)
        with pytest.raises(InvalidRequestError, match="already running"):
            await anext(client.send_message(message("Again", "c-busy")))
        with pytest.raises(InvalidParamsError, match="Unknown skill"):
            await anext(client.send_message(message("Hi", "c-other", skill="nope")))
        stored = await history(service, "c-busy")
        await client.cancel_task(CancelTaskRequest(id=f"c-busy.{stored[0]['id']}"))
        rest = [r async for r in stream]

    assert states(rest)[-1] == "canceled"
    assert [t["question"] for t in stored] == ["Long one"]


async def test_an_a2a_0_3_client_is_answered_with_the_0_3_method_names(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Old but served."))
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    text = {"kind": "text", "text": "Hi from 0.3"}
    send = {"message": {"role": "user", "parts": [text], "messageId": "m-1", "contextId": "c-v03"}}
    async with running_service(settings) as service:
        sent = await service.post(
            "/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": send}
        )
        task_id = sent.json()["result"]["id"]
        got = await service.post(
            "/a2a",
            json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task_id}},
        )

    result = got.json()["result"]
    assert sent.json()["result"]["status"]["state"] == "completed"
    assert (result["contextId"], result["status"]["state"]) == ("c-v03", "completed")
    [answer] = [a for a in result["artifacts"] if a["artifactId"] == "answer"]
    assert answer["parts"] == [{"kind": "text", "text": "Old but served."}]


async def test_the_rest_binding_answers_the_sdk_client_too(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("Over HTTP+JSON."))
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with (
        running_service(settings) as service,
        a2a_client(service, bindings=["HTTP+JSON"]) as client,
    ):
        responses = [r async for r in client.send_message(message("Hi", "c-rest"))]
        task = await client.get_task(GetTaskRequest(id=responses[0].task.id))

    assert states(responses) == ["working", "completed"]
    assert artifact_text(task, "answer") == "Over HTTP+JSON."


async def test_a_generated_file_is_a_file_part_with_our_download_url(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with (
        running_service(settings, with_report_agent()) as service,
        a2a_client(service) as client,
    ):
        responses = [r async for r in client.send_message(message("A report", skill="pptx"))]
        [file] = [
            r.artifact_update.artifact
            for r in responses
            if r.HasField("artifact_update") and r.artifact_update.artifact.name == "report.txt"
        ]
        [part] = file.parts
        download = await service.get(part.url)

    assert part.url.startswith(f"{service.base_url}/file/download/")
    assert (part.filename, part.media_type) == ("report.txt", "text/plain")
    assert download.content == REPORT_BYTES
    assert states(responses)[-1] == "completed"


PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        pytest.param(b"{nope", PARSE_ERROR, None, id="not-json"),
        pytest.param(b"[" * 5000, PARSE_ERROR, None, id="5000-deep-array"),
        pytest.param(b'{"a":' * 5000, PARSE_ERROR, None, id="5000-deep-object"),
        pytest.param(b'{"jsonrpc":"2.0","id":"\xff"}', PARSE_ERROR, None, id="not-utf-8"),
        pytest.param(b'"hi"', INVALID_REQUEST, None, id="a-string"),
        pytest.param(b"[]", INVALID_REQUEST, None, id="empty-batch"),
        pytest.param(b'{"method":"GetTask","id":1}', INVALID_REQUEST, 1, id="no-jsonrpc"),
        pytest.param(b'{"jsonrpc":"2.0","id":2}', INVALID_REQUEST, 2, id="no-method"),
        pytest.param(b'{"jsonrpc":"2.0","method":5,"id":3}', INVALID_REQUEST, 3, id="method-int"),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"GetTask","id":{}}', INVALID_REQUEST, None, id="id-object"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"GetTask","id":4,"params":"x"}',
            INVALID_REQUEST,
            4,
            id="params-string",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"GetTask","id":5,"params":{"id":5}}',
            INVALID_PARAMS,
            5,
            id="params-wrong-type",
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"message/send","id":6,"params":{"message":5}}',
            INVALID_REQUEST,
            6,
            id="0.3-params-wrong-type",
        ),
    ],
)
async def test_a_malformed_json_rpc_call_answers_its_error_code_and_logs_no_error(
    tmp_path: Path,
    sqlite_url: str,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    body: bytes,
    code: int,
    request_id: int | None,
) -> None:
    """JSON-RPC 2.0: -32700 for what is not JSON, -32600 for what is not a request.

    Nesting 5,000 deep answered -32603 after a `RecursionError`, and each of
    these logged an ERROR with a traceback: a client's mistake is no error of ours.
    """
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    with server_errors(caplog) as errors:
        async with running_service(settings) as service:
            response = await service.post(
                "/a2a", content=body, headers={"content-type": "application/json"}
            )

    assert response.status_code == 200
    answer = response.json()
    assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", request_id, code)
    assert errors == []


@pytest.mark.parametrize("path", ["/a2a", "/a2a/rest/message:send"])
async def test_a_client_hanging_up_mid_body_logs_no_error(
    tmp_path: Path,
    sqlite_url: str,
    fake_llm: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    path: str,
) -> None:
    """It logged two ERROR tracebacks (ours and uvicorn's), some 110 lines."""
    settings = settings_for(Backend(sqlite_url, "", ""), tmp_path, fake_llm, log_level="DEBUG")
    with server_errors(caplog) as errors:
        async with running_service(settings) as service:
            with attached("app.api.errors", LogSignal("hung up")) as hung_up:
                head = request_head("POST", path, 1000, "application/json")
                await send_and_hang_up(str(service.base_url), head + b'{"jsonrpc":')
                await hung_up.seen.wait()
            health = await service.get("/health")

    assert health.status_code == 200
    assert errors == []
