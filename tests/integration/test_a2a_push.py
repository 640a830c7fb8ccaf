"""A2A push notifications, set with the a2a-sdk's own client and received by a local server.

A config set on a running task (on any instance) is told the task's final
state, signed like our webhooks and carrying the client's token and
credentials; configs are read, listed and deleted per task and per user; a
config sent with the message that starts a task works the same; deleting a
turn deletes its task's configs; without `WEBHOOK_SECRET` push notifications
are off and the card says so.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from a2a.client import A2ACardResolver
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageConfiguration,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
)

from app.config import Settings
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.scripted_server import Reply
from tests.integration.service import Backend, running_service, settings_for
from tests.support.a2a import a2a_client, message, state_name
from tests.support.receiver import SECRET, Receiver, verified


def push_config(task_id: str, url: str, config_id: str = "cfg-1") -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(
        task_id=task_id,
        id=config_id,
        url=url,
        token="client-token",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="receiver-key"),
    )


def pushing(backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, **more: str) -> Settings:
    """Push on (a secret to sign with), and the local receiver a URL it may call."""
    return settings_for(
        backend, tmp_path, fake_llm, webhook_secret=SECRET, outbound_allowlist="127.0.0.1", **more
    )


async def test_a_config_set_on_a_running_task_is_told_its_final_state(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("Heat pumps", " move heat.", gate))
    settings = pushing(backend, tmp_path, fake_llm)
    async with running_service(settings) as service, a2a_client(service) as client:
        stream = client.send_message(message("Heat pumps?", "c-push"))
        task_id = (await anext(stream)).task.id
        created = await client.create_task_push_notification_config(
            push_config(task_id, receiver.url)
        )
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
        )
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        gate.set()
        rest = [r async for r in stream]
        call = await receiver.next_call()
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
        )
        after_delete = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        with pytest.raises(TaskNotFoundError):
            await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
            )

    assert (created.id, created.task_id, created.url) == ("cfg-1", task_id, receiver.url)
    assert got == created
    assert list(listed.configs) == [created]
    assert not after_delete.configs
    assert state_name(rest[-1].status_update.status.state) == "completed"
    assert verified(call)
    assert call.headers["x-a2a-notification-token"] == "client-token"
    assert call.headers["authorization"] == "Bearer receiver-key"
    pushed = call.json()["task"]
    assert (pushed["id"], pushed["contextId"]) == (task_id, "c-push")
    assert pushed["status"]["state"] == "TASK_STATE_COMPLETED"
    answer = next(a for a in pushed["artifacts"] if a["artifactId"] == "answer")
    assert answer["parts"][0]["text"] == "Heat pumps move heat."
    assert receiver.calls.empty()


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_config_set_on_another_instance_is_told_by_the_one_running_the_task(
    tmp_path: Path,
    postgres_url: str,
    redis_url: str,
    redis_prefix: str,
    fake_llm: FakeOpenAI,
    receiver: Receiver,
) -> None:
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("Far", " away.", gate))
    backend = Backend(postgres_url, redis_url, redis_prefix)
    settings = pushing(backend, tmp_path, fake_llm)
    async with running_service(settings) as first, a2a_client(first) as runner:
        stream = runner.send_message(message("Far one", "c-far-push"))
        task_id = (await anext(stream)).task.id
        async with running_service(settings) as second, a2a_client(second) as other:
            await other.create_task_push_notification_config(push_config(task_id, receiver.url))
        gate.set()
        rest = [r async for r in stream]
        call = await receiver.next_call()

    assert state_name(rest[-1].status_update.status.state) == "completed"
    assert verified(call)
    assert call.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_config_sent_with_the_message_is_told_and_another_user_sees_none(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    fake_llm.script(Reply.text("Done."))
    settings = pushing(Backend(sqlite_url, "", ""), tmp_path, fake_llm, api_keys="ka:alice,kb:bob")
    request = message("Quick one", "c-with")
    request.configuration.CopyFrom(
        SendMessageConfiguration(task_push_notification_config=push_config("", receiver.url))
    )
    async with running_service(settings) as service:
        async with a2a_client(service, "ka") as alice:
            done = [r async for r in alice.send_message(request)]
            task_id = done[0].task.id
            call = await receiver.next_call()
        async with a2a_client(service, "kb") as bob:
            with pytest.raises(TaskNotFoundError):
                await bob.list_task_push_notification_configs(
                    ListTaskPushNotificationConfigsRequest(task_id=task_id)
                )
            with pytest.raises(TaskNotFoundError):
                await bob.create_task_push_notification_config(
                    push_config(task_id, receiver.url, "theirs")
                )

    assert verified(call)
    pushed = call.json()["task"]
    assert (pushed["id"], pushed["status"]["state"]) == (task_id, "TASK_STATE_COMPLETED")


async def test_push_is_off_without_a_secret_and_refuses_a_private_address(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI
) -> None:
    fake_llm.script(Reply.text("One."), Reply.text("Two."))
    backend = Backend(sqlite_url, "", "")
    without = settings_for(backend, tmp_path, fake_llm)
    async with running_service(without) as service, a2a_client(service) as client:
        card = await A2ACardResolver(service, str(service.base_url)).get_agent_card()
        done = [r async for r in client.send_message(message("Hi", "c-off"))]
        task_id = done[0].task.id
        with pytest.raises(PushNotificationNotSupportedError):
            await client.create_task_push_notification_config(
                push_config(task_id, "https://hooks.example.test/a2a")
            )
    with_secret = settings_for(backend, tmp_path, fake_llm, webhook_secret=SECRET)
    async with running_service(with_secret) as service, a2a_client(service) as client:
        on = await A2ACardResolver(service, str(service.base_url)).get_agent_card()
        done = [r async for r in client.send_message(message("Hi", "c-on"))]
        task_id = done[0].task.id
        with pytest.raises(InvalidParamsError, match="private, local or metadata"):
            await client.create_task_push_notification_config(
                push_config(task_id, "http://127.0.0.1:9/hook")
            )

    assert not card.capabilities.push_notifications
    assert on.capabilities.push_notifications


async def test_deleting_a_turn_deletes_its_tasks_configs(
    tmp_path: Path, sqlite_url: str, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    """On SQLite the next turn takes the deleted newest turn's id, so its task took the
    deleted task's id, and with it a config its client set on the deleted one."""
    fake_llm.script(Reply.text("First."), Reply.text("Second."))
    settings = pushing(Backend(sqlite_url, "", ""), tmp_path, fake_llm)
    async with running_service(settings) as service, a2a_client(service) as client:
        first = [r async for r in client.send_message(message("One?", "c-gone"))]
        task_id = first[0].task.id
        await client.create_task_push_notification_config(push_config(task_id, receiver.url))
        turn_id = task_id.rsplit(".", 1)[1]
        deleted = await service.delete(f"/session/c-gone/turns/{turn_id}")
        second = [r async for r in client.send_message(message("Two?", "c-gone"))]
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=second[0].task.id)
        )
    with sqlite3.connect(sqlite_url.split(":///", 1)[1]) as database:
        (kept,) = database.execute("SELECT count(*) FROM a2a_push_config").fetchone()

    assert deleted.status_code == 200
    assert second[0].task.id == task_id
    assert not listed.configs
    assert kept == 0


async def test_a_config_set_on_a_scheduled_runs_task_is_told_its_end(
    backend: Backend, tmp_path: Path, fake_llm: FakeOpenAI, receiver: Receiver
) -> None:
    gate = asyncio.Event()
    fake_llm.script(Reply.gated("Overnight", " nothing changed.", gate))
    settings = pushing(backend, tmp_path, fake_llm)
    async with running_service(settings) as service, a2a_client(service) as client:
        made = await service.post(
            "/schedules",
            json={"kind": "chat", "query": "What changed?", "rrule": "FREQ=DAILY;BYHOUR=8"},
        )
        schedule_id = made.json()["data"]["scheduleId"]
        run = (await service.post(f"/schedules/{schedule_id}/run")).json()["data"]
        task_id = f"{run['conversationId']}.{run['turnId']}"
        await client.create_task_push_notification_config(push_config(task_id, receiver.url))
        gate.set()
        call = await receiver.next_call()

    assert verified(call)
    pushed = call.json()["task"]
    assert (pushed["id"], pushed["contextId"]) == (task_id, run["conversationId"])
    assert pushed["status"]["state"] == "TASK_STATE_COMPLETED"
    assert receiver.calls.empty()
