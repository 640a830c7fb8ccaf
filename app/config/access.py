"""Sections of who may call the service, and how much."""

from __future__ import annotations

from pydantic import Field, SecretStr

from app.config.base import SettingsSection


class AccessSection(SettingsSection):
    """Access

    Who may call the service, and from which browser origins (docs/operate/sign-in.md).
    With none of `API_KEYS`, `OIDC_ISSUER` and `AUTH_TRUSTED_HEADER` set there is no
    sign-in: everyone is the one local user.
    """

    api_keys: SecretStr = SecretStr("")
    """`key:user` pairs, comma-separated: `key1:alice,key2:bob` (clients send
    `Authorization: Bearer key1`). A key may be given as its SHA-256 instead, so the
    configuration need not hold it: `sha256:<hex>:carol`, the hex from
    `printf %s the-key | sha256sum`. Users may also make their own keys once any sign-in is
    on."""
    oidc_issuer: str = ""
    """An OpenID Connect issuer (`https://id.example.com/realms/team`): its access tokens are
    accepted as bearer tokens; its discovery document and keys are read through the outbound
    guard, so an intranet provider must be in `OUTBOUND_ALLOWLIST`."""
    oidc_audience: str = ""
    """The `aud` a token must carry; empty: `OIDC_CLIENT_ID`."""
    oidc_client_id: str = ""
    """The chat page's public client at the issuer (standard flow, PKCE, no secret); set, the
    page signs users in."""
    oidc_scopes: str = "openid profile email"
    """Scopes the chat page asks for."""
    oidc_user_claim: str = "sub"
    """The claim that names the user (`sub`, `preferred_username`, `email`)."""
    oidc_groups_claim: str = "groups"
    """The claim listing the user's groups, matched by `ADMIN_USERS`' `group:<name>`."""
    oidc_jwks_refresh_seconds: float = Field(default=60.0, ge=0)
    """Least time between two reads of the provider's keys caused by tokens naming an
    unknown `kid`."""
    auth_trusted_header: str = ""
    """A header a sign-in proxy (oauth2-proxy, Authelia, Cloudflare Access) names the user in
    (`X-Forwarded-User`); empty: none."""
    auth_trusted_proxies: str = ""
    """The sign-in proxies' addresses, as CIDRs: the trusted header is believed from these
    only; from anywhere else it is ignored (and logged once)."""
    auth_trusted_groups_header: str = ""
    """A header the sign-in proxy lists the user's groups in, comma-separated (oauth2-proxy's
    `X-Forwarded-Groups`, Authelia's `Remote-Groups`), for `ADMIN_USERS`' `group:<name>`;
    believed only beside the user's header from those proxies; empty: none."""
    admin_users: str = ""
    """Users who may see and stop anyone's runs, read usage per user and set a user's limits
    (`/admin/...`): user ids, or `group:<name>` for members of a group (the OIDC groups
    claim, or the sign-in proxy's groups header); comma-separated."""
    cors_origins: str = "*"
    """Origins a browser may call the API from, comma-separated
    (`https://chat.example.com,http://localhost:5173`). `*` allows any origin, but only
    without authentication: with it on, `*` allows no other origin (the service's own page
    at `/` always works), so list the front ends' origins."""


class LimitsSection(SettingsSection):
    """Limits

    What one request, one user and one instance may cost (docs/operate/limits.md). The
    per-user limits are counted in Redis when `REDIS_URL` is set, so they hold across
    instances; without authentication they count per client address (behind a proxy:
    uvicorn's `FORWARDED_ALLOW_IPS`). 0 turns a per-user limit off, at no cost; a load test
    from one address sets them to 0, and an admin may set one user's at run time
    (`PUT /admin/users/{id}/limits`).
    """

    query_max_chars: int = Field(default=32000, ge=1)
    """Longest accepted `query`, in characters (longer answers 413). Query strings and JSON
    bodies are capped from it too: 12 bytes a character + 16 KiB (414, 413)."""
    upload_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    """Largest accepted upload (larger answers 413, refused as the body arrives)."""
    request_headers_max_bytes: int = Field(default=32 * 1024, ge=1024)
    """Largest total size of one request's headers; larger answers 431."""
    request_head_timeout_seconds: float = Field(default=10.0, gt=0)
    """Longest a request's head (request line and headers) may take to arrive, from the
    connection's start or the previous answer; then the connection is closed. Needs the
    server started with `--http app.api.head_timeout:HeadTimeoutProtocol` (`scripts/run` and
    the Dockerfile do)."""
    request_body_timeout_seconds: float = Field(default=30.0, gt=0)
    """Longest a request's body (but an upload's) may take to arrive whole; then 408 and the
    connection is closed."""
    upload_body_timeout_seconds: float = Field(default=300.0, gt=0)
    """Longest an upload's body may take to arrive whole; then 408."""
    max_streams_per_user: int = Field(default=8, ge=0)
    """Streams (running turns) one user may have at once; more answer 429 with
    `Retry-After: 5`. 0: no limit."""
    streams_per_minute: int = Field(default=30, ge=0)
    """New streams per user and minute, a token bucket (a minute's worth may come at once);
    more answer 429 with `Retry-After`. 0: no limit."""
    uploads_per_minute: int = Field(default=20, ge=0)
    """Uploads per user and minute, a token bucket, checked before the body is read; more
    answer 429 with `Retry-After`. 0: no limit."""
    max_starting_turns: int = Field(default=24, ge=1)
    """New turns storing their question at once, per instance (all users together): a burst
    beyond it waits its turn to start, so the streams already running keep flowing."""
