"""The database and Redis a benchmark run uses, made for the run and removed after it.

PostgreSQL is a private server (initdb in a temporary folder, a free port)
when its binaries are on the machine: a thousand streams need more
connections than a shared server has to spare, and the figures should not
move with other users' queries. It keeps the defaults that matter to the
figures (fsync and synchronous commit on). `BENCH_POSTGRES_URL` points the
run at an existing server instead, where a database of the run's own is
made and dropped. Redis is the shared server (`BENCH_REDIS_URL`), used under
a key prefix of the run's own whose keys are deleted at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.procs import free_port

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
_PG_SETTINGS = ("max_connections=400", "shared_buffers=128MB", "listen_addresses=127.0.0.1")


@contextlib.contextmanager
def postgres(run_id: str, url: str | None = None, settings: Sequence[str] = ()) -> Iterator[str]:
    """An empty database for the run; yields its SQLAlchemy URL.

    In the server at `url` when given, else in a private server started with
    `settings` (`name=value`) beside the benchmark's own.
    """
    if url:
        with database_in(url, f"dodo_bench_{run_id}") as database:
            yield database
        return
    with _private_server(settings) as server:
        yield server


def _bindir() -> Path:
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(
            "PostgreSQL binaries not found (pg_config): install them, or set BENCH_POSTGRES_URL"
        ) from exc
    return Path(out.stdout.strip())


@contextlib.contextmanager
def _private_server(extra: Sequence[str]) -> Iterator[str]:
    bindir = _bindir()
    # initdb refuses to run as root; as root, the server runs as the `postgres` user.
    user = "postgres" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="dodo-bench-pg-"))
    if user:
        shutil.chown(folder, user, user)
    port = free_port()
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [
                *(str(bindir / "initdb"), "-D", str(folder / "data"), "-U", "postgres"),
                *("--auth=trust", "--no-sync", "-E", "UTF8"),
            ],
            check=True,
            capture_output=True,
            user=user,
        )
        settings = [arg for s in (*_PG_SETTINGS, *extra) for arg in ("-c", s)]
        server = subprocess.Popen(
            [
                *(str(bindir / "postgres"), "-D", str(folder / "data"), "-p", str(port)),
                *("-k", str(folder), *settings),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            user=user,
        )
        _wait_ready(bindir, port, server)
        yield f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(bindir: Path, port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("the private PostgreSQL server exited at start-up")
        ready = subprocess.run(
            [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-q"], check=False
        )
        if ready.returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("the private PostgreSQL server did not start within 30 s")


@contextlib.contextmanager
def database_in(server_url: str, name: str) -> Iterator[str]:
    asyncio.run(_admin(server_url, f'CREATE DATABASE "{name}"'))
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    finally:
        asyncio.run(_admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _admin(url: str, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def delete_redis_keys(url: str, prefix: str) -> None:
    from redis import Redis

    client = Redis.from_url(url)
    try:
        for key in client.scan_iter(match=f"{prefix}*"):
            client.delete(key)
    finally:
        client.close()
