"""Identity: API keys, keys users make, OIDC tokens and a sign-in proxy, as one `Caller`.

`build_authenticator` wires the parts the settings turn on; the API's
dependency (app/api/auth.py) asks it who each request is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from app.auth.errors import IssuerUnreachable, NotAuthenticated
from app.auth.identity import LOCAL_USER, Admins, Authenticator, Caller
from app.auth.proxy import TrustedHeader
from app.config import Settings
from app.core.outbound import OutboundPolicy
from app.store.auth_keys import SqlAuthKeys

__all__ = [
    "LOCAL_USER",
    "Authenticator",
    "Caller",
    "IssuerUnreachable",
    "NotAuthenticated",
    "check_settings",
    "open_authenticator",
]


def check_settings(settings: Settings) -> None:
    """Refuse, when the app is built, sign-in settings that could only fail later.

    Raises `ValueError` naming the setting.
    """
    if settings.oidc_issuer:
        if urlsplit(settings.oidc_issuer).scheme not in ("http", "https"):
            raise ValueError("OIDC_ISSUER must be an http(s) URL")
        if not (settings.oidc_audience or settings.oidc_client_id):
            raise ValueError("OIDC_ISSUER needs OIDC_AUDIENCE (or OIDC_CLIENT_ID) to check `aud`")
    if settings.auth_trusted_groups_header and not settings.auth_trusted_header:
        raise ValueError("AUTH_TRUSTED_GROUPS_HEADER needs AUTH_TRUSTED_HEADER: groups of whom?")
    if settings.auth_trusted_header:
        if not settings.auth_trusted_proxies.strip():
            raise ValueError("AUTH_TRUSTED_HEADER needs AUTH_TRUSTED_PROXIES: the proxies' CIDRs")
        try:
            TrustedHeader(settings.auth_trusted_header, settings.auth_trusted_proxies)
        except ValueError as exc:
            raise ValueError(f"AUTH_TRUSTED_PROXIES: {exc}") from exc


@asynccontextmanager
async def open_authenticator(
    settings: Settings, made_keys: SqlAuthKeys
) -> AsyncIterator[Authenticator]:
    oidc = None
    if settings.oidc_issuer:
        from app.auth.oidc import OidcSettings, OidcVerifier  # only then: PyJWT is 0.1 s

        oidc = OidcVerifier(
            OidcSettings.from_settings(settings),
            OutboundPolicy.parse(settings.outbound_allowlist),
            settings.outbound_timeout_seconds,
        )
    trusted = None
    if settings.auth_trusted_header:
        trusted = TrustedHeader(
            settings.auth_trusted_header,
            settings.auth_trusted_proxies,
            settings.auth_trusted_groups_header,
        )
    try:
        yield Authenticator(
            keys=settings.user_by_key(),
            made_keys=made_keys,
            oidc=oidc,
            trusted=trusted,
            admins=Admins.parse(settings.admin_users),
        )
    finally:
        if oidc is not None:
            await oidc.close()
