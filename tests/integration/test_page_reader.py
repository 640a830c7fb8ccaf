"""The page reader over real HTTP: a local site's pages read as a reader wants them, safely.

The site (tests/fakes/page_server.py) is on loopback, which the outbound
guard refuses unless `OUTBOUND_ALLOWLIST` names it: so these tests allow
127.0.0.1, and the guard's own refusals are checked without the allowance.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.tools.page_reader import PageError, PageReader
from tests.fakes.page_server import Answer, FakeSite, html_page
from tests.integration.service import service_settings
from tests.support.documents import image_bytes, pdf_bytes
from tests.support.polling import eventually

WARRANTY = (
    "<h1>Heat pump warranty</h1><p>The warranty of the pump lasts seven years from the day it "
    "was installed, as the maker states in its terms.</p><h2>Exclusions</h2><p>Frost damage is "
    "not covered unless a certified fitter installed the unit.</p>"
)


@pytest.fixture
async def site() -> AsyncIterator[FakeSite]:
    async with FakeSite().running() as fake:
        yield fake


def reader_settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"outbound_allowlist": "127.0.0.1"}
    values.update(overrides)
    return service_settings(tmp_path, "sqlite+aiosqlite://", **values)


@asynccontextmanager
async def opened(tmp_path: Path, **overrides: Any) -> AsyncIterator[PageReader]:
    async with PageReader.open(reader_settings(tmp_path, **overrides)) as reader:
        yield reader


async def test_a_page_is_read_as_its_title_and_main_text(tmp_path: Path, site: FakeSite) -> None:
    url = site.add("/warranty", html_page("Pump warranty | Example Pumps", WARRANTY))
    async with opened(tmp_path) as reader:
        page = await reader.read(url)

    assert page.title == "Pump warranty | Example Pumps"
    assert page.url == url
    assert "# Heat pump warranty" in page.text
    assert "## Exclusions" in page.text
    assert "seven years from the day it was installed" in page.text
    for left_out in ("Shop the catalogue", "trackingScriptRan", "hidden-style-rule", "Accept all"):
        assert left_out not in page.text
    assert "All rights reserved" not in page.text
    [seen] = site.seen("/warranty")
    assert seen.user_agent.startswith("dodo-agent/")


async def test_no_cookie_or_credential_is_sent_on(tmp_path: Path, site: FakeSite) -> None:
    """A redirect that sets a cookie: the next request does not carry it back."""
    site.add(
        "/old",
        Answer(b"", status=302, headers={"location": "/new", "set-cookie": "session=abc; Path=/"}),
    )
    url = site.add("/new", html_page("New place", WARRANTY))
    async with opened(tmp_path) as reader:
        page = await reader.read(site.base_url + "/old")
        again = site.add("/again", html_page("Again", WARRANTY))
        await reader.read(again)
        with pytest.raises(PageError, match="user name or password"):
            await reader.read(url.replace("http://", "http://me:secret@"))

    assert page.url == url
    pages = [s for s in site.requests if s.path != "/robots.txt"]
    assert [(s.path, s.cookie, s.authorization) for s in pages] == [
        ("/old", "", ""),
        ("/new", "", ""),
        ("/again", "", ""),
    ]


async def test_the_charset_is_the_declared_one_or_detected(tmp_path: Path, site: FakeSite) -> None:
    chinese = (
        "<h1>热泵保修</h1><p>这台热泵的保修期为七年，自安装之日起计算，以制造商的条款为准。</p>"
    )
    declared = site.add("/gbk", html_page("热泵", chinese, charset="gb18030"))
    plain = "保修期为七年，自安装之日起计算。这是制造商在条款中写明的。".encode("gb18030")
    detected = site.add("/notes.txt", Answer(plain, "text/plain"))
    async with opened(tmp_path) as reader:
        page = await reader.read(declared)
        text = await reader.read(detected)

    assert page.title == "热泵"
    assert "保修期为七年" in page.text
    assert text.text == "保修期为七年，自安装之日起计算。这是制造商在条款中写明的。"


async def test_text_and_markdown_come_as_they_are(tmp_path: Path, site: FakeSite) -> None:
    markdown = "# Pumps\n\n- seven years\n- frost excluded\n"
    md = site.add("/pumps.md", Answer(markdown.encode(), "text/markdown; charset=utf-8"))
    async with opened(tmp_path) as reader:
        page = await reader.read(md)

    assert (page.title, page.text) == ("pumps.md", markdown.strip())


async def test_a_pdf_is_read_by_the_isolated_reader_with_its_pages(
    tmp_path: Path, site: FakeSite
) -> None:
    pdf = pdf_bytes(["Warranty: seven years.", "Frost damage is excluded."])
    url = site.add("/terms.pdf", Answer(pdf, "application/pdf"))
    async with opened(tmp_path) as reader:
        page = await reader.read(url)

    assert page.text == "[page 1]\nWarranty: seven years.\n\n[page 2]\nFrost damage is excluded."


async def test_other_types_and_failures_are_errors_the_model_reads(
    tmp_path: Path, site: FakeSite
) -> None:
    picture = site.add("/photo.png", Answer(image_bytes(), "image/png"))
    async with opened(tmp_path) as reader:
        with pytest.raises(PageError, match=r"image/png, which cannot be read as text"):
            await reader.read(picture)
        with pytest.raises(PageError, match="HTTP 404"):
            await reader.read(site.base_url + "/missing")
        with pytest.raises(PageError, match="Only http and https"):
            await reader.read("file:///etc/passwd")


async def test_the_guard_refuses_local_addresses_and_redirects_to_them(
    tmp_path: Path, site: FakeSite
) -> None:
    to_metadata = site.add(
        "/jump", Answer(b"", status=302, headers={"location": "http://169.254.169.254/latest"})
    )
    async with opened(tmp_path, outbound_allowlist="") as reader:
        with pytest.raises(PageError, match="private, local or metadata address"):
            await reader.read(site.base_url + "/jump")
    assert site.requests == []
    async with opened(tmp_path, fetch_respect_robots=False) as reader:
        with pytest.raises(PageError, match="private, local or metadata address"):
            await reader.read(to_metadata)
    assert [s.path for s in site.requests] == ["/jump"]


async def test_the_size_cap_cuts_a_page_and_refuses_a_pdf(tmp_path: Path, site: FakeSite) -> None:
    long_page = site.add("/long", html_page("Long", "<p>Pumps move heat. </p>" * 4000))
    big_pdf = site.add("/big.pdf", Answer(pdf_bytes(["Pumps. " * 2000] * 20), "application/pdf"))
    async with opened(tmp_path, outbound_max_bytes=20_000) as reader:
        page = await reader.read(long_page)
        with pytest.raises(PageError, match="larger than 20,000 bytes"):
            await reader.read(big_pdf)

    assert page.cut
    assert "Pumps move heat." in page.text


async def test_robots_txt_is_honoured_unless_turned_off(tmp_path: Path, site: FakeSite) -> None:
    site.robots = "User-agent: dodo-agent\nDisallow: /private/\n\nUser-agent: *\nAllow: /\n"
    private = site.add("/private/plans", html_page("Plans", WARRANTY))
    public = site.add("/public", html_page("Public", WARRANTY))
    async with opened(tmp_path) as reader:
        with pytest.raises(PageError, match=r"robots\.txt does not let dodo-agent read"):
            await reader.read(private)
        await reader.read(public)
    assert site.seen("/private/plans") == []
    assert len(site.seen("/robots.txt")) == 1  # kept like a page

    async with opened(tmp_path, fetch_respect_robots=False) as reader:
        await reader.read(private)
    assert len(site.seen("/private/plans")) == 1


async def test_a_page_read_again_comes_from_the_cache(tmp_path: Path, site: FakeSite) -> None:
    url = site.add("/warranty", html_page("Warranty", WARRANTY))
    async with opened(tmp_path) as reader:
        first = await reader.read(url)
        second = await reader.read(url + "#exclusions")
    assert first == second
    assert len(site.seen("/warranty")) == 1

    async with opened(tmp_path, fetch_cache_seconds=0) as reader:
        await reader.read(url)
        await reader.read(url)
    assert len(site.seen("/warranty")) == 3


@pytest.mark.redis
async def test_instances_share_the_cache_through_redis(
    tmp_path: Path, site: FakeSite, redis_url: str, redis_prefix: str
) -> None:
    url = site.add("/warranty", html_page("Warranty", WARRANTY))
    shared = {"redis_url": redis_url, "redis_prefix": redis_prefix}
    async with opened(tmp_path, **shared) as one, opened(tmp_path, **shared) as other:
        first = await one.read(url)
        second = await other.read(url)

    assert first == second
    assert len(site.seen("/warranty")) == 1


async def test_one_host_gets_at_most_its_share_of_fetches_at_once(
    tmp_path: Path, site: FakeSite
) -> None:
    urls = [site.add(f"/slow/{n}", html_page(f"Slow {n}", WARRANTY)) for n in range(5)]
    site.held = {f"/slow/{n}" for n in range(5)}
    async with opened(tmp_path, fetch_per_host=2, fetch_respect_robots=False) as reader:
        reads = [asyncio.create_task(reader.read(u)) for u in urls]

        async def two_waiting() -> bool:
            return site.waiting == 2

        await eventually(two_waiting, what="two fetches waiting at the site")
        site.release.set()
        pages = await asyncio.gather(*reads)

    assert [p.title for p in pages] == [f"Slow {n}" for n in range(5)]
    assert site.most_waiting == 2


async def test_a_redis_that_does_not_answer_is_a_cache_miss_not_a_failure(
    tmp_path: Path, site: FakeSite
) -> None:
    url = site.add("/warranty", html_page("Warranty", WARRANTY))
    async with opened(tmp_path, redis_url="redis://127.0.0.1:1/0") as reader:
        pages = [await reader.read(url), await reader.read(url)]

    assert [p.title for p in pages] == ["Warranty", "Warranty"]
    assert len(site.seen("/warranty")) == 2
