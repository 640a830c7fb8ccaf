"""The A2A surface in the service's terms (app/api/a2a/), imported with it only.

A task's question is its message's text parts (`text_of`). A task's push configs are
stored as `PushConfig` under the task's id (`task_id_of`: a task is the turn that
begins it), and each is called as a webhook is: one signed `Delivery`, to a URL the
outbound guard may refuse (`WebhookRefused`, its reason fit to show the caller).
"""

from __future__ import annotations

from app.store.push_configs import PushConfig as PushConfig
from app.store.push_configs import task_id_of as task_id_of
from app.tasks.webhooks import Delivery as Delivery
from app.tasks.webhooks import WebhookRefused as WebhookRefused
from app.tools.a2a_parts import text_of as text_of
