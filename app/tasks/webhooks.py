"""Telling a caller's server that a turn ended: one signed POST, retried, never in the run's way.

A stream request may name a `webhook` URL (else `WEBHOOK_URL` applies). When
the turn has ended (stored, claim released) the instance that ran it posts
one JSON body to it, from a task of its own, so a slow or failing receiver
never delays the stream's `complete`. Only that instance knows the run ends,
so a turn is announced once however many instances serve the conversation.

The receiver checks the call with the shared `WEBHOOK_SECRET`:

    X-Webhook-Timestamp: <unix seconds>
    X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">
    X-Webhook-Id: <the turn's task id, the same on every retry>

The timestamp is inside the signature, so a captured call cannot be replayed
later with a new one; receivers refuse old timestamps and ids already seen.
A failed call (no answer, or not 2xx) is tried again after
`WEBHOOK_RETRY_SECONDS`, doubling, up to `WEBHOOK_MAX_ATTEMPTS` tries.

The URL is one a user chose, so it goes through the outbound guard: checked
when the request comes (a refused one answers 400 before the stream), and
again on every connection (a DNS answer that changed since is refused there).

    WebhookRefused   the URL may not be called (shown to the caller as a 400)

A2A push notifications (`app/api/a2a/push.py`) are made the same way:
`after(run, …)` names the calls once the run has ended, each a `Delivery`
with the receiver's own headers beside the signature.

Left out: delivery that outlives the instance (a call still pending at
shutdown is dropped, and logged).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx2
import orjson

from app.config import Settings
from app.core.outbound import (
    BlockedDestination,
    OutboundError,
    OutboundPolicy,
    Unresolvable,
    allowed_address,
    guarded_client,
)
from app.tasks.runs import Run

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Webhook-Signature"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"
ID_HEADER = "X-Webhook-Id"
_RESOLVE_SECONDS = 5.0


class WebhookRefused(Exception):
    """`str()` says why, fit to show the caller."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One signed POST: a JSON body, and the headers the receiver asked for beside ours."""

    url: str
    body: bytes
    delivery_id: str
    """`X-Webhook-Id`: the same on every retry, for the receiver to drop repeats."""
    headers: dict[str, str] = field(default_factory=dict)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value for a body sent at `timestamp`."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


class Webhooks:
    """Built once in the lifespan; `close()` at shutdown drops what is still pending."""

    def __init__(self, settings: Settings) -> None:
        self._policy = OutboundPolicy.parse(settings.outbound_allowlist)
        self._secret = settings.webhook_secret.get_secret_value()
        self._default = settings.webhook_url.strip()
        self._attempts = settings.webhook_max_attempts
        self._first_delay = settings.webhook_retry_seconds
        self._client = guarded_client(
            self._policy, timeout=settings.webhook_timeout_seconds, max_redirects=0
        )
        self._pending: set[asyncio.Task[None]] = set()
        if self._default and not self._secret:
            log.warning("WEBHOOK_URL is set but WEBHOOK_SECRET is not: no webhook is called")

    async def target(self, requested: str | None) -> str | None:
        """The URL to call when this request's turn ends, or None.

        A URL the request names must be callable now: raises `WebhookRefused`.
        """
        if not requested:
            return self._default if self._secret else None
        if not self._secret:
            raise WebhookRefused("webhooks are not enabled on this service (no WEBHOOK_SECRET)")
        await self.check(requested)
        return requested

    @property
    def enabled(self) -> bool:
        """Whether calls can be signed (`WEBHOOK_SECRET`): no call goes out unsigned."""
        return bool(self._secret)

    def notify(self, run: Run, url: str) -> None:
        """Call `url` once the run has ended, in the background."""
        self.after(run, lambda: self._turn_ended(run, url))

    def after(self, run: Run, deliveries: Callable[[], Awaitable[Sequence[Delivery]]]) -> None:
        """Once the run has ended, make the calls `deliveries` then names, in the background."""
        task = asyncio.create_task(
            self._after(run, deliveries), name=f"webhook-{run.claim.task_id}"
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def close(self) -> None:
        if self._pending:
            log.warning("dropping %d webhook call(s) still pending at shutdown", len(self._pending))
        for task in self._pending:
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
        await self._client.aclose()

    async def check(self, url: str) -> None:
        """Raises `WebhookRefused` unless `url` is http(s) and may be called now."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebhookRefused("webhook must be an http or https URL with a host")
        host = parts.hostname
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            await allowed_address(self._policy, host, port, _RESOLVE_SECONDS)
        except Unresolvable as exc:
            raise WebhookRefused(f"webhook host {host} could not be resolved") from exc
        except BlockedDestination as exc:
            raise WebhookRefused(
                f"webhook host {host} is a private, local or metadata address;"
                " OUTBOUND_ALLOWLIST must name it"
            ) from exc

    async def _after(
        self, run: Run, deliveries: Callable[[], Awaitable[Sequence[Delivery]]]
    ) -> None:
        await run.ended.wait()
        if run.moved:
            return  # it goes on at another instance, which makes the calls when it ends
        try:
            calls = await deliveries()
        except Exception:
            log.exception("the calls for run %s could not be made", run.claim.task_id)
            return
        await asyncio.gather(*(self._deliver(call) for call in calls))

    async def _turn_ended(self, run: Run, url: str) -> list[Delivery]:
        claim = run.claim
        body = orjson.dumps(
            {
                "conversationId": claim.conversation_id,
                "sessionId": run.row_id,
                "taskId": claim.task_id,
                "agentType": claim.agent_type,
                "status": run.complete.status if run.complete is not None else "failed",
                "history": f"/session/{claim.conversation_id}",
                "finishedAt": datetime.now(UTC).isoformat(),
            }
        )
        return [Delivery(url, body, claim.task_id)]

    async def _deliver(self, call: Delivery) -> None:
        url, body, delivery_id = call.url, call.body, call.delivery_id
        delay = self._first_delay
        for attempt in range(1, self._attempts + 1):
            timestamp = str(int(time.time()))
            headers = {
                **call.headers,
                "Content-Type": "application/json",
                TIMESTAMP_HEADER: timestamp,
                SIGNATURE_HEADER: sign(self._secret, timestamp, body),
                ID_HEADER: delivery_id,
            }
            outcome = ""
            try:
                response = await self._client.post(url, content=body, headers=headers)
                if response.is_success:
                    return
                outcome = f"HTTP {response.status_code}"
            except OutboundError as exc:
                # Refused at connect time (the name resolves elsewhere now): no retry helps.
                log.warning("webhook for run %s refused: %s", delivery_id, exc)
                return
            except httpx2.HTTPError as exc:
                outcome = type(exc).__name__
            if attempt == self._attempts:
                log.warning(
                    "webhook %s for run %s given up after %d tries (%s)",
                    urlsplit(url).hostname,
                    delivery_id,
                    attempt,
                    outcome,
                )
                return
            await asyncio.sleep(delay)
            delay *= 2
