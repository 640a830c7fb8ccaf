"""The FastAPI factory. `uvicorn app.main:app` serves it; tests call `create_app(settings)`.

The lifespan opens every part on one `AsyncExitStack`, so a part that fails
to start closes the ones already open, and shutdown runs in reverse: runs
are stopped and stored first, then the task backend, clients and database
are closed.
"""

from __future__ import annotations

import gc

# What the imports below make (modules, classes, routes: ~200,000 objects) lives as long
# as the process, so collecting during them is waste: three full collections and dozens
# of others, 130 ms of a 0.9 s import. Collection resumes at the end of this module.
_COLLECTING = gc.isenabled()
gc.disable()

import asyncio
import logging
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta
from types import FrameType
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from opentelemetry.sdk.trace.export import SpanExporter
from starlette.routing import Route

from app.agents.approvals import ApprovalPolicy, ApprovalSettings
from app.agents.on_demand import OnDemandAgents
from app.agents.registry import AGENTS, AgentEntry
from app.agents.turn import AgentCore, AgentSettings
from app.api import (
    access_log,
    admin,
    agent,
    auth_keys,
    export,
    files,
    health,
    memory,
    metrics,
    preferences,
    projects,
    runs,
    schedules,
    search,
    sessions,
    shared,
    usage,
)
from app.api.a2a import install_a2a
from app.api.body_limit import BodyCap, BodyLimit, request_max_bytes
from app.api.deps import ApiSettings, Services
from app.api.docs import install_docs
from app.api.errors import install_error_handlers
from app.api.formats import ai_sdk
from app.api.formats.ag_ui_door import install_ag_ui
from app.api.head_timeout import HEAD_TIMEOUT_KEY
from app.api.mcp import MCP_PATH, McpEndpoint, McpSurface
from app.api.openapi_errors import document_errors
from app.api.openapi_events import document_events
from app.api.query_model import document_query_models
from app.api.text_guard import TextGuard
from app.api.web import WebPage
from app.auth import check_settings as check_auth_settings
from app.auth import open_authenticator
from app.config import Settings
from app.core.drain import Drain
from app.core.events import prepare_codecs
from app.documents.library import DocumentLibrary, LibrarySettings
from app.documents.user_memory import MemorySettings, UserMemory
from app.limits import Rates, build_user_limits
from app.limits.adjusted import AdjustedLimits
from app.llm.base import ChatModel
from app.llm.catalog import read_catalog
from app.llm.embeddings import build_embedder
from app.llm.http import build_http_client
from app.llm.models import open_catalog
from app.llm.tokens import TokenCounter, install_encodings
from app.service.draining import Drainer
from app.service.memory import MemoryService
from app.service.projects import ProjectService
from app.service.schedules import ScheduleService, ScheduleSettings
from app.service.streams import StreamService, StreamSettings
from app.service.takeover import TurnSuccessor
from app.service.turns import TurnService
from app.store.auth_keys import SqlAuthKeys
from app.store.blobs import LocalBlobStore
from app.store.db import Database
from app.store.file_store import SqlFileStore
from app.store.preferences import SqlPreferences
from app.store.projects import SqlProjects
from app.store.push_configs import SqlPushConfigs
from app.store.ratings import SqlRatings
from app.store.schedules import SqlSchedules
from app.store.search import SqlTurnSearch
from app.store.sessions import SqlSessionStore
from app.store.shares import SqlShares
from app.store.titles import SqlTitles
from app.store.usage import SqlUsage
from app.store.user_limits import SqlUserLimits
from app.store.user_memory import SqlUserMemory
from app.tasks.factory import build_shared_logs, build_tasks, build_unstored
from app.tasks.runs import RunRegistry
from app.tasks.schedule_clock import ClockSettings
from app.tasks.sweeper import Sweeper
from app.tasks.unstored import UnstoredSweeper
from app.tasks.webhooks import Webhooks
from app.telemetry import TelemetryMiddleware, build_telemetry
from app.telemetry.stores import trace_database, trace_tasks
from app.tools.fetch_page import FetchPage
from app.tools.mcp import McpHub, McpLimits, parse_servers
from app.tools.mcp.toolbox import McpToolbox
from app.tools.page_reader import PageReader
from app.tools.search import configured_search

log = logging.getLogger("app")

_SWITCH_INTERVAL_SECONDS = 0.0005
"""How long the served process's busy thread keeps the GIL from one that asks for it."""
_MIDDLE_COLLECTIONS_PER_FULL = 100
"""Collections of the middle generation between full ones; CPython's default is 10."""


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, float]]:
    settings: Settings = app.state.settings
    async with AsyncExitStack() as stack:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        install_encodings(settings.data_dir / "tiktoken")
        # First in, last out: the spans of the shutdown itself are exported too.
        telemetry = await stack.enter_async_context(
            build_telemetry(settings, app.state.span_exporter)
        )
        tracer = telemetry.tracer
        db = await stack.enter_async_context(
            Database.open(
                settings.database_url,
                pool_size=settings.db_pool_size,
                migrate=settings.auto_migrate,
                migrate_url=settings.migrate_database_url or None,
                transaction_pooler=settings.db_transaction_pooler,
            )
        )
        if tracer is not None:
            trace_database(db, tracer)
        app.state.database = db
        instance_id = uuid.uuid4().hex[:12]
        store = SqlSessionStore(db, instance_id)
        await _mark_orphans(store, settings)
        catalog = await stack.enter_async_context(
            open_catalog(app.state.catalog, settings, app.state.model)
        )
        tools_client = await stack.enter_async_context(build_http_client(settings))
        mcp_servers = parse_servers(settings.mcp_servers.get_secret_value())
        mcp = await stack.enter_async_context(
            McpHub.open(mcp_servers, McpLimits.from_settings(settings))
        )
        embedder = build_embedder(settings, tools_client)
        library = DocumentLibrary(
            SqlFileStore(db),
            LocalBlobStore(settings.data_dir / "files"),
            embedder,
            LibrarySettings.from_settings(settings),
        )
        tokens = TokenCounter()
        memory_settings = MemorySettings.from_settings(settings)
        user_memory = (
            UserMemory(SqlUserMemory(db), embedder, tokens, memory_settings)
            if memory_settings.enabled
            else None
        )
        model = catalog.default
        # `default` last: the one hook the telemetry keeps telling is its own (a test's).
        for each in reversed(catalog.models().values()):
            telemetry.watch_model(each)
        unstored = build_unstored(settings)
        stack.push_async_callback(unstored.close)
        storing = UnstoredSweeper(unstored, store, settings.unstored_sweep_seconds)
        storing.start()
        stack.push_async_callback(storing.close)
        toolbox = McpToolbox(mcp, settings.mcp_result_max_chars, settings.tavily_max_results)
        fetch_page = None
        if settings.fetch_enabled:
            reader = await stack.enter_async_context(PageReader.open(settings))
            fetch_page = FetchPage(reader, settings.fetch_max_chars)
        core = AgentCore(
            model=model,
            store=store,
            tokens=tokens,
            http=tools_client,
            limits=AgentSettings.from_settings(settings),
            documents=library,
            database=db,
            mcp=toolbox,
            search=configured_search(tools_client, settings, toolbox),
            fetch_page=fetch_page,
            observer=telemetry,
            unstored=unstored,
            models=catalog,
            approvals=ApprovalPolicy.from_settings(ApprovalSettings.from_settings(settings)),
            user_memory=user_memory,
        )
        # Entered before the runs' shutdown is registered, so what the agents hold
        # closes after every run ended, though each is built at its first turn.
        agents = OnDemandAgents(
            app.state.agents, core, settings, await stack.enter_async_context(AsyncExitStack())
        )
        built_tasks = build_tasks(settings, instance_id)
        tasks = built_tasks
        if tracer is not None and settings.redis_url:
            tasks = trace_tasks(built_tasks, tracer)
        shared_logs = build_shared_logs(
            settings, tasks.claims, built_tasks, store.latest_status, instance_id
        )
        drain = Drain()
        # Another instance can carry a turn on: with Redis, unless TURN_TAKEOVERS is 0.
        movable = built_tasks.takeovers is not None and settings.turn_takeovers > 0
        run_registry = RunRegistry(
            tasks.claims,
            settings.task_ttl_seconds,
            settings.resume_retention_seconds,
            shared_logs,
            movable=movable,
            drain=drain,
        )
        if built_tasks.takeovers is not None:
            built_tasks.takeovers.on_lost(run_registry.lost)
        await tasks.backend.start(run_registry.stop)
        limits = AdjustedLimits(
            build_user_limits(settings), Rates.from_settings(settings), SqlUserLimits(db)
        )
        await limits.start()
        webhooks = Webhooks(settings)
        turns = TurnService(
            agents,
            tasks.claims,
            tasks.queue,
            tasks.board,
            run_registry,
            settings.task_ttl_seconds,
            store,
            agent.STOP_WAIT_SECONDS,
            telemetry,
            settings.max_starting_turns,
            drain,
        )
        titles = SqlTitles(db)
        projects = ProjectService(
            SqlProjects(db),
            titles,
            store,
            turns,
            library,
            catalog,
            [entry.kind for entry in app.state.agents],
            remembers=user_memory is not None,
        )
        stack.push_async_callback(limits.close)
        stack.push_async_callback(tasks.backend.close)
        dead = None
        if tasks.instances is not None:
            successor = None
            if movable and built_tasks.takeovers is not None:
                successor = TurnSuccessor(
                    agents,
                    store,
                    tasks.claims,
                    built_tasks.takeovers,
                    shared_logs,
                    turns,
                    projects,
                    catalog,
                    webhooks,
                    drain,
                    ttl=settings.task_ttl_seconds,
                    limit=settings.turn_takeovers,
                    memory_turns=settings.memory_max_turns,
                )
            dead = Sweeper(tasks.instances, store, settings.task_ttl_seconds, successor)
            dead.start()
            stack.push_async_callback(dead.close)
        stack.push_async_callback(shared_logs.close)
        stack.push_async_callback(webhooks.close)
        # Closed after the runs are stopped and stored, so a call waiting on one is answered.
        app.state.mcp = McpSurface(lambda: app.state.services, app.state.agents)
        stack.push_async_callback(app.state.mcp.close)
        # First at the end: queued turns leave, runs are handed over or stored, this
        # instance resigns (Redis), open streams end; the SIGTERM drain does it sooner.
        drainer = Drainer(
            drain, settings.drain_seconds, run_registry, turns, dead, built_tasks.takeovers
        )
        stack.push_async_callback(drainer.shutdown)
        stack.callback(drain_on_sigterm(drainer))
        made_keys = SqlAuthKeys(db)
        auth = await stack.enter_async_context(open_authenticator(settings, made_keys))
        streams = StreamService(
            StreamSettings.from_settings(settings),
            turns,
            run_registry,
            library,
            limits,
            webhooks,
            store,
            catalog,
            projects,
        )
        schedule_service = ScheduleService(
            ScheduleSettings.from_settings(settings),
            ClockSettings.from_settings(settings),
            SqlSchedules(db),
            streams,
            store,
            {entry.kind: entry for entry in app.state.agents},
            catalog,
            webhooks,
            projects,
            instance_id,
            tasks.instances,
            drain,
        )
        if webhooks.enabled:
            # Here, not at the top: push notifications need the secret, and A2A's library
            # loads only with a configuration (or a call) that uses it.
            from app.api.a2a.push import PushNotifications, scheduled_runs

            schedule_service.on_started = scheduled_runs(
                PushNotifications(SqlPushConfigs(db), webhooks, store), settings.a2a_public_url
            )
        app.state.services = Services(
            http=ApiSettings.from_settings(settings),
            agents={entry.kind: entry for entry in app.state.agents},
            store=store,
            titles=titles,
            search=SqlTurnSearch(db),
            usage=SqlUsage(db),
            ratings=SqlRatings(db),
            shares=SqlShares(db, store),
            preferences=SqlPreferences(db),
            tasks=tasks,
            runs=run_registry,
            turns=turns,
            streams=streams,
            projects=projects,
            memory=MemoryService(user_memory, projects),
            schedules=schedule_service,
            auth=auth,
            auth_keys=made_keys,
            files=library,
            model=core.model,
            models=catalog,
            limits=limits,
            mcp=mcp,
            webhooks=webhooks,
            push_configs=SqlPushConfigs(db),
            drain=drain,
        )
        app.state.telemetry = telemetry
        # Stopped first at shutdown: no run starts while the parts runs need are closing.
        schedule_service.start()
        stack.push_async_callback(schedule_service.close)
        # After the start, so the first request does not wait for it either.
        codecs = asyncio.create_task(prepare_codecs())
        stack.callback(codecs.cancel)
        if not core.model.config.configured:
            log.warning("no language model configured: set LLM_BASE_URL and/or LLM_API_KEY")
        # The server's protocol reads it (api/head_timeout.py): the app is not called
        # before a request's head is complete, so it cannot time that itself.
        yield {HEAD_TIMEOUT_KEY: settings.request_head_timeout_seconds}


def drain_on_sigterm(drainer: Drainer) -> Callable[[], object]:
    """Under uvicorn, SIGTERM drains first (`DRAIN_SECONDS`), then uvicorn shuts down; what
    undoes it.

    uvicorn stops accepting at SIGTERM and waits for open connections before the lifespan
    ends, so the drain cannot wait for the lifespan: it starts from the signal itself, and
    hands the signal on to uvicorn once it is over. Under another server (or none: tests)
    the lifespan's end does the drain's work without the grace.
    """
    current = signal.getsignal(signal.SIGTERM)
    served = sys.modules.get("uvicorn.server")  # imported by uvicorn when it serves us
    server = getattr(current, "__self__", None)
    if served is None or not isinstance(server, served.Server) or not callable(current):
        return lambda: None
    loop = asyncio.get_running_loop()
    exit_server = current

    def on_sigterm(sig: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(drainer.begin, lambda: exit_server(sig, frame))

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread: uvicorn's own handling stays
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, current)


async def _mark_orphans(store: SqlSessionStore, settings: Settings) -> None:
    """Turns left `running` by a dead process become `interrupted`.

    With the in-process registry this process was the only runner, so every
    running row is an orphan; with Redis, other instances may be running, and
    the sweeper (`app/tasks/sweeper.py`) marks only the turns of instances
    that are dead; here only rows stored before turns recorded their
    instance, once silent for longer than the claim TTL.
    """
    if not settings.redis_url:
        count = await store.mark_interrupted()
    else:
        older_than = datetime.now(UTC) - timedelta(seconds=settings.task_ttl_seconds)
        count = await store.mark_interrupted(older_than=older_than, unowned=True)
    if count:
        log.warning("marked %d orphaned turn(s) as interrupted", count)


def create_app(
    settings: Settings | None = None,
    agents: Sequence[AgentEntry] = AGENTS,
    model: ChatModel | None = None,
    span_exporter: SpanExporter | None = None,
) -> FastAPI:
    """The app. Tests swap in their own `agents` (the registry's entries) or `model`
    (a scripted one); otherwise the model is built from the settings. A `span_exporter`
    turns tracing on with it, whatever the settings say (tests, benchmarks)."""
    settings = settings or Settings()
    _configure_logging(settings.log_level)
    access_log.install()
    app = FastAPI(
        title="dodo-agent",
        version="0.1.0",
        summary="Agent chat service: live SSE streams of ReAct agents, persisted and stoppable.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # FastAPI's own OpenTelemetry stays off, whatever global provider a host sets up:
        # the request span is ours (app/telemetry), and FastAPI's would record
        # the query string with a stream's `access_token` in it.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    if settings.migrates_through_pooler():
        raise ValueError(
            "DB_TRANSACTION_POOLER=true: migrations need a direct connection. Set"
            " MIGRATE_DATABASE_URL to the database's own address, or set AUTO_MIGRATE=false"
            " and run `alembic upgrade head` on it as a deploy step (docs/operate/scaling.md)"
        )
    # Checked now, so a bad catalog stops the service before it serves (a ValueError).
    app.state.catalog = read_catalog(settings)
    check_auth_settings(settings)
    app.state.agents = agents
    app.state.model = model
    app.state.span_exporter = span_exporter
    if settings.cors_wildcard_refused():
        log.warning("CORS_ORIGINS=* is ignored while callers sign in: list the allowed origins")
    # Inside CORS, so a refusal carries the CORS headers a browser needs to read it;
    # the text guard inside the body cap, so it reads no more than the cap.
    app.add_middleware(TextGuard)
    app.add_middleware(
        BodyLimit,
        cap=BodyCap(
            request_max_bytes(settings.query_max_chars), settings.request_body_timeout_seconds
        ),
        per_path={
            "/file/upload": BodyCap(
                files.body_limit(settings.upload_max_bytes), settings.upload_body_timeout_seconds
            )
        },
        max_header_bytes=settings.request_headers_max_bytes,
        max_query_bytes=request_max_bytes(settings.query_max_chars),
    )
    app.add_middleware(
        CORSMiddleware,
        allow_origins=settings.cors_origin_list(),
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allow_headers=[
            "Authorization",
            "Content-Type",
            "Cache-Control",
            "Last-Event-ID",
            "Mcp-Session-Id",
            "Mcp-Protocol-Version",
        ],
        expose_headers=["Content-Disposition", "Mcp-Session-Id"],
    )
    # Outermost: a request's span and the open-streams gauge cover all the rest.
    app.add_middleware(TelemetryMiddleware)
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(agent.stream_routes(agents))
    app.include_router(agent.router)
    app.include_router(runs.router)
    app.include_router(search.router)
    app.include_router(sessions.router)
    app.include_router(shared.router)
    app.include_router(export.router)
    app.include_router(files.router)
    app.include_router(metrics.router)
    app.include_router(usage.router)
    app.include_router(memory.router)
    app.include_router(projects.router)
    app.include_router(auth_keys.router)
    app.include_router(preferences.router)
    app.include_router(admin.router)
    app.include_router(schedules.router)
    app.include_router(schedules.admin_router)
    install_ag_ui(app)
    app.include_router(ai_sdk.router)
    document_query_models(app)
    document_errors(app)
    document_events(app)
    # After the envelope is documented: A2A's own errors are documented over it.
    install_a2a(app, agents)
    # Every method: the MCP transport answers POST, GET and DELETE, and refuses the rest.
    app.router.routes.append(Route(MCP_PATH, McpEndpoint(), include_in_schema=False))
    install_docs(app)
    app.mount("/", WebPage(connect_to=_sign_in_origin(settings)), name="web")

    return app


def _sign_in_origin(settings: Settings) -> str:
    """The OIDC issuer's origin, which the page calls to sign in; empty when it does not."""
    if not (settings.oidc_issuer and settings.oidc_client_id):
        return ""
    parts = urlsplit(settings.oidc_issuer)
    return f"{parts.scheme}://{parts.netloc}"


def _configure_logging(level: str) -> None:
    logger = logging.getLogger("app")
    logger.setLevel(level.upper())
    if not logger.handlers:
        handler = logging.StreamHandler()
        # `trace_id` is filled in while tracing is on (app/telemetry/tracing.py).
        handler.setFormatter(
            logging.Formatter(
                "%(asctime)s %(levelname)s %(name)s: %(message)s%(trace_id)s",
                defaults={"trace_id": ""},
            )
        )
        logger.addHandler(handler)


def __getattr__(name: str) -> FastAPI:
    """`uvicorn app.main:app` builds the app on first access, not at import."""
    if name == "app":
        return serve()
    raise AttributeError(name)


def serve() -> FastAPI:
    """The app as a serving process runs it for its life, the process tuned for it.

    What `uvicorn app.main:app` (scripts/run, the Dockerfile) and the benchmarks get;
    tests that start apps in their own process call `create_app` and leave the
    process as it is.
    """
    served = create_app()
    tune_for_serving()
    return served


def tune_for_serving() -> None:
    """Garbage collection and thread switching for a process that only serves this app."""
    # This process serves this app for its life: what is alive now (modules,
    # routes, models; ~125k objects) never dies, so full collections skip it.
    # Without this each one walked it: 115 ms pauses in every open stream.
    gc.freeze()
    # A full collection walks every object alive, and pauses every open stream
    # while it does: ~1 µs an object, 110 to 220 ms with 1,000 streams open
    # (~200 objects each). The heap growing by a quarter triggered one after
    # another as those streams opened, five in 15 s. Waiting for 100 middle
    # generation collections rather than 10 left none in that burst (bench/README.md);
    # most garbage here is freed by reference counts, not by collections.
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, _MIDDLE_COLLECTIONS_PER_FULL)
    # The event loop rarely waits, so a thread that needs the GIL (each
    # aiosqlite statement takes several turns on its thread) waited the full
    # 5 ms switch interval every time: with 1,000 streams on SQLite that held
    # statements over 30 s in the pool and failed turns. 0.5 ms fixed it
    # (bench/README.md); with no such threads running it changes nothing.
    sys.setswitchinterval(_SWITCH_INTERVAL_SECONDS)


if _COLLECTING:
    gc.enable()
