"""The settings that hold lists in one string, parsed: API keys, CORS origins, Sentinels."""

from __future__ import annotations

import hashlib
import re

HASHED_KEY = "sha256:"
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")


def key_digest(key: str) -> str:
    """How API keys are held and compared: the SHA-256 of the key, in hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def user_by_key(api_keys: str) -> dict[str, str]:
    """Parse API_KEYS into the SHA-256 (hex) of each key -> user; empty means auth is off.

    A key is listed as itself (`key:alice`) or as its SHA-256
    (`sha256:<hex>:alice`, what `printf %s key | sha256sum` prints), so a
    configuration need not hold the keys it accepts (a malformed one is a
    `ValueError`, raised when the app is built). Only digests are
    kept, and a caller's key is hashed before it is compared: every
    comparison is of two equally long strings, in constant time.
    """
    pairs: dict[str, str] = {}
    for number, item in enumerate(api_keys.split(","), 1):
        item = item.strip()
        if item.startswith(HASHED_KEY):
            digest, _, user = item.removeprefix(HASHED_KEY).partition(":")
            digest = digest.strip().lower()
            if not (_SHA256_HEX.fullmatch(digest) and user.strip()):
                # Said by position, not shown: the entry may be a key with a typo.
                raise ValueError(f"API_KEYS entry {number} must be sha256:<64 hex digits>:user")
        else:
            key, sep, user = item.partition(":")
            digest = key_digest(key.strip()) if key.strip() and sep else ""
        if digest and user.strip():
            pairs[digest] = user.strip()
    return pairs


def listed_origins(cors_origins: str) -> list[str]:
    """CORS_ORIGINS as a list, as given (`*` included)."""
    return [o.strip() for o in cors_origins.split(",") if o.strip()]


def sentinel_addresses(listed: str) -> list[tuple[str, int]]:
    """REDIS_SENTINELS as (host, port) pairs; `[::1]:26379` for an IPv6 address."""
    addresses = []
    for item in filter(None, (part.strip() for part in listed.split(","))):
        host, _, port = item.rpartition(":")
        if not (host and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"REDIS_SENTINELS entry {item!r} must be host:port")
        addresses.append((host.removeprefix("[").removesuffix("]"), int(port)))
    return addresses
