"""URLs as logs and errors may show them."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def public_url(url: str) -> str:
    """`url` fit to show: any query string (Gemini's old `?key=`) and user info dropped."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
