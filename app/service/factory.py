"""The service's part of the app: the agents, starting, carrying on, streaming and
scheduling their turns, and the drain that ends them at shutdown; with the parts below
it, which the routes reach through it."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Protocol

from app.agents import factory as agents_part
from app.agents.factory import Parts
from app.agents.on_demand import OnDemandAgents
from app.agents.registry import AgentEntry
from app.config import Settings
from app.core.observe import AgentObserver
from app.service.draining import Drainer
from app.service.memory import MemoryService
from app.service.projects import ProjectService
from app.service.run_listing import RunListing
from app.service.schedules import ScheduleService, ScheduleSettings
from app.service.streams import StreamService, StreamSettings
from app.service.takeover import TurnSuccessor
from app.service.turns import RunObserver, TurnService
from app.tasks.schedule_clock import ClockSettings
from app.tasks.sweeper import Sweeper


class Observer(AgentObserver, RunObserver, Protocol):
    """The telemetry: it watches the agents' steps and the runs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Service:
    parts: Parts
    """What it stands on, which the routes reach through it."""
    agents: OnDemandAgents
    turns: TurnService
    listing: RunListing
    projects: ProjectService
    streams: StreamService
    schedules: ScheduleService
    """Not started: the lifespan starts it last, once every part a run needs is up."""
    memory: MemoryService
    drainer: Drainer


async def build(
    settings: Settings,
    *,
    stack: AsyncExitStack,
    instance_id: str,
    entries: Sequence[AgentEntry],
    parts: Parts,
    observer: Observer,
    stop_wait: float,
) -> Service:
    """The service over the parts below it; `stop_wait` is how long a stop waits for the run.

    Its drain is registered last on `stack`, so it runs first at shutdown: queued
    turns leave, runs are handed over or stored, this instance resigns (Redis).
    """
    agents = await agents_part.build(
        settings, stack=stack, entries=entries, parts=parts, observer=observer
    )
    stores, models, runs, documents = parts.stores, parts.models, parts.runs, parts.documents
    tasks = runs.tasks
    turns = TurnService(
        agents,
        claims=tasks.claims,
        queue=tasks.queue,
        board=tasks.board,
        runs=runs.runs,
        ttl=settings.task_ttl_seconds,
        store=stores.sessions,
        stop_wait=stop_wait,
        observer=observer,
        starting=settings.max_starting_turns,
        drain=runs.drain,
    )
    projects = ProjectService(
        stores.projects,
        titles=stores.titles,
        store=stores.sessions,
        turns=turns,
        files=documents.library,
        models=models.catalog,
        kinds=[entry.kind for entry in entries],
        remembers=documents.user_memory is not None,
    )
    dead = None
    if tasks.instances is not None:
        successor = None
        if runs.movable and tasks.takeovers is not None:
            successor = TurnSuccessor(
                agents,
                store=stores.sessions,
                claims=tasks.claims,
                takeovers=tasks.takeovers,
                logs=runs.logs,
                turns=turns,
                projects=projects,
                models=models.catalog,
                webhooks=runs.webhooks,
                drain=runs.drain,
                ttl=settings.task_ttl_seconds,
                limit=settings.turn_takeovers,
                memory_turns=settings.memory_max_turns,
            )
        dead = Sweeper(
            tasks.instances, stores.sessions, ttl=settings.task_ttl_seconds, successor=successor
        )
        dead.start()
        stack.push_async_callback(dead.close)
    drainer = Drainer(
        runs.drain,
        grace=settings.drain_seconds,
        runs=runs.runs,
        turns=turns,
        sweeper=dead,
        takeovers=tasks.takeovers,
    )
    stack.push_async_callback(drainer.shutdown)
    streams = StreamService(
        StreamSettings.from_settings(settings),
        turns=turns,
        runs=runs.runs,
        files=documents.library,
        limits=parts.limits,
        webhooks=runs.webhooks,
        store=stores.sessions,
        models=models.catalog,
        projects=projects,
    )
    schedules = ScheduleService(
        ScheduleSettings.from_settings(settings),
        clock_settings=ClockSettings.from_settings(settings),
        store=stores.schedules,
        streams=streams,
        sessions=stores.sessions,
        agents={entry.kind: entry for entry in entries},
        models=models.catalog,
        webhooks=runs.webhooks,
        projects=projects,
        instance_id=instance_id,
        instances=tasks.instances,
        drain=runs.drain,
    )
    return Service(
        parts=parts,
        agents=agents,
        turns=turns,
        listing=RunListing(tasks.board, runs.runs, stores.sessions),
        projects=projects,
        streams=streams,
        schedules=schedules,
        memory=MemoryService(documents.user_memory, projects),
        drainer=drainer,
    )
