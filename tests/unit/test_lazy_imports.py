"""What a worker loads before its first turn: only what every request needs.

Each library below costs every worker start-up time and resident memory
(bench/startup.py measures both); it must come in with the first turn, the
configuration, or the migration that needs it, never with `import app.main`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory

from app.store.engine import MIGRATIONS_DIR, head_revision

CHECKOUT = Path(__file__).resolve().parents[2]
LAZY = (
    "langgraph",  # deep research
    "langchain_core",
    "langsmith",
    "psycopg",  # deep research's checkpoints on PostgreSQL
    "asyncpg",  # DATABASE_URL on PostgreSQL
    "pptx",  # the deck builder
    "pypdfium2",
    "mcp",  # MCP servers, when configured
    "mcp_types",
    "redis",  # REDIS_URL
    "alembic",  # a database not at the newest migration
    "docx",  # documents: parsed in the isolated reader's process only
    "openpyxl",
    "pypdf",
    "PIL",
    "trafilatura",  # fetch_page, at its first HTML page
    "yaml",  # a MODELS file in YAML
    "a2a",  # the A2A server (its first call) and the host agent's remote agents
    "google.protobuf",
    "rich",  # httpx's command line, which the A2A SDK's httpx imports
    "jwt",  # OIDC_ISSUER
    "ag_ui",  # the AG-UI format, at its first request
)

_LOADED = """
import asyncio, json, sys
import app.main  # as uvicorn imports it: the served app built from the environment
from app.config import Settings
from app.factory import create_app

lazy = {lazy!r}
loaded = lambda: sorted(name for name in lazy if name in sys.modules)
after_import = loaded()

async def serve_and_stop():
    app = create_app(Settings(data_dir={data!r}, database_url={url!r}))
    async with app.router.lifespan_context(app):
        return loaded()

print(json.dumps({{"import": after_import, "started": asyncio.run(serve_and_stop())}}))
"""


def _loaded_in_fresh_process(data: Path) -> dict[str, list[str]]:
    script = _LOADED.format(lazy=LAZY, data=str(data), url=f"sqlite+aiosqlite:///{data}/app.db")
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_a_worker_on_the_embedded_defaults_loads_no_agent_protocol_or_backend_library(
    tmp_path: Path,
) -> None:
    first = _loaded_in_fresh_process(tmp_path)
    assert first["import"] == [], f"imported with app.main: {first['import']}"
    assert first["started"] == ["alembic"], "only the first start, which migrates, loads Alembic"

    again = _loaded_in_fresh_process(tmp_path)
    assert again == {"import": [], "started": []}, f"loaded before any turn: {again}"


def test_the_newest_migration_file_is_alembics_head() -> None:
    """A start skips Alembic when the database holds `head_revision()`: it must be the head."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert head_revision() == ScriptDirectory.from_config(config).get_current_head()
