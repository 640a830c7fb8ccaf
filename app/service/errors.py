"""Why a turn cannot be started or read (or a project or memory item changed): one tree,
mapped by each surface to its own answer.

TurnRefused          base: the message says what to change
├── BadRequest       the request itself is wrong (HTTP 400)
│   ├── ModelUnknown  it names a model the catalog does not list (400 `MODEL_UNKNOWN`)
│   └── TemplateUnusable  its deck template lacks a layout the builder needs
│                         (400 `PPT_TEMPLATE_UNUSABLE`)
├── TooLong          the question is over the limit (413)
├── NotFound         a conversation, run, file, project or memory item not the caller's (404)
├── Conflict         what is stored does not allow it (409)
│   └── Busy         a turn already runs on the conversation
├── Gone             the events after the client's id are no longer kept (410)
├── OverLimit        over a per-user limit; `retry_after` seconds (429)
├── NotAvailable     the agent kind is not run by this service (501)
└── Unavailable      a dependency (database, Redis) is down (503)
    └── Draining     this instance is going away (a deploy): 503 `DRAINING`, `retry_after`
                     seconds; a load balancer retries elsewhere

Beside the tree, the failures of the parts below (`StoreError`, `TaskError` and their
kinds, a file's missing content `BlobNotFound`) reach the surfaces as they are:
`OUTAGES` says what each outage takes down, and a surface that answers in its own
words (A2A's JSON-RPC errors, `/ready`'s checks) names them from here rather than
from `app.store` or `app.tasks`.
"""

from __future__ import annotations

from app.store.base import StoreError as StoreError
from app.store.base import StoreUnavailable as StoreUnavailable
from app.store.blobs import BlobNotFound as BlobNotFound
from app.tasks.base import EventsGone as EventsGone
from app.tasks.base import TaskBackendUnavailable as TaskBackendUnavailable
from app.tasks.base import TaskError as TaskError

OUTAGES: dict[type[Exception], str] = {
    StoreUnavailable: "the database is unavailable",
    TaskBackendUnavailable: "the task backend (Redis) is unavailable",
}
"""A dependency down, from anywhere below the routes: what is unavailable (HTTP 503)."""


class TurnRefused(Exception):
    code: str | None = None
    """A machine-readable reason beside the status, where a client may act on it."""


class BadRequest(TurnRefused):
    pass


class ModelUnknown(BadRequest):
    code = "MODEL_UNKNOWN"


class TemplateUnusable(BadRequest):
    code = "PPT_TEMPLATE_UNUSABLE"


class TooLong(TurnRefused):
    pass


class NotFound(TurnRefused):
    pass


class Conflict(TurnRefused):
    pass


class Busy(Conflict):
    pass


class Gone(TurnRefused):
    pass


class OverLimit(TurnRefused):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NotAvailable(TurnRefused):
    pass


class Unavailable(TurnRefused):
    pass


class Draining(Unavailable):
    code = "DRAINING"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
