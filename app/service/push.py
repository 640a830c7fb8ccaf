"""A2A push notifications in the service's terms, for the A2A surface (app/api/a2a/push.py).

A task's configs are stored as `PushConfig` under the task's id (`task_id_of`: a task is
the turn that begins it), and each is called as a webhook is: one signed `Delivery`, to
a URL the outbound guard may refuse (`WebhookRefused`, its reason fit to show the caller).
"""

from __future__ import annotations

from app.store.push_configs import PushConfig as PushConfig
from app.store.push_configs import task_id_of as task_id_of
from app.tasks.webhooks import Delivery as Delivery
from app.tasks.webhooks import WebhookRefused as WebhookRefused
