"""A fetched page's bytes as what a reader wants of it: its title and its main text.

- HTML: the main text by trafilatura (made for this, and run offline on the
  bytes we fetched): headings kept as Markdown `#` lines, navigation,
  scripts, styles, footers and cookie banners dropped. A page trafilatura
  finds no main content in falls back to all its visible text.
- PDF: through the isolated document reader uploads go through
  (documents/isolated.py: a child process with memory and time caps), so
  a hostile PDF costs the child, not the server.
- `text/plain` and Markdown: as they are.
- Anything else: `UnreadablePage`, whose text the model reads.

The charset is the one the `Content-Type` header names, else the one the
HTML's `<meta>` names, else detected (`decode_text`, as for uploads).
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass
from html import unescape
from pathlib import Path

from app.documents.extract import PDF, UnreadableFile, decode_text
from app.documents.isolated import ParseLimits, extract_isolated

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
PDF_TYPES = frozenset({"application/pdf"})
READABLE_TYPES = HTML_TYPES | TEXT_TYPES | PDF_TYPES
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_META_SNIFF_BYTES = 4096
_TITLE_CHARS = 300


class UnreadablePage(Exception):
    """The page was fetched but has no text to give; `str()` says why, for the model."""


@dataclass(frozen=True, slots=True)
class PageText:
    title: str
    text: str


def media_type(content_type: str) -> str:
    """`text/html; charset=utf-8` -> `text/html`."""
    return content_type.partition(";")[0].strip().lower()


def refused_type(content_type: str) -> str | None:
    """Why a body of this type is not worth reading (said before it is read), or None."""
    kind = media_type(content_type)
    if not kind or kind in READABLE_TYPES:
        return None
    return f"The page is {kind}, which cannot be read as text (HTML, PDF, plain text or Markdown)."


async def page_text(body: bytes, content_type: str, url: str, parsing: ParseLimits) -> PageText:
    """The title and main text of a page whose type is readable; raises `UnreadablePage`."""
    kind = media_type(content_type)
    if kind in PDF_TYPES or (not kind and body.startswith(b"%PDF-")):
        return await _pdf(body, url, parsing)
    text = _decode(body, content_type)
    if kind in TEXT_TYPES:
        return PageText(_name(url), text.strip())
    if kind in HTML_TYPES or not kind:
        return await asyncio.to_thread(_html, text, url)
    raise UnreadablePage(refused_type(content_type) or f"The page is {kind}.")


def _decode(body: bytes, content_type: str) -> str:
    declared = _charset(content_type) or _meta_charset(body)
    if declared:
        try:
            return body.decode(declared, errors="replace")
        except LookupError:
            pass  # a charset Python does not know: detect it instead
    text = decode_text(body)
    if text is None:
        raise UnreadablePage("The page's encoding could not be recognised.")
    return text


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        name, _, value = part.partition("=")
        if name.strip().lower() == "charset" and value.strip(' "'):
            return value.strip(' "')
    return None


def _meta_charset(body: bytes) -> str | None:
    found = _META_CHARSET.search(body[:_META_SNIFF_BYTES])
    return found.group(1).decode("ascii") if found else None


def _html(html: str, url: str) -> PageText:
    """Main text and title; blocking (lxml parses the whole page), so run in a thread.

    trafilatura is imported here, at the first page read: it and what it brings
    (lxml, dateparser, babel) would cost every worker at start.
    """
    import trafilatura

    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        favor_recall=True,
        deduplicate=True,
    )
    if not text:
        text = trafilatura.html2txt(html)
    title = _title(html)
    if not text or not text.strip():
        raise UnreadablePage("The page has no readable text (it may need JavaScript to show any).")
    return PageText(title or _name(url), text.strip())


def _title(html: str) -> str:
    """The `<title>`, else what trafilatura's metadata finds (an `og:title`, the first heading)."""
    found = _TITLE.search(html[:200_000])
    title = " ".join(unescape(found.group(1)).split()) if found else ""
    if title:
        return title[:_TITLE_CHARS]
    import trafilatura

    metadata = trafilatura.extract_metadata(html)
    return ((metadata.title if metadata else None) or "")[:_TITLE_CHARS]


async def _pdf(body: bytes, url: str, parsing: ParseLimits) -> PageText:
    with tempfile.TemporaryDirectory(prefix="page-") as folder:
        path = Path(folder) / "page.pdf"
        await asyncio.to_thread(path.write_bytes, body)
        try:
            document = await extract_isolated(path, PDF, parsing)
        except UnreadableFile as exc:
            raise UnreadablePage(str(exc)) from exc
    text = "\n\n".join(f"[page {s.first}]\n{s.text}" for s in document.sections)
    return PageText(_name(url), text)


def _name(url: str) -> str:
    """A title for a page that has none: the last part of its path, or its host."""
    path = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    return path.rsplit("/", 1)[-1] or url
