"""`/auth/…`: who am I, how does the page sign in, and the keys a user makes for scripts.

A key is shown once, when made; afterwards only its first characters
(`prefix`). Each user sees and revokes only their own: another user's key id
answers 404. Keys need authentication on (`API_KEYS`, `OIDC_ISSUER` or
`AUTH_TRUSTED_HEADER`): without it everyone is the one local user, and a
key would have no one to stand for (409).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Path
from pydantic import AwareDatetime, Field, field_validator

from app.api.auth import CallerDep, UserDep
from app.api.deps import ServicesDep
from app.api.envelope import ApiError, Envelope, ok
from app.auth import IssuerUnreachable
from app.core.wire import WireModel, WireTime

if TYPE_CHECKING:
    from app.store.auth_keys import KeyInfo

router = APIRouter(prefix="/auth", tags=["auth"])

KeyId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]


class OidcClient(WireModel):
    issuer: str
    client_id: str
    scopes: str
    authorization_endpoint: str
    token_endpoint: str
    end_session_endpoint: str | None


class AuthConfig(WireModel):
    methods: list[str] = Field(
        description="The ways in that are on: `apiKey`, `oidc`, `proxy`; empty: no sign-in."
    )
    oidc: OidcClient | None = Field(
        description="Set when the page should sign users in with the issuer (PKCE)."
    )


class Me(WireModel):
    user_id: str
    admin: bool


class NewKey(WireModel):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    expires_at: AwareDatetime | None = Field(
        default=None, description="When the key stops working (with a time zone); null: never."
    )

    @field_validator("expires_at")
    @classmethod
    def _future(cls, value: datetime | None) -> datetime | None:
        if value is not None and value <= datetime.now(UTC):
            raise ValueError("must be in the future")
        return value


class KeyPublic(WireModel):
    id: str
    name: str | None
    prefix: str = Field(description="The key's first characters, to recognise it by.")
    created_at: WireTime
    expires_at: WireTime | None
    last_used_at: WireTime | None

    @classmethod
    def of(cls, info: KeyInfo) -> KeyPublic:
        return cls.model_validate(info)


class MadeKeyPublic(KeyPublic):
    key: str = Field(description="The key itself: shown this once, never again.")


@router.get(
    "/config",
    summary="How clients sign in (public)",
    responses={503: {"description": "The identity provider's discovery could not be read"}},
)
async def read_auth_config(services: ServicesDep) -> Envelope[AuthConfig]:
    """What the chat page needs before anyone signed in: the issuer and its public client."""
    settings = services.http
    oidc = None
    if services.auth.oidc is not None and settings.oidc_client_id:
        try:
            endpoints = await services.auth.oidc.endpoints()
        except IssuerUnreachable as exc:
            raise ApiError(503, "The identity provider could not be reached") from exc
        oidc = OidcClient(
            issuer=services.auth.oidc.issuer,
            client_id=settings.oidc_client_id,
            scopes=settings.oidc_scopes,
            authorization_endpoint=endpoints.authorization,
            token_endpoint=endpoints.token,
            end_session_endpoint=endpoints.end_session,
        )
    return ok(AuthConfig(methods=services.auth.schemes, oidc=oidc))


@router.get("/me", summary="Who the caller is")
async def read_me(caller: CallerDep) -> Envelope[Me]:
    return ok(Me(user_id=caller.user, admin=caller.admin))


@router.post(
    "/keys",
    summary="Make a key",
    responses={409: {"description": "Authentication is off: a key would stand for no one"}},
)
async def make_key(body: NewKey, user: UserDep, services: ServicesDep) -> Envelope[MadeKeyPublic]:
    """A new key of the caller's, usable wherever an `API_KEYS` key is; shown only now."""
    if not services.auth.enabled:
        raise ApiError(
            409,
            "Authentication is off (no API_KEYS, OIDC_ISSUER or AUTH_TRUSTED_HEADER): "
            "everyone is the one local user, and a key would stand for no one",
        )
    made = await services.auth_keys.make(user, body.name, body.expires_at)
    public = KeyPublic.of(made.info)
    return ok(MadeKeyPublic(**public.model_dump(), key=made.key))


@router.get("/keys", summary="The caller's keys")
async def list_keys(user: UserDep, services: ServicesDep) -> Envelope[list[KeyPublic]]:
    """Oldest first; each by its prefix only."""
    return ok([KeyPublic.of(info) for info in await services.auth_keys.of_user(user)])


@router.delete(
    "/keys/{key_id}",
    summary="Revoke a key",
    responses={404: {"description": "The caller has no such key"}},
)
async def revoke_key(key_id: KeyId, user: UserDep, services: ServicesDep) -> Envelope[None]:
    """The key stops working at once, on every instance."""
    if not await services.auth_keys.revoke(user, key_id):
        raise ApiError(404, "Key not found")
    return ok(None)
