"""A2A push notifications: a task's configs, and the call made to each when its run ends.

A client sets configs on a task (CreateTaskPushNotificationConfig, or the
`taskPushNotificationConfig` of the message that starts it); they are stored
(`app/store/push_configs.py`), so the instance that runs the task reads them
when the run ends, whichever instance they were set on. That instance posts
the task as it is then stored (an A2A `StreamResponse` with `task`: the final
state, or `input-required` when it waits for the client) to every config.

The call is a webhook's (`app/tasks/webhooks.py`): signed with
`WEBHOOK_SECRET` (`X-Webhook-Timestamp`, `X-Webhook-Signature`,
`X-Webhook-Id`), retried, through the outbound guard; with A2A's own
`X-A2A-Notification-Token` (the config's `token`) and `Authorization`
(its `authentication`). Without `WEBHOOK_SECRET` push notifications are off,
as webhooks are, and the card says so.

Scheduled runs are watched too (`scheduled_runs`): a run of a schedule
starts with no client, so a receiver sets its config on the run's task once
it runs (its id is `<conversationId>.<turnId>`, both in the schedule's runs,
or found by `ListTasks` with the conversation as `contextId`), and is told
how it ended.

Left out: a notification for each intermediate update (a client that wants
them streams or subscribes), and runs started on our other surfaces (a task
begun there notifies once an A2A message continues it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson
from a2a.types.a2a_pb2 import StreamResponse, TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError, PushNotificationNotSupportedError
from google.protobuf.json_format import MessageToDict

from app.api.a2a.mapping import TaskRef, stored_task, task_turns
from app.service.a2a import Delivery, PushConfig, WebhookRefused

if TYPE_CHECKING:
    from app.store.base import TurnStore
    from app.store.push_configs import SqlPushConfigs
    from app.tasks.runs import Run
    from app.tasks.webhooks import Webhooks

TOKEN_HEADER = "X-A2A-Notification-Token"
_MAX_ID_CHARS = 64


class PushNotifications:
    def __init__(self, configs: SqlPushConfigs, webhooks: Webhooks, store: TurnStore) -> None:
        self._configs = configs
        self._webhooks = webhooks
        self._store = store

    @property
    def enabled(self) -> bool:
        return self._webhooks.enabled

    async def checked(self, config: TaskPushNotificationConfig) -> None:
        """Refuse a config before anything is stored or started: push off, or a bad URL."""
        if not self.enabled:
            raise PushNotificationNotSupportedError(
                "Push notifications are off on this service (no WEBHOOK_SECRET)"
            )
        if len(config.id) > _MAX_ID_CHARS:
            raise InvalidParamsError(f"A config id is at most {_MAX_ID_CHARS} characters")
        try:
            await self._webhooks.check(config.url)
        except WebhookRefused as exc:
            raise InvalidParamsError(f"Push notification URL refused: {exc}") from exc

    async def put(
        self, user: str, ref: TaskRef, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        """Store a checked config on the task; the config as stored (with its id)."""
        stored = PushConfig(
            task_id=ref.task_id,
            config_id=config.id or uuid.uuid4().hex,
            url=config.url,
            token=config.token or None,
            auth_scheme=config.authentication.scheme or None,
            auth_credentials=config.authentication.credentials or None,
        )
        await self._configs.put(user, ref.conversation_id, stored)
        return _config(stored)

    async def of_task(self, user: str, ref: TaskRef) -> list[TaskPushNotificationConfig]:
        return [_config(config) for config in await self._configs.of_task(user, ref.task_id)]

    async def delete(self, user: str, ref: TaskRef, config_id: str) -> bool:
        return await self._configs.delete(user, ref.task_id, config_id)

    def watch(self, run: Run, user: str, ref: TaskRef, base_url: str) -> None:
        """When the run has ended, tell the task's configs (read then) how it stands."""
        if not self.enabled:
            return

        async def deliveries() -> list[Delivery]:
            configs = await self._configs.of_task(user, ref.task_id)
            if not configs:
                return []
            turns = await self._store.get_conversation(user, ref.conversation_id)
            rows = task_turns(turns, ref.row_id)
            if not rows:
                return []
            task = stored_task(rows, ref, base_url)
            body = orjson.dumps(MessageToDict(StreamResponse(task=task)))
            return [Delivery(c.url, body, run.claim.task_id, _headers(c)) for c in configs]

        self._webhooks.after(run, deliveries)


def scheduled_runs(push: PushNotifications, base_url: str) -> Callable[[Run, str, str], None]:
    """What tells a scheduled run's task configs of its end: given each run as it starts,
    with its owner and conversation. `base_url` (`A2A_PUBLIC_URL`) makes its artifacts'
    URLs absolute; empty, they stay relative, as no request names the host."""

    def watch(run: Run, user: str, conversation_id: str) -> None:
        if run.row_id is not None:
            push.watch(run, user, TaskRef(conversation_id, run.row_id), base_url)

    return watch


def _headers(config: PushConfig) -> dict[str, str]:
    headers: dict[str, str] = {}
    if config.token:
        headers[TOKEN_HEADER] = config.token
    if config.auth_scheme and config.auth_credentials:
        headers["Authorization"] = f"{config.auth_scheme} {config.auth_credentials}"
    return headers


def _config(config: PushConfig) -> TaskPushNotificationConfig:
    out = TaskPushNotificationConfig(
        id=config.config_id, task_id=config.task_id, url=config.url, token=config.token or ""
    )
    if config.auth_scheme:
        out.authentication.scheme = config.auth_scheme
        out.authentication.credentials = config.auth_credentials or ""
    return out
