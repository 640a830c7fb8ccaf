"""OpenID Connect access tokens: a JWT signed by the issuer's keys, checked offline.

The issuer's discovery document names its JWKS; both are fetched through
the outbound guard (an identity provider on the intranet needs
`OUTBOUND_ALLOWLIST`, as any other chosen URL does) and kept. A token
whose `kid` is not among the kept keys makes the JWKS be read again, the
provider may have rotated them, but at most once per
`OIDC_JWKS_REFRESH_SECONDS`, so a flood of made-up `kid`s cannot turn us
into a client hammering the provider.

The algorithm a token may use is its key's: the JWK's `alg`, or the one its
type and curve imply. `none` and the HMAC family are never accepted, so a
token "signed" with the public key as an HMAC secret is refused whatever
its header claims.

Raises `InvalidToken` (bad signature, expired, not yet valid, wrong iss or aud,
unknown key: 401) and `IssuerUnreachable` (discovery or JWKS could not be
read: 503), from errors.py. Imported only when `OIDC_ISSUER` is set: PyJWT and
the crypto it loads cost a worker 0.1 s at start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import jwt
from jwt.exceptions import InvalidTokenError, PyJWKError

from app.auth.errors import InvalidToken, IssuerUnreachable
from app.config import SettingsPart
from app.core.outbound import OutboundError, OutboundPolicy, fetch, guarded_client

log = logging.getLogger(__name__)

LEEWAY_SECONDS = 30
"""Clock skew allowed between the provider and us on `exp`, `nbf` and `iat`."""
JWKS_MAX_AGE_SECONDS = 3600.0
"""Kept keys are read again after this long, so a key the provider withdrew stops working."""
_MAX_DOCUMENT_BYTES = 512 * 1024
_ALGORITHMS_BY_CURVE = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512", "Ed25519": "EdDSA"}
_ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class OidcSettings(SettingsPart, prefix="oidc_"):
    issuer: str
    audience: str
    client_id: str
    user_claim: str
    groups_claim: str
    jwks_refresh_seconds: float


@dataclass(frozen=True, slots=True)
class TokenIdentity:
    user: str
    groups: frozenset[str]


@dataclass(frozen=True, slots=True)
class PageEndpoints:
    authorization: str
    token: str
    end_session: str | None


@dataclass(frozen=True, slots=True)
class _Key:
    key: Any
    algorithm: str


def key_algorithm(jwk: Mapping[str, Any]) -> str | None:
    """The one algorithm a JWK may verify: its `alg`, or what its type implies; None: unusable."""
    named = jwk.get("alg")
    if isinstance(named, str):
        return named if named in _ASYMMETRIC else None
    kty = jwk.get("kty")
    if kty == "RSA":
        return "RS256"
    if kty in ("EC", "OKP"):
        return _ALGORITHMS_BY_CURVE.get(str(jwk.get("crv")))
    return None


class OidcVerifier:
    def __init__(self, settings: OidcSettings, policy: OutboundPolicy, timeout: float) -> None:
        self._settings = settings
        self._issuer = settings.issuer.rstrip("/")
        # Never empty: `check_settings` refuses an issuer without either.
        self._audience = settings.audience or settings.client_id
        self._client = guarded_client(policy, timeout=timeout)
        self._timeout = timeout
        self._keys: dict[str, _Key] = {}
        self._read_at = -float("inf")
        self._discovery: dict[str, Any] | None = None
        self._lock = asyncio.Lock()

    @property
    def issuer(self) -> str:
        return self._issuer

    async def endpoints(self) -> PageEndpoints:
        """Where the chat page sends its user to sign in and trades the code (discovery)."""
        discovery = await self._read_discovery()
        return PageEndpoints(
            authorization=str(discovery.get("authorization_endpoint", "")),
            token=str(discovery.get("token_endpoint", "")),
            end_session=str(discovery.get("end_session_endpoint", "")) or None,
        )

    async def close(self) -> None:
        await self._client.aclose()

    async def identify(self, token: str) -> TokenIdentity:
        try:
            header = jwt.get_unverified_header(token)
        except InvalidTokenError as exc:
            raise InvalidToken(f"not a JWT: {exc}") from exc
        kid = str(header.get("kid", ""))
        key = await self._key(kid)
        if header.get("alg") != key.algorithm:
            raise InvalidToken(f"alg {header.get('alg')!r} is not the key's {key.algorithm}")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[key.algorithm],
                audience=self._audience,
                issuer=self._issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except InvalidTokenError as exc:
            raise InvalidToken(str(exc)) from exc
        if claims.get("typ") == "ID":
            # Keycloak marks its ID tokens so: they say who signed in to the page, and are
            # handed around more than access tokens; they are no credential for the API.
            raise InvalidToken("an ID token, not an access token")
        user = claims.get(self._settings.user_claim)
        if not isinstance(user, str) or not user.strip():
            raise InvalidToken(f"no {self._settings.user_claim!r} claim")
        return TokenIdentity(user.strip(), _groups(claims.get(self._settings.groups_claim)))

    async def _key(self, kid: str) -> _Key:
        stale = time.monotonic() - self._read_at > JWKS_MAX_AGE_SECONDS
        if stale or self._find(kid) is None:
            async with self._lock:
                # Another request may have read them meanwhile.
                since = time.monotonic() - self._read_at
                if since > JWKS_MAX_AGE_SECONDS or (
                    self._find(kid) is None and since >= self._settings.jwks_refresh_seconds
                ):
                    await self._read_keys()
        found = self._find(kid)
        if found is None:
            raise InvalidToken(f"no key {kid!r} in the issuer's JWKS")
        return found

    def _find(self, kid: str) -> _Key | None:
        if not kid and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid) if kid else None

    async def _read_discovery(self) -> dict[str, Any]:
        if self._discovery is None:
            discovery = await self._json(f"{self._issuer}/.well-known/openid-configuration")
            if str(discovery.get("issuer", "")).rstrip("/") != self._issuer:
                raise IssuerUnreachable("the discovery document names another issuer")
            self._discovery = discovery
        return self._discovery

    async def _read_keys(self) -> None:
        discovery = await self._read_discovery()
        document = await self._json(str(discovery.get("jwks_uri", "")))
        keys: dict[str, _Key] = {}
        for jwk in document.get("keys", []):
            if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
                continue
            algorithm = key_algorithm(jwk)
            if algorithm is None:
                continue
            try:
                key = jwt.PyJWK(jwk, algorithm).key
            except PyJWKError:
                log.warning("a key of the issuer's JWKS could not be read; it is skipped")
                continue
            keys[str(jwk.get("kid", ""))] = _Key(key, algorithm)
        self._keys = keys
        self._read_at = time.monotonic()

    async def _json(self, url: str) -> dict[str, Any]:
        try:
            fetched = await fetch(
                self._client, url, max_bytes=_MAX_DOCUMENT_BYTES, seconds=self._timeout
            )
            document = json.loads(fetched.body)
        except (OutboundError, httpx2.HTTPError, ValueError) as exc:
            log.warning("the identity provider could not be read (%s): %s", url, exc)
            raise IssuerUnreachable("the identity provider could not be reached") from exc
        if not isinstance(document, dict):
            raise IssuerUnreachable("the identity provider answered no JSON object")
        return document


def _groups(value: object) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list):
        return frozenset(str(each) for each in value)
    return frozenset()
