"""A turn's end announced to a receiver: signed, retried, and never to a refused address.

The receiver is a real HTTP server on 127.0.0.1, which the outbound guard
refuses unless `OUTBOUND_ALLOWLIST` names it, as it would in production.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, ask, history, running_service, settings_for
from tests.support.receiver import SECRET, Receiver, verified
from tests.support.sse import events


async def test_a_turns_end_is_posted_once_signed_with_its_outcome(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    fake_llm.script(Reply.text("The answer."))
    settings = settings_for(
        backend, tmp_path, fake_llm, webhook_secret=SECRET, outbound_allowlist="127.0.0.1"
    )
    async with running_service(settings) as client:
        body = {"query": "Q", "conversationId": "c-w", "webhook": receiver.url}
        async with client.stream("POST", "/agent/chat/stream", json=body) as response:
            streamed = [e async for e in events(response)]
        call = await receiver.next_call()
        stored = await history(client, "c-w")

    payload = call.json()
    assert verified(call)
    assert not verified(call, "another-secret")
    assert call.headers["content-type"] == "application/json"
    assert payload == {
        "conversationId": "c-w",
        "sessionId": streamed[0]["sessionId"],
        "taskId": streamed[0]["taskId"],
        "agentType": "chat",
        "status": "completed",
        "history": "/session/c-w",
        "finishedAt": payload["finishedAt"],
    }
    assert call.headers["x-webhook-id"] == streamed[0]["taskId"]
    assert stored[0]["id"] == payload["sessionId"]
    assert receiver.calls.empty()


async def test_a_failing_receiver_is_tried_again_with_the_same_delivery(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    receiver.statuses = [500, 503]
    settings = settings_for(
        backend,
        tmp_path,
        fake_llm,
        webhook_secret=SECRET,
        webhook_url=receiver.url,
        webhook_retry_seconds=0.05,
        outbound_allowlist="127.0.0.1",
    )
    async with running_service(settings) as client:
        streamed = await ask(client, "Q", "c-retry")
        calls = [await receiver.next_call() for _ in range(3)]

    assert [c.json()["status"] for c in calls] == ["completed"] * 3
    assert {c.headers["x-webhook-id"] for c in calls} == {streamed[0]["taskId"]}
    assert all(verified(c) for c in calls)
    assert receiver.calls.empty()


async def test_a_webhook_on_a_refused_address_answers_400_before_anything_runs(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, webhook_secret=SECRET)
    async with running_service(settings) as client:
        refused = await client.get(
            "/agent/chat/stream",
            params={"query": "Q", "conversationId": "c-r", "webhook": receiver.url},
        )
        metadata = await client.post(
            "/agent/chat/stream",
            json={"query": "Q", "webhook": "http://169.254.169.254/latest/meta-data"},
        )
        not_http = await client.post(
            "/agent/chat/stream", json={"query": "Q", "webhook": "file:///etc/passwd"}
        )
        # `.invalid` never resolves (RFC 6761).
        unresolvable = await client.post(
            "/agent/chat/stream", json={"query": "Q", "webhook": "https://hooks.invalid/end"}
        )
        stored = await client.get("/session/c-r")

    assert refused.status_code == 400
    assert refused.json()["code"] == 400
    assert "OUTBOUND_ALLOWLIST" in refused.json()["message"]
    assert metadata.status_code == not_http.status_code == unresolvable.status_code == 400
    assert "hooks.invalid could not be resolved" in unresolvable.json()["message"]
    assert stored.status_code == 404
    assert fake_llm.requests == []
    assert receiver.calls.empty()


async def test_a_webhook_without_a_secret_configured_answers_400(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    settings = settings_for(backend, tmp_path, fake_llm, outbound_allowlist="127.0.0.1")
    async with running_service(settings) as client:
        response = await client.post(
            "/agent/chat/stream", json={"query": "Q", "webhook": receiver.url}
        )

    assert response.status_code == 400
    assert "WEBHOOK_SECRET" in response.json()["message"]
    assert fake_llm.requests == []


async def test_a_turn_that_starts_waiting_for_a_yes_is_posted_as_paused(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    fake_llm.script(Reply.tool_calls([("write_file", {"path": "a.txt", "content": "a"})]))
    settings = settings_for(
        backend,
        tmp_path,
        fake_llm,
        webhook_secret=SECRET,
        outbound_allowlist="127.0.0.1",
        tool_approval="write_file",
    )
    async with running_service(settings) as client:
        body = {"query": "Q", "conversationId": "c-wait", "webhook": receiver.url}
        async with client.stream("POST", "/agent/skills/stream", json=body) as response:
            streamed = [e async for e in events(response)]
        call = await receiver.next_call()
        [stored] = await history(client, "c-wait")

    [approval] = [e for e in streamed if e["type"] == "approval"]
    assert verified(call)
    assert call.json()["status"] == "paused"
    assert call.json()["history"] == "/session/c-wait"
    assert stored["pending"][0]["approvalId"] == approval["approvalId"]
