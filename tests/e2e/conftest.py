"""Browser tests: Debian's Chromium, driven by Playwright, against the real app.

The app runs under uvicorn on a real socket in the test's event loop (the same
loop Playwright's async API uses), on SQLite and the in-process task registry,
against the fake OpenAI and Tavily servers. The browser is the system's
`chromium` package, which `scripts/test` installs where it can; Playwright
never downloads one. Without Chromium these tests skip and say why; under
CI=true that is a failure.

The browser is shared by all of them, so they all run in one event loop (mark
each module `pytestmark = LOOP`); each test gets a fresh browser context, and
an uncaught error in the page fails the test. Screenshots go to
`test-artifacts/`, which git ignores.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, ViewportSize, async_playwright, expect

from app.config import Settings
from app.factory import create_app
from tests.conftest import unavailable
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.tavily_server import FakeTavily
from tests.integration.service import service_settings
from tests.support.server import serve

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DESKTOP = ViewportSize(width=1280, height=800)
PHONE = ViewportSize(width=390, height=844)
LOOP = pytest.mark.asyncio(loop_scope="package")
WAIT_MS = 15_000
"""Longest wait for something to appear: generous, the machine is shared."""


@pytest.fixture(scope="package")
def chromium() -> Path:
    if not CHROMIUM.is_file():
        unavailable(
            f"Chromium is not installed at {CHROMIUM}: run ./scripts/test as root to install it "
            "(apt-get install chromium), or set CHROMIUM_PATH"
        )
    return CHROMIUM


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def browser(chromium: Path) -> AsyncIterator[Browser]:
    """One browser for every browser test: starting one is most of a test's cost."""
    expect.set_options(timeout=WAIT_MS)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


def _sockets() -> set[str]:
    """This process's open TCP sockets (their inodes): the app's, the fakes' and their clients'.

    TCP only: uvloop makes a new socket pair for its signal wake-ups each time the
    loop starts running, which is once per test here, and closes it only with the loop.
    """
    tcp: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            lines = Path(table).read_text().splitlines()[1:]
            tcp.update(f"socket:[{line.split()[9]}]" for line in lines)
    found = set()
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target in tcp:
                found.add(target)
    return found


@pytest_asyncio.fixture(loop_scope="package", autouse=True)
async def leaves_nothing_running() -> AsyncIterator[None]:
    """Fail a test that leaves tasks, threads or sockets behind in the shared loop.

    The browser tests share one event loop, so a run, heartbeat or upstream
    call that outlived its test's app would go on inside the next test, and
    fail it instead. Autouse, so it is torn down after every other fixture of
    the test: what is still there then has outlived its owner.
    """
    tasks = asyncio.all_tasks()
    threads = set(threading.enumerate())
    sockets = _sockets()
    yield
    current = asyncio.current_task()
    left_tasks = [t for t in asyncio.all_tasks() - tasks if t is not current and not t.done()]
    # The loop's default executor keeps its idle workers for the loop's life (named by
    # the loop: asyncio's or uvloop's); work in one is awaited by a task, which the
    # check above would have found.
    left_threads = [
        t
        for t in set(threading.enumerate()) - threads
        if t.is_alive() and not t.name.startswith(("asyncio_", "uvloop_"))
    ]
    left_sockets = _sockets() - sockets
    assert not left_tasks, f"tasks outlived the test: {left_tasks}"
    assert not left_threads, f"threads outlived the test: {left_threads}"
    assert not left_sockets, f"sockets outlived the test: {sorted(left_sockets)}"


@pytest_asyncio.fixture(loop_scope="package")
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport=DESKTOP)
    context.set_default_timeout(WAIT_MS)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    await context.close()
    assert errors == [], f"uncaught errors in the page: {errors}"


@dataclass
class Upstreams:
    llm: FakeOpenAI
    search: FakeTavily


@pytest_asyncio.fixture(loop_scope="package")
async def upstreams() -> AsyncIterator[Upstreams]:
    async with FakeOpenAI() as llm, FakeTavily().running() as search:
        yield Upstreams(llm, search)


@pytest.fixture
def app_settings(tmp_path: Path, upstreams: Upstreams) -> Callable[..., Settings]:
    """Settings for the app under test: the fakes, web search and follow-ups on."""

    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "llm_base_url": upstreams.llm.base_url,
            "tavily_api_key": "tvly-test",
            "tavily_base_url": upstreams.search.base_url,
            "recommendations_enabled": True,
            **overrides,
        }
        return service_settings(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/app.db", **values)

    return build


@pytest_asyncio.fixture(loop_scope="package")
async def app_url(app_settings: Callable[..., Settings]) -> AsyncIterator[str]:
    async with serve(create_app(app_settings())) as url:
        yield url


def artifact(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name
