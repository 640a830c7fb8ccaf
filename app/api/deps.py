"""The parts routes use, wired once in the lifespan and handed out through `Annotated` aliases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from app.agents.turns import TurnService
from app.config import Settings
from app.documents.library import DocumentLibrary
from app.llm.base import ChatModel
from app.store.base import SessionStore
from app.tasks.base import TaskManager
from app.tasks.runs import RunRegistry


@dataclass(slots=True)
class Services:
    settings: Settings
    store: SessionStore
    tasks: TaskManager
    runs: RunRegistry
    turns: TurnService
    users_by_key: dict[str, str]
    files: DocumentLibrary
    model: ChatModel


async def get_services(request: Request) -> Services:
    # `async` on purpose: FastAPI runs a plain `def` dependency in a worker thread,
    # a thread hop on every request for what is an attribute read.
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
