"""The FastAPI factory: `create_app(settings)` builds the app, tests with settings and
agents of their own, `app.main` with the environment's.

The lifespan opens every part on one `AsyncExitStack`, each built by its own
package from the settings (`app/<package>/factory.py`), so a part that fails
to start closes the ones already open, and shutdown runs in reverse: runs
are stopped and stored first, then the task backend, clients and database
are closed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from types import FrameType
from urllib.parse import urlsplit

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from opentelemetry.sdk.trace.export import SpanExporter
from starlette.routing import Route

from app.agents.factory import Parts
from app.agents.registry import AGENTS, AgentEntry
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
from app.auth.identity import Authenticator
from app.config import Settings
from app.core.events import prepare_codecs
from app.documents import factory as documents_part
from app.limits import factory as limits_part
from app.llm import factory as llm_part
from app.llm.base import ChatModel
from app.llm.catalog import read_catalog
from app.service import factory as service_part
from app.service.draining import Drainer
from app.service.factory import Service
from app.service.schedules import RunStarted
from app.store import factory as store_part
from app.tasks import factory as tasks_part
from app.telemetry import TelemetryMiddleware, build_telemetry
from app.telemetry.stores import StoreTracing
from app.tools import factory as tools_part

log = logging.getLogger("app")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, float]]:
    """The app's parts, each built by its package from the settings, in the order each needs
    the ones before it; the stack closes them in reverse."""
    settings: Settings = app.state.settings
    entries: Sequence[AgentEntry] = app.state.agents
    instance_id = uuid.uuid4().hex[:12]
    async with AsyncExitStack() as stack:
        # First in, last out: the spans of the shutdown itself are exported too.
        telemetry = await stack.enter_async_context(
            build_telemetry(settings, app.state.span_exporter)
        )
        tracing = StoreTracing(telemetry.tracer, remote_tasks=bool(settings.redis_url))
        stores = await store_part.build(
            settings, stack=stack, instance_id=instance_id, opened=tracing.database
        )
        app.state.database = stores.database
        models = await llm_part.build(
            settings, stack=stack, spec=app.state.catalog, model=app.state.model, observer=telemetry
        )
        tools = await tools_part.build(settings, stack=stack, http=models.http)
        runs = await tasks_part.build(
            settings, stack=stack, instance_id=instance_id, stores=stores, traced=tracing.tasks
        )
        documents = documents_part.build(settings, stores=stores, models=models)
        limits = await limits_part.build(settings, stack=stack, stored=stores.user_limits)
        # Closed after the runs are stopped and stored, so a call waiting on one is answered.
        app.state.mcp = McpSurface(lambda: app.state.services, entries)
        stack.push_async_callback(app.state.mcp.close)
        parts = Parts(
            stores=stores, models=models, tools=tools, runs=runs, documents=documents, limits=limits
        )
        service = await service_part.build(
            settings,
            stack=stack,
            instance_id=instance_id,
            entries=entries,
            parts=parts,
            observer=telemetry,
            stop_wait=agent.STOP_WAIT_SECONDS,
        )
        # Under uvicorn, SIGTERM starts the drain the shutdown would do, and sooner.
        stack.callback(drain_on_sigterm(service.drainer))
        auth = await stack.enter_async_context(open_authenticator(settings, stores.auth_keys))
        if runs.webhooks.enabled:
            service.schedules.on_started = _push_notifications(settings, service)
        app.state.services = _services(settings, entries, service=service, auth=auth)
        app.state.telemetry = telemetry
        # Stopped first at shutdown: no run starts while the parts runs need are closing.
        service.schedules.start()
        stack.push_async_callback(service.schedules.close)
        # After the start, so the first request does not wait for it either.
        codecs = asyncio.create_task(prepare_codecs())
        stack.callback(codecs.cancel)
        # The server's protocol reads it (api/head_timeout.py): the app is not called
        # before a request's head is complete, so it cannot time that itself.
        yield {HEAD_TIMEOUT_KEY: settings.request_head_timeout_seconds}


def _push_notifications(settings: Settings, service: Service) -> RunStarted:
    """What tells A2A push configs of scheduled runs; imported here, not at the top: push
    notifications need the secret, and A2A's library loads only with a configuration
    (or a call) that uses it."""
    from app.api.a2a.push import PushNotifications, scheduled_runs

    stores = service.parts.stores
    push = PushNotifications(stores.push_configs, service.parts.runs.webhooks, stores.sessions)
    return scheduled_runs(push, settings.a2a_public_url)


def _services(
    settings: Settings, entries: Sequence[AgentEntry], *, service: Service, auth: Authenticator
) -> Services:
    """What the routes reach through `get_services`, gathered from the parts."""
    parts = service.parts
    stores, runs = parts.stores, parts.runs
    return Services(
        http=ApiSettings.from_settings(settings),
        agents={entry.kind: entry for entry in entries},
        store=stores.sessions,
        titles=stores.titles,
        search=stores.search,
        usage=stores.usage,
        ratings=stores.ratings,
        shares=stores.shares,
        preferences=stores.preferences,
        tasks=runs.tasks,
        runs=runs.runs,
        turns=service.turns,
        listing=service.listing,
        streams=service.streams,
        projects=service.projects,
        memory=service.memory,
        schedules=service.schedules,
        auth=auth,
        auth_keys=stores.auth_keys,
        files=parts.documents.library,
        model=parts.models.catalog.default,
        models=parts.models.catalog,
        limits=parts.limits,
        mcp=parts.tools.mcp,
        webhooks=runs.webhooks,
        push_configs=stores.push_configs,
        drain=runs.drain,
    )


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
