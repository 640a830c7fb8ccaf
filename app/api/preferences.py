"""`/account/preferences`: what a user chose on one device, for every device they use.

The chat page offers first the model the user picked last, on whichever
device they picked it. It is the page's to send: a turn that names no
`model` still takes its agent's own (`AGENT_MODELS`), so a script or another
client is not changed by what was picked on the page. Each user reads and
changes only their own.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field

from app.api.auth import UserDep
from app.api.deps import ServicesDep
from app.api.envelope import Envelope, ok
from app.core.wire import WireModel
from app.llm.models import UnknownModel
from app.service.errors import ModelUnknown
from app.service.records import Preferences

router = APIRouter(prefix="/account", tags=["account"])


class PreferencesPublic(WireModel):
    model: str | None = Field(
        default=None,
        max_length=64,
        description="The model id (`GET /agent/models`) the page offers first; null: each"
        " agent's own.",
    )


@router.get("/preferences", summary="Your preferences, on every device")
async def read_preferences(user: UserDep, services: ServicesDep) -> Envelope[PreferencesPublic]:
    """Null for what the caller never chose, and for a model the service no longer offers."""
    model = (await services.preferences.of_user(user)).model
    return ok(PreferencesPublic(model=model if model in services.models.ids() else None))


@router.patch(
    "/preferences",
    summary="Change your preferences",
    responses={400: {"description": "A model the service does not offer (`MODEL_UNKNOWN`)"}},
)
async def change_preferences(
    body: PreferencesPublic, user: UserDep, services: ServicesDep
) -> Envelope[PreferencesPublic]:
    """Answers the preferences as they are now stored."""
    if body.model is not None:
        try:
            services.models.get(body.model)
        except UnknownModel as exc:
            raise ModelUnknown(str(exc)) from exc
    stored = await services.preferences.put(user, Preferences(model=body.model))
    return ok(PreferencesPublic(model=stored.model))
