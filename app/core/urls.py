"""URLs as logs and errors may show them, and as a client outside the service needs them."""

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


def absolute(url: str, base_url: str) -> str:
    """Our download URLs are relative to the service; a remote client needs them whole."""
    if url.startswith("/"):
        return base_url.rstrip("/") + url
    return url
