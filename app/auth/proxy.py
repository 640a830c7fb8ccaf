"""A sign-in proxy in front (oauth2-proxy, Authelia, Cloudflare Access) names the user in a header.

The header is believed only from the proxies listed in
`AUTH_TRUSTED_PROXIES`: anyone else could send it too. The address judged is
the one the app sees, after uvicorn's own proxy headers (`FORWARDED_ALLOW_IPS`)
are applied: a sign-in proxy that also sends `X-Forwarded-For` and is in
`FORWARDED_ALLOW_IPS` would be seen as its user's address, so it is left out of
that list (docs/operate/sign-in.md, "Behind a sign-in proxy").

From an address not listed, the header is ignored and the request goes on
as one without it; that is logged once per address, since a misconfigured
proxy would otherwise fill the log with one line per request.

The proxy may also list the user's groups in a header of their own
(`AUTH_TRUSTED_GROUPS_HEADER`: oauth2-proxy's `X-Forwarded-Groups`,
Authelia's `Remote-Groups`), comma-separated, which `ADMIN_USERS`'
`group:<name>` matches. They are believed only with the user's header from
a trusted proxy: alone, or from anyone else, they count for nothing.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

_MAX_WARNED = 1024
"""Addresses remembered as already warned about; past it, no more are added."""


@dataclass(frozen=True, slots=True)
class ProxiedUser:
    user: str
    groups: frozenset[str]


class TrustedHeader:
    def __init__(self, header: str, proxies: str, groups_header: str = "") -> None:
        self.header = header.strip().lower()
        self.groups_header = groups_header.strip().lower()
        self._networks = tuple(
            ipaddress.ip_network(item.strip(), strict=False)
            for item in proxies.split(",")
            if item.strip()
        )
        self._warned: set[str] = set()

    def user(self, headers: Mapping[str, str], peer: str | None) -> ProxiedUser | None:
        """The user the headers name, with their groups, when from a trusted proxy; else None."""
        value = headers.get(self.header)
        if value is None or not value.strip():
            return None
        if peer is not None and self._trusted(peer):
            listed = headers.get(self.groups_header, "") if self.groups_header else ""
            groups = frozenset(g.strip() for g in listed.split(",") if g.strip())
            return ProxiedUser(value.strip(), groups)
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
