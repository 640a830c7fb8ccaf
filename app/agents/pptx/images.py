"""Pictures for the image-with-text slides, from an image-generation provider; off by default.

`ImageMaker` is what the agent needs: a picture for a prompt, or None. One
implementation speaks the OpenAI-compatible images API
(`POST {base}/images/generations`), which OpenAI and many gateways serve. It
asks for `b64_json`; a provider that answers a `url` instead (some gateways
ignore `response_format`) chose where the picture is fetched from, so that
fetch goes through the SSRF guard (app/core/outbound.py): no loopback,
private or metadata address unless `OUTBOUND_ALLOWLIST` names it, within
`OUTBOUND_MAX_BYTES` and `OUTBOUND_TIMEOUT_SECONDS`. Whatever goes wrong (no
answer, an error status, a refused or failed fetch, bytes that are not a
picture) gives None, and the slide keeps the template's
panel: a deck never carries a broken picture. The key travels only in the
Authorization header and never into a log line.
"""

from __future__ import annotations

import base64
import io
import logging
from dataclasses import dataclass
from typing import Protocol

import httpx2
from PIL import Image
from pydantic import SecretStr

from app.config import Settings
from app.core.outbound import OutboundError, OutboundPolicy, fetch, guarded_client

log = logging.getLogger(__name__)


class ImageMaker(Protocol):
    async def draw(self, prompt: str) -> bytes | None:
        """PNG or JPEG bytes for `prompt`, or None when there is no picture to be had."""
        ...


@dataclass(frozen=True, slots=True)
class Downloads:
    """Where and how much a picture the provider names by URL may be fetched."""

    policy: OutboundPolicy
    max_bytes: int
    seconds: float


class OpenAIImages:
    def __init__(
        self,
        client: httpx2.AsyncClient,
        base_url: str,
        api_key: SecretStr,
        model: str,
        downloads: Downloads,
    ) -> None:
        self._client = client
        self._url = base_url.rstrip("/") + "/images/generations"
        self._key = api_key
        self._model = model
        self._downloads = downloads

    async def draw(self, prompt: str) -> bytes | None:
        headers = {}
        if self._key.get_secret_value():
            headers["Authorization"] = f"Bearer {self._key.get_secret_value()}"
        body = {
            "model": self._model,
            "prompt": prompt,
            "n": 1,
            "size": "1024x1024",
            "response_format": "b64_json",
        }
        try:
            response = await self._client.post(self._url, json=body, headers=headers)
        except httpx2.HTTPError as exc:
            log.warning("image generation failed: %s", type(exc).__name__)
            return None
        if response.status_code != 200:
            log.warning("image generation failed: HTTP %s", response.status_code)
            return None
        try:
            answer = response.json()["data"][0]
            if "b64_json" not in answer and isinstance(answer.get("url"), str):
                data = await self._download(answer["url"])
            else:
                data = base64.b64decode(answer["b64_json"], validate=True)
            if data is None:
                return None
            with Image.open(io.BytesIO(data)) as image:
                image.verify()
        # A bad base64 is a ValueError, a missing key a LookupError, not a picture an OSError.
        except (ValueError, LookupError, TypeError, OSError):
            log.warning("image generation answered something that is not a picture")
            return None
        return data

    async def _download(self, url: str) -> bytes | None:
        """The picture at `url`, through the guard; None when refused, failed or too large."""
        limits = self._downloads
        try:
            async with guarded_client(limits.policy, timeout=limits.seconds) as client:
                fetched = await fetch(
                    client, url, max_bytes=limits.max_bytes, seconds=limits.seconds
                )
        except OutboundError as exc:
            log.warning("image generation named a picture that was not fetched: %s", exc)
            return None
        if fetched.truncated:
            log.warning("image generation named a picture larger than %d bytes", limits.max_bytes)
            return None
        return fetched.body


def configured_images(client: httpx2.AsyncClient, settings: Settings) -> ImageMaker | None:
    """The image provider of these settings; None (no pictures) without a base URL."""
    if not settings.pptx_image_base_url:
        return None
    return OpenAIImages(
        client,
        settings.pptx_image_base_url,
        settings.pptx_image_api_key,
        settings.pptx_image_model,
        Downloads(
            OutboundPolicy.parse(settings.outbound_allowlist),
            settings.outbound_max_bytes,
            settings.outbound_timeout_seconds,
        ),
    )
