"""The project installed as a new user may install it, with the pip that Python 3.11's own
`venv` brings (23.2), reads a web page.

pip before 23.3 compares the names of extras unnormalised: justext (trafilatura's) asks
for `lxml[html_clean]`, lxml calls that extra `html-clean`, and pip 23.2 warned "lxml
does not provide the extra 'html_clean'" and left lxml_html_clean out, so every page
read failed with "lxml.html.clean module is now a separate project". pyproject.toml now
lists it itself; any other extra pip 23.2 leaves out fails the test, to be listed too.

Costly on purpose (a fresh venv, the project installed into it: about a minute with
pip's wheel cache warm): nothing cheaper shows what an older resolver leaves out, and
the tests' own venv is made with the newest pip (scripts/_venv.sh), which hides it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import orjson

from tests.conftest import unavailable
from tests.fakes.page_server import FakeSite, html_page

ROOT = Path(__file__).resolve().parents[2]
OLD_PIP = "pip==23.2.1"
DROPPED_EXTRA = re.compile(r"WARNING: (\S+) \S+ does not provide the extra '([^']+)'")
READ_A_PAGE = """
import asyncio, sys, orjson
import app
from app.config import Settings
from app.tools.page_reader import PageReader

async def main() -> None:
    settings = Settings(
        _env_file=None, outbound_allowlist="127.0.0.1", data_dir=sys.argv[2],
        database_url="sqlite+aiosqlite://",
    )
    async with PageReader.open(settings) as reader:
        page = await reader.read(sys.argv[1])
    print(orjson.dumps({"app": app.__file__, "title": page.title, "text": page.text}).decode())

asyncio.run(main())
"""


async def run(*command: str | Path, cwd: Path) -> tuple[int, str]:
    """The command's exit code and its output (stdout and stderr together)."""
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, output.decode("utf-8", "replace")


def project_copy(tmp_path: Path) -> Path:
    """What the Dockerfile copies to install from: pip builds in the source tree, and the
    worktree is not to be written."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "app", source / "app", ignore=shutil.ignore_patterns("__pycache__"))
    return source


async def test_installed_with_pip_23_2_the_project_reads_a_page(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    code, output = await run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    assert code == 0, output
    code, output = await run(python, "-m", "pip", "install", "-q", OLD_PIP, cwd=tmp_path)
    if code != 0:
        unavailable(f"{OLD_PIP} could not be installed (is PyPI reachable?): {output[-300:]}")
    code, installed = await run(
        python, "-m", "pip", "install", "-q", project_copy(tmp_path), cwd=tmp_path
    )
    assert code == 0, installed[-3000:]

    async with FakeSite().running() as site:
        url = site.add("/pump", html_page("Pump guide", "<p>The warranty lasts seven years.</p>"))
        # From tmp_path, so `app` is the installed one, not this worktree's.
        code, output = await run(python, "-c", READ_A_PAGE, url, tmp_path / "data", cwd=tmp_path)

    assert code == 0, output
    page = orjson.loads(output.splitlines()[-1])
    assert Path(page["app"]).is_relative_to(venv)
    assert page["title"] == "Pump guide"
    assert "The warranty lasts seven years." in page["text"]
    # Each extra pip 23.2 leaves out must bring only what pyproject.toml lists itself.
    assert set(DROPPED_EXTRA.findall(installed)) == {("lxml", "html_clean")}
