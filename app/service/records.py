"""The stored shapes the routes answer with, so that no route imports `app.store`.

Each family's public columns (`TurnBase`, `FileUpload`/`FileBase`, `ProjectBase`,
`UserMemoryBase`), which a route's public model extends with `PUBLIC_CONFIG` (the
wire's camelCase names); the plain records a route reads or sends back (a `Rating`,
a turn's `Pending` decisions, a `RatedTurn`, a user's `Preferences`, an admin's
`LimitOverride`); and a conversation's title as every list shows it (`title_of`).
Behaviour stays behind the services: these are data only.
"""

from __future__ import annotations

from app.store.memory_models import UserMemoryBase as UserMemoryBase
from app.store.models import PUBLIC_CONFIG as PUBLIC_CONFIG
from app.store.models import FileBase as FileBase
from app.store.models import FileUpload as FileUpload
from app.store.models import TurnBase as TurnBase
from app.store.preferences import Preferences as Preferences
from app.store.project_models import ProjectBase as ProjectBase
from app.store.ratings import RatedTurn as RatedTurn
from app.store.records import Pending as Pending
from app.store.records import Rating as Rating
from app.store.titles import title_of as title_of
from app.store.user_limits import LimitOverride as LimitOverride
