"""Sections of where the service keeps things, how its instances share work, and what
it tells about itself."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from app.config.base import SettingsSection


class StorageSection(SettingsSection):
    """Storage

    Where conversations, turns and files are kept. The embedded default is a SQLite file
    and files under `./data`; production uses PostgreSQL.
    """

    database_url: str = "sqlite+aiosqlite:///./data/app.db"
    """Any SQLAlchemy async URL. Production: `postgresql+asyncpg://user:password@host:5432/dbname`
    (the pooler's address when there is one)."""
    auto_migrate: bool = True
    """Apply Alembic migrations at start-up; `false` where deployments run
    `alembic upgrade head` as a step of their own."""
    migrate_database_url: str = ""
    """Where migrations run (`alembic upgrade head`, and the start-up's with `AUTO_MIGRATE`):
    the database's own address when `DATABASE_URL` is a pooler's (PgBouncer); empty:
    `DATABASE_URL`."""
    db_pool_size: int = 20
    """PostgreSQL connections per instance, per pool: SQLAlchemy's pool (up to twice this,
    opened as needed) plus the turns' own asyncpg pool of this size, which opens all its
    connections just after start-up and keeps them. Count both against the server's
    `max_connections`."""
    db_transaction_pooler: bool = False
    """`DATABASE_URL` is a pooler in transaction mode (PgBouncer's `pool_mode = transaction`):
    no prepared statement or session state outlives a transaction. Migrations then run on a
    direct connection: `MIGRATE_DATABASE_URL`, or a deploy step with `AUTO_MIGRATE=false`
    (docs/operate/scaling.md)."""
    data_dir: Path = Path("./data")
    """Uploads and generated files (`files/`), the skills agent's workspaces (`workspaces/`)
    and tiktoken's encoding files (`tiktoken/`). Several instances mount one shared volume
    here."""


class TasksSection(SettingsSection):
    """Tasks across instances

    Who runs which conversation, stopping, resuming and crash recovery. Without Redis the
    task registry lives in the process (a single instance); several instances share one
    Redis.
    """

    redis_url: str = ""
    """`redis://host:6379/0`: stop, TTL, resume, queues, `/agent/runs` and the per-user
    limits across instances. Empty: the in-process task registry (one instance only). One
    server; for a primary that Sentinels fail over, or a Cluster, see `REDIS_SENTINELS` and
    `REDIS_CLUSTER`."""
    redis_prefix: str = "dodo:"
    """Prefix of every Redis key and channel, so several deployments can share one Redis."""
    redis_sentinels: str = ""
    """`host:port,host:port` of Redis Sentinels: the primary is asked of them, and found
    again after they fail it over (with `REDIS_SENTINEL_MASTER`). `REDIS_URL` then gives
    only the password, the database and the scheme (`rediss://` for TLS); its host is not
    used (docs/operate/redis.md)."""
    redis_sentinel_master: str = ""
    """The name the Sentinels monitor the primary under (`sentinel monitor <name> ...`)."""
    redis_cluster: bool = False
    """`REDIS_URL` names a node of a Redis Cluster (database 0): the others are found from
    it, and keys carry a hash tag per user, so they spread over the nodes
    (docs/operate/redis.md)."""
    task_ttl_seconds: int = Field(default=1800, ge=1)
    """Longest a task may hold its conversation without a heartbeat refresh: the backstop
    (with Redis a dead instance is noticed far sooner, see `INSTANCE_DEAD_SECONDS`)."""
    instance_dead_seconds: float = Field(default=15.0, gt=0)
    """With Redis: an instance silent this long after its last heartbeat (it beats five
    times in this span) is dead; another takes its running turns over (`TURN_TAKEOVERS`)
    or marks them `interrupted` and frees their conversations."""
    turn_takeovers: int = Field(default=2, ge=0)
    """With Redis: how many times a running turn may move to another instance (its own died,
    or drained on a deploy) and be carried on from its last durable point; past that it ends
    `interrupted`. 0: never (every such turn ends `interrupted`)."""
    drain_seconds: float = Field(default=20.0, ge=0)
    """On SIGTERM: how long running turns get to finish while `/ready` answers 503 and new
    turns are refused (503 `DRAINING`); those still running are then handed to another
    instance (or, alone, stored `interrupted`). Keep it below the orchestrator's grace period
    (Kubernetes: 30 s) less a few seconds for the hand-over."""
    resume_retention_seconds: int = 300
    """How long a finished run's events stay readable by `/agent/resume`."""
    resume_max_events: int = Field(default=10000, ge=1)
    """Events of one run kept in its Redis Stream for resuming on other instances (older
    ones are trimmed)."""
    partial_save_seconds: float = Field(default=5.0, gt=0)
    """How often a running turn's answer so far is stored, so a crash loses at most this
    much."""
    store_retry_seconds: float = Field(default=120.0, gt=0)
    """How long a turn's final store retries an unreachable database (a restart, a failover)
    before the turn ends `error{STORE_FAILED}` + `complete{failed}`; the stream waits
    meanwhile, saying it is saving."""
    unstored_sweep_seconds: float = Field(default=30.0, gt=0)
    """How often each instance stores the turns whose own final store gave up (their
    outcomes kept in Redis meanwhile), once the database answers again. Needs `REDIS_URL`."""


class TelemetrySection(SettingsSection):
    """Logs, traces and metrics

    What the service tells about itself (docs/operate/observability.md).
    """

    log_level: str = "INFO"
    """Level of the service's own log lines: `DEBUG`, `INFO`, `WARNING` or `ERROR`. Failed
    model and web-search calls are logged at `WARNING`, with the URL, the status and the
    provider's message (the key scrubbed)."""
    otel_exporter_otlp_endpoint: str = ""
    """An OTLP/HTTP collector's base URL (`http://collector:4318`; spans go to
    `{endpoint}/v1/traces`); set, it turns tracing on."""
    otel_traces_exporter: str = ""
    """`otlp`, `console` (spans printed to stdout) or `none`; empty: `otlp` when an endpoint
    is set, else tracing is off. The SDK's other `OTEL_*` variables
    (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`, ...)
    are read from the environment as usual."""
    otel_service_name: str = "dodo-agent"
    """The spans' `service.name`."""
    metrics_key: SecretStr = SecretStr("")
    """The bearer key `GET /metrics` asks for (`Authorization: Bearer <key>`). Empty:
    `/metrics` is open without authentication, and off (404) once any sign-in is on."""
