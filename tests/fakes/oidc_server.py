"""A local OpenID Connect provider: discovery, JWKS, authorize and token, with its own keys.

    async with FakeIdentityProvider(audience="dodo").running() as idp:
        token = idp.mint("alice")                     # a valid access token for alice
        idp.mint("alice", exp_in=-120)                # expired
        idp.rotate()                                  # a new signing key: tokens name a new kid
        idp.sign_in_as = "bob"                        # who /authorize approves next

It speaks what a browser's sign-in and our verifier use of a real provider
(Keycloak, Auth0, Authentik): the discovery document at
`/.well-known/openid-configuration`, `jwks_uri`, the authorization-code flow
with PKCE (S256 only, the verifier checked at `/token`), refresh tokens, and
`end_session_endpoint`. Every JWKS read is counted, to see refetches.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.support.server import serve


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )

    def jwk(self) -> dict[str, Any]:
        public: dict[str, Any] = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {**public, "kid": self.kid, "use": "sig", "alg": "RS256"}


@dataclass
class _Grant:
    user: str
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str | None


@dataclass
class FakeIdentityProvider:
    audience: str = "dodo"
    client_id: str = "dodo"
    token_seconds: int = 300
    groups: dict[str, list[str]] = field(default_factory=dict)
    """Each user's groups, put in tokens' `groups` claim."""
    sign_in_as: str = "alice"
    """Who `/authorize` approves without asking."""
    keys: list[SigningKey] = field(default_factory=lambda: [SigningKey("key-1")])
    jwks_reads: int = 0
    token_requests: list[dict[str, str]] = field(default_factory=list)
    base_url: str = ""
    _grants: dict[str, _Grant] = field(default_factory=dict)
    _refresh: dict[str, str] = field(default_factory=dict)

    @property
    def issuer(self) -> str:
        return f"{self.base_url}/realms/test"

    def rotate(self) -> SigningKey:
        """A new signing key, published beside the old ones; tokens are signed with it."""
        key = SigningKey(f"key-{len(self.keys) + 1}")
        self.keys.append(key)
        return key

    def mint(
        self,
        user: str,
        *,
        exp_in: int | None = None,
        audience: str | None = None,
        issuer: str | None = None,
        key: SigningKey | None = None,
        kid: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """An access token signed with the newest key (or `key`), as the provider issues them."""
        now = int(time.time())
        signer = key or self.keys[-1]
        claims: dict[str, Any] = {
            "iss": issuer or self.issuer,
            "aud": audience or self.audience,
            "sub": user,
            "preferred_username": user,
            "groups": self.groups.get(user, []),
            "iat": now,
            "nbf": now,
            "exp": now + (self.token_seconds if exp_in is None else exp_in),
            "jti": uuid.uuid4().hex,
            **(extra or {}),
        }
        return jwt.encode(
            claims, signer.private, algorithm="RS256", headers={"kid": kid or signer.kid}
        )

    def forged_unsigned(self, user: str) -> str:
        """A token with `alg: none` and no signature, naming a real kid."""
        header = {"alg": "none", "typ": "JWT", "kid": self.keys[-1].kid}
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.audience, "sub": user, "exp": now + 300}
        return f"{_b64json(header)}.{_b64json(claims)}."

    def forged_hmac(self, user: str) -> str:
        """HS256 "signed" with the public key's PEM as the secret: the classic confusion."""
        public_pem = (
            self.keys[-1]
            .private.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        header = {"alg": "HS256", "typ": "JWT", "kid": self.keys[-1].kid}
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.audience, "sub": user, "exp": now + 300}
        signing_input = f"{_b64json(header)}.{_b64json(claims)}"
        signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(signature)}"

    def app(self) -> Starlette:
        prefix = "/realms/test"
        return Starlette(
            routes=[
                Route(f"{prefix}/.well-known/openid-configuration", self._discovery),
                Route(f"{prefix}/certs", self._jwks),
                Route(f"{prefix}/auth", self._authorize),
                Route(f"{prefix}/token", self._token, methods=["POST", "OPTIONS"]),
                Route(f"{prefix}/logout", self._logout),
            ]
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FakeIdentityProvider]:
        async with serve(self.app(), lifespan="off") as url:
            self.base_url = url
            yield self

    async def _discovery(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/auth",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/certs",
                "end_session_endpoint": f"{self.issuer}/logout",
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "id_token_signing_alg_values_supported": ["RS256"],
            },
            headers=_CORS,
        )

    async def _jwks(self, request: Request) -> Response:
        self.jwks_reads += 1
        return JSONResponse({"keys": [key.jwk() for key in self.keys]}, headers=_CORS)

    async def _authorize(self, request: Request) -> Response:
        q = request.query_params
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if q.get("client_id") != self.client_id or not q.get("code_challenge"):
            return JSONResponse({"error": "unauthorized_client"}, status_code=400)
        code = secrets.token_urlsafe(16)
        self._grants[code] = _Grant(
            self.sign_in_as,
            q["client_id"],
            q["redirect_uri"],
            q["code_challenge"],
            q.get("nonce"),
        )
        answer = {"code": code, "state": q.get("state", "")}
        return RedirectResponse(f"{q['redirect_uri']}?{urlencode(answer)}", status_code=302)

    async def _token(self, request: Request) -> Response:
        if request.method == "OPTIONS":
            return Response(status_code=204, headers=_CORS)
        form = {k: str(v) for k, v in (await request.form()).items()}
        self.token_requests.append(form)
        if form.get("grant_type") == "refresh_token":
            user = self._refresh.pop(form.get("refresh_token", ""), None)
            if user is None:
                return JSONResponse({"error": "invalid_grant"}, status_code=400, headers=_CORS)
            return self._tokens(user, None)
        grant = self._grants.pop(form.get("code", ""), None)
        if grant is None or form.get("redirect_uri") != grant.redirect_uri:
            return JSONResponse({"error": "invalid_grant"}, status_code=400, headers=_CORS)
        verifier = form.get("code_verifier", "")
        if _b64(hashlib.sha256(verifier.encode()).digest()) != grant.challenge:
            return JSONResponse(
                {"error": "invalid_grant", "error_description": "PKCE verification failed"},
                status_code=400,
                headers=_CORS,
            )
        return self._tokens(grant.user, grant.nonce)

    def _tokens(self, user: str, nonce: str | None) -> Response:
        refresh = secrets.token_urlsafe(16)
        self._refresh[refresh] = user
        id_claims = {"aud": self.client_id, "typ": "ID", **({"nonce": nonce} if nonce else {})}
        return JSONResponse(
            {
                "access_token": self.mint(user),
                "id_token": self.mint(user, audience=self.client_id, extra=id_claims),
                "refresh_token": refresh,
                "token_type": "Bearer",
                "expires_in": self.token_seconds,
            },
            headers=_CORS,
        )

    async def _logout(self, request: Request) -> Response:
        target = request.query_params.get("post_logout_redirect_uri", "/")
        return RedirectResponse(target, status_code=302)


_CORS = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "*"}


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _b64json(value: dict[str, Any]) -> str:
    return _b64(json.dumps(value).encode())
