"""Text recognition (OCR) for scanned pages and pictures of text, by Tesseract.

Tesseract is Debian's `tesseract-ocr` with its language packages
(scripts/install-ocr): a kept engine that works offline. It runs as a
program, from the document reader's child process (documents/isolated.py),
so it inherits the child's memory cap, and it dies with the child (a
parent-death signal) when the child is killed at its wall-time limit.

A page is rendered by pdfium at `DPI` (Tesseract reads best at about 300);
a picture is given to Tesseract as it is, once its size is checked.
Tesseract puts spaces between Chinese characters: they are taken out.

Tesseract's first language leads: with `eng` first (as in `OCR_LANGS`'
default) it read some lines of a Chinese page as Latin letters, or as
nothing, where `chi_sim` first read them right; with `chi_sim` first it ran
some English words together. So a picture whose text comes out mostly
Chinese, Japanese or Korean is read again with that language first, and
the rest of its document is read that way from the start (`led_by`).
"""

from __future__ import annotations

import ctypes
import io
import logging
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image


log = logging.getLogger(__name__)

DPI = 300
MAX_PIXELS = 40_000_000
"""Of a picture read by OCR: an A4 page at 600 DPI is 35 M; more is a bomb or a poster."""
_PR_SET_PDEATHSIG = 1
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_CJK_GAP = re.compile(rf"(?<=[{_CJK}]) +(?=[{_CJK}])")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_CJK_LANGS = frozenset(
    f"{lang}{vertical}"
    for lang in ("chi_sim", "chi_tra", "jpn", "kor")
    for vertical in ("", "_vert")
)
_CJK_SHARE = 0.3
"""Of a text's characters (but spaces), the share in CJK scripts past which it is theirs."""


class OcrFailed(Exception):
    """Tesseract could not read the picture; `str()` says why."""


@dataclass(frozen=True, slots=True)
class OcrSettings:
    """What the reading child needs to run OCR; given by `LibrarySettings.parsing`."""

    engine: str
    """The path of the `tesseract` program; empty when it is not installed."""
    langs: str
    """Tesseract's `-l`: `eng+chi_sim`, the installed ones of `OCR_LANGS`; "" for none."""
    max_pages: int
    """Pages of one document read by OCR at most."""


@cache
def tesseract_path() -> str:
    """Where `tesseract` is, or "" when it is not installed (looked up once)."""
    return shutil.which("tesseract") or ""


@cache
def usable_languages(engine: str, langs: str) -> str:
    """Of `langs` (`eng+chi_sim`), those installed, `+`-joined; "" for none.

    Tesseract given a language it lacks beside one it has reads with the one
    it has and says nothing: so the missing ones are named here, once, in the log.
    """
    try:
        listed = subprocess.run(
            [engine, "--list-langs"], capture_output=True, check=False, timeout=30
        ).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    installed = set(listed.split()[1:])  # after "List of available languages in ...:"
    wanted = langs.split("+")
    missing = [lang for lang in wanted if lang not in installed]
    if missing:
        log.warning(
            "OCR_LANGS names languages Tesseract does not have: %s (install tesseract-ocr-<lang>)",
            ", ".join(missing),
        )
    return "+".join(lang for lang in wanted if lang in installed)


def recognise_file(settings: OcrSettings, path: Path) -> str:
    """The text of a PNG or JPEG picture; raises `OcrFailed`."""
    from PIL import Image  # here: only the isolated reader's process recognises text

    try:
        with Image.open(path) as image:
            width, height = image.size
    except (OSError, Image.DecompressionBombError) as exc:
        raise OcrFailed("The picture could not be read: it may be damaged.") from exc
    if width * height > MAX_PIXELS:
        raise OcrFailed(
            f"The picture is {width}x{height} pixels, more than text recognition reads "
            f"({MAX_PIXELS // 1_000_000} million pixels)."
        )
    return _read(settings, path.read_bytes())


def recognise_image(settings: OcrSettings, image: Image.Image) -> str:
    """The text of a rendered page; raises `OcrFailed`."""
    out = io.BytesIO()
    image.save(out, "PNG")
    return _read(settings, out.getvalue())


def led_by(settings: OcrSettings, text: str) -> OcrSettings:
    """`settings` with their first CJK language leading, when `text` (read with them) is
    mostly in CJK scripts and a Latin one leads; else `settings` themselves."""
    langs = settings.langs.split("+")
    lead = next((lang for lang in langs if lang in _CJK_LANGS), None)
    if lead is None or langs[0] in _CJK_LANGS:
        return settings
    written = "".join(text.split())
    if not written or len(_CJK_CHAR.findall(written)) < _CJK_SHARE * len(written):
        return settings
    return replace(settings, langs="+".join([lead, *(lang for lang in langs if lang != lead)]))


def _read(settings: OcrSettings, picture: bytes) -> str:
    text = _tesseract(settings, picture)
    led = led_by(settings, text)
    return text if led is settings else _tesseract(led, picture)


def _tesseract(settings: OcrSettings, picture: bytes) -> str:
    try:
        done = subprocess.run(
            [settings.engine, "stdin", "stdout", "-l", settings.langs, "--dpi", str(DPI)],
            input=picture,
            capture_output=True,
            check=False,
            # One thread: the machine's cores are the other documents' and the server's.
            env={"OMP_THREAD_LIMIT": "1"},
            # Safe here: the reading child has one thread.
            preexec_fn=_die_with_parent,
        )
    except OSError as exc:
        raise OcrFailed("Text recognition (OCR) could not be started.") from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no reason"]
        raise OcrFailed(f"Text recognition (OCR) failed: {reason[0][:200]}")
    text = done.stdout.decode("utf-8", "replace").replace("\f", "")
    return _CJK_GAP.sub("", text).strip()


def _die_with_parent() -> None:
    """In Tesseract's process, before it starts: be killed when the reading child dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
