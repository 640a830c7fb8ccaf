"""The chat page is served by the app itself, whole, with nothing fetched from elsewhere."""

from __future__ import annotations

import hashlib
import posixpath
import re
from pathlib import Path

import httpx

from app.api.web import WEB_DIR
from tests.integration.service import running_service, service_settings

LOCAL_REFERENCE = re.compile(r"""(?:src|href)="([^"]+)"|from '([^']+)'|import\('([^']+)'\)""")
SOURCES = ["index.html", "app.css", *(f"js/{p.name}" for p in (WEB_DIR / "js").glob("*.js"))]


def local_references(name: str) -> list[str]:
    """The files `name` loads: src/href attributes, and ES module imports, static or not."""
    text = (WEB_DIR / name).read_text()
    found = ["".join(groups) for groups in LOCAL_REFERENCE.findall(text)]
    return [posixpath.normpath(posixpath.join(posixpath.dirname(name), ref)) for ref in found]


def test_page_sources_name_no_other_host() -> None:
    for name in SOURCES:
        text = (WEB_DIR / name).read_text()
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", text), name


def test_vendored_files_are_the_recorded_npm_files() -> None:
    readme = (WEB_DIR / "vendor" / "README.md").read_text()
    rows = re.findall(r"\| `([\w/.]+\.js)` \|[^\n]*\| `([0-9a-f]{64})` \|", readme)
    assert {name for name, _ in rows} == {
        "marked/marked.esm.js",
        "dompurify/purify.es.js",
        "highlight/highlight.min.js",
    }
    for name, digest in rows:
        data = (WEB_DIR / "vendor" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
        assert (WEB_DIR / "vendor" / name).with_name("LICENSE").is_file()


async def test_root_serves_the_page_and_everything_it_loads(
    tmp_path: Path, sqlite_url: str
) -> None:
    settings = service_settings(tmp_path, sqlite_url, api_keys="key-a:alice")
    async with running_service(settings) as client:
        page = await client.get("/")
        assets = {
            ref: await client.get(f"/{ref}") for name in SOURCES for ref in local_references(name)
        }
        docs = await client.get("/docs")
        api = await client.get("/session/list")

    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "connect-src 'self'" in csp
    assert "<title>dodo-agent</title>" in page.text
    assert "js/main.js" in assets
    assert "vendor/marked/marked.esm.js" in assets
    assert "vendor/highlight/highlight.min.js" in assets
    for ref, response in assets.items():
        assert response.status_code == 200, ref
        if ref.endswith(".js"):
            assert "javascript" in response.headers["content-type"], ref
    # The page needs no key; the API behind it does.
    assert docs.status_code == 200
    assert api.status_code == 401


async def test_a_path_that_is_neither_route_nor_file_answers_the_json_404(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        answers: list[httpx.Response] = [
            await client.get("/no/such/thing"),
            await client.post("/no/such/thing", json={}),
            await client.delete("/index.html"),
        ]
    for response in answers:
        assert response.status_code == 404
        assert response.json() == {"code": 404, "message": "Not Found", "data": None}
