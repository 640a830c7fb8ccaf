"""An MkDocs hook: the built site loads nothing from another host.

The docs are read where the service runs, often on a network without internet, and a
page that loads a font, a script or a stylesheet from elsewhere also tells that host who
reads it. So each build fails when a page or a stylesheet loads a URL of another host (a
link to follow is fine). Named in mkdocs.yml's `hooks`.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError

_REMOTE = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
_CSS_REMOTE = re.compile(r"""(url\(\s*['"]?|@import\s+['"])\s*(https?:)?//""", re.IGNORECASE)
_LOADING = {"script", "img", "iframe", "source", "video", "audio", "embed", "object", "track"}
_LINKS_FOLLOWED = {"canonical", "alternate", "next", "prev", "author", "license", "help"}


class _Loads(HTMLParser):
    """The remote URLs a page loads by itself (scripts, styles, pictures, frames)."""

    def __init__(self) -> None:
        super().__init__()
        self.remote: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        urls = []
        if tag in _LOADING:
            urls += [values.get("src", ""), values.get("data", ""), values.get("poster", "")]
            urls += [u.split()[0] for u in values.get("srcset", "").split(",") if u.strip()]
        if tag == "link" and not set(values.get("rel", "").split()) <= _LINKS_FOLLOWED:
            urls.append(values.get("href", ""))
        if _CSS_REMOTE.search(values.get("style", "")):
            urls.append(values["style"])
        self.remote += [f"<{tag}> {url}" for url in urls if _REMOTE.match(url)]

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style" and _CSS_REMOTE.search(data):
            self.remote.append(f"<style> {data.strip()[:80]}")


def on_post_build(config: MkDocsConfig) -> None:
    site = Path(config.site_dir)
    found: list[str] = []
    for page in sorted(site.rglob("*.html")):
        parser = _Loads()
        parser.feed(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(site)}: {load}" for load in parser.remote]
    for sheet in sorted(site.rglob("*.css")):
        if match := _CSS_REMOTE.search(sheet.read_text(encoding="utf-8")):
            found.append(f"{sheet.relative_to(site)}: {match[0]}")
    if found:
        raise PluginError("The site loads from another host:\n  " + "\n  ".join(found))
