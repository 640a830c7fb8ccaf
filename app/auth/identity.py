"""Who is calling, however they proved it: `Authenticator.identify` -> `Caller`.

Ways in, first match wins:

1. the sign-in proxy's header (`AUTH_TRUSTED_HEADER`), from a trusted address only,
   with the groups it lists (`AUTH_TRUSTED_GROUPS_HEADER`);
2. a bearer token (or `?access_token=` on streams, as `EventSource` cannot send
   headers), which is one of `API_KEYS`, a key a user made (`dk_…`,
   app/store/auth_keys.py) or an OIDC access token (a JWT, app/auth/oidc.py).

With none of `API_KEYS`, `OIDC_ISSUER` and `AUTH_TRUSTED_HEADER` set, there is
no authentication: everyone is the one local user, whose history everyone
shares, but limits count per client address, so one busy client does not
hold back the others.

Raises `NotAuthenticated` (401) and `IssuerUnreachable` (503), errors.py.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.auth.errors import InvalidToken, NotAuthenticated
from app.auth.proxy import TrustedHeader
from app.config import key_digest
from app.store.auth_keys import SqlAuthKeys, looks_like_made_key

if TYPE_CHECKING:
    from app.auth.oidc import OidcVerifier

log = logging.getLogger(__name__)

LOCAL_USER = "local"
GROUP = "group:"


@dataclass(frozen=True, slots=True)
class Caller:
    user: str
    """Whose conversations, files and runs these are."""
    limit_key: str
    """Whose limits a request counts against: the user, or, without authentication, the
    client's address."""
    admin: bool = False


@dataclass(frozen=True, slots=True)
class Admins:
    users: frozenset[str]
    groups: frozenset[str]

    @classmethod
    def parse(cls, listed: str) -> Admins:
        """`ADMIN_USERS`: user ids and `group:<name>`, comma-separated."""
        items = [item.strip() for item in listed.split(",") if item.strip()]
        return cls(
            frozenset(i for i in items if not i.startswith(GROUP)),
            frozenset(i.removeprefix(GROUP) for i in items if i.startswith(GROUP)),
        )

    def includes(self, user: str, groups: frozenset[str] = frozenset()) -> bool:
        return user in self.users or bool(groups & self.groups)


class Authenticator:
    def __init__(
        self,
        *,
        keys: dict[str, str],
        made_keys: SqlAuthKeys,
        oidc: OidcVerifier | None,
        trusted: TrustedHeader | None,
        admins: Admins,
    ) -> None:
        self._keys = keys
        self._made_keys = made_keys
        self.oidc = oidc
        self.trusted = trusted
        self._admins = admins

    @property
    def enabled(self) -> bool:
        return bool(self._keys or self.oidc or self.trusted)

    @property
    def schemes(self) -> list[str]:
        """The ways in that are on, as the agent card tells them: `apiKey`, `oidc`, `proxy`."""
        on = ["apiKey"] if self.enabled else []
        if self.oidc is not None:
            on.append("oidc")
        if self.trusted is not None:
            on.append("proxy")
        return on

    async def identify(self, token: str, headers: Mapping[str, str], peer: str | None) -> Caller:
        """`headers`: the request's, where a sign-in proxy names the user (case-insensitive)."""
        if not self.enabled:
            return Caller(LOCAL_USER, f"address:{peer or 'unknown'}")
        if self.trusted is not None:
            proxied = self.trusted.user(headers, peer)
            if proxied is not None:
                return self._caller(proxied.user, proxied.groups)
        if not token:
            raise NotAuthenticated("A valid API key is required", invalid=False)
        user = self._listed_key(token)
        if user is None and looks_like_made_key(token):
            user = await self._made_keys.owner(token)
        if user is not None:
            return self._caller(user)
        if self.oidc is not None and token.count(".") == 2:
            try:
                found = await self.oidc.identify(token)
            except InvalidToken as exc:
                log.info("a bearer token was refused: %s", exc)
            else:
                return self._caller(found.user, found.groups)
        raise NotAuthenticated("The API key or token is invalid or expired", invalid=True)

    def _listed_key(self, token: str) -> str | None:
        """Hashed and compared with every digest, in constant time and without stopping at a
        match, so timing tells nothing about any key."""
        digest = key_digest(token)
        user = None
        for known, owner in self._keys.items():
            if hmac.compare_digest(known, digest):
                user = owner
        return user

    def _caller(self, user: str, groups: frozenset[str] = frozenset()) -> Caller:
        return Caller(user, user, self._admins.includes(user, groups))
