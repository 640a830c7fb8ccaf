"""A sign-in proxy in front (oauth2-proxy, Authelia, Cloudflare Access) names the user in a header.

The header is believed only from the proxies listed in
`AUTH_TRUSTED_PROXIES`: anyone else could send it too. The address judged is
the one the app sees, after uvicorn's own proxy headers (`FORWARDED_ALLOW_IPS`)
are applied: a sign-in proxy that also sends `X-Forwarded-For` and is in
`FORWARDED_ALLOW_IPS` would be seen as its user's address, so it is left out of
that list (README: Signing in through a proxy).

From an address not listed, the header is ignored and the request goes on
as one without it; that is logged once per address, since a misconfigured
proxy would otherwise fill the log with one line per request.
"""

from __future__ import annotations

import ipaddress
import logging

log = logging.getLogger(__name__)

_MAX_WARNED = 1024
"""Addresses remembered as already warned about; past it, no more are added."""


class TrustedHeader:
    def __init__(self, header: str, proxies: str) -> None:
        self.header = header.strip().lower()
        self._networks = tuple(
            ipaddress.ip_network(item.strip(), strict=False)
            for item in proxies.split(",")
            if item.strip()
        )
        self._warned: set[str] = set()

    def user(self, value: str | None, peer: str | None) -> str | None:
        """The user the header names, when it came from a trusted proxy; else None."""
        if value is None or not value.strip():
            return None
        if peer is not None and self._trusted(peer):
            return value.strip()
        where = peer or "an unknown address"
        if where not in self._warned and len(self._warned) < _MAX_WARNED:
            self._warned.add(where)
            log.warning(
                "%s from %s is ignored: that address is not in AUTH_TRUSTED_PROXIES",
                self.header,
                where,
            )
        return None

    def _trusted(self, peer: str) -> bool:
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self._networks)
