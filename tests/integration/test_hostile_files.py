"""Uploads built to hurt the reader: each ends `failed` with its reason, the server stays small.

The server mostly runs in this test's process, so its memory is read from
/proc/self/status: the peak (VmHWM) is reset to the current size before the
upload, and must grow by no more than a few tens of MB while the bomb is read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.service import running_service, service_settings
from tests.support.documents import (
    MB,
    docx_bomb_bytes,
    docx_bytes,
    pdf_bomb_bytes,
    pdf_bytes,
    pdf_nested_bytes,
    pdf_of_large_streams,
    pdf_of_plain_and_packed_streams,
    pptx_bomb_bytes,
    xlsx_bomb_bytes,
)
from tests.support.processes import ServiceProcess

BOMB_MB = 300
SERVER_GROWTH_MB = 40
PROCESS_GROUP_MB = 600
"""The most the server and its reading child may hold together while a hostile pdf is read."""


def memory_kb(field: str, pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def reset_peak_memory(pid: int | str = "self") -> None:
    """Make VmHWM the current RSS again (Linux `clear_refs` 5), so a new peak shows."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def upload_and_read(client: httpx.AsyncClient, name: str, data: bytes) -> dict[str, Any]:
    uploaded = await client.post("/file/upload", files={"file": (name, data)})
    assert uploaded.status_code == 200, uploaded.text
    info = await client.get(f"/file/info/{uploaded.json()['data']['fileId']}")
    record: dict[str, Any] = info.json()["data"]
    return record


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("bomb.docx", docx_bomb_bytes),
        ("bomb.pdf", pdf_bomb_bytes),
        ("bomb.xlsx", xlsx_bomb_bytes),
        ("bomb.pptx", pptx_bomb_bytes),
    ],
    ids=["docx", "pdf", "xlsx", "pptx"],
)
async def test_a_decompression_bomb_ends_failed_and_the_server_stays_small(
    tmp_path: Path, sqlite_url: str, name: str, build: Any
) -> None:
    bomb = build(BOMB_MB)
    assert len(bomb) < MB
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        await upload_and_read(client, "warm-up.docx", docx_bytes(["Warm the upload path up."]))
        before = memory_kb("VmRSS")
        reset_peak_memory()
        record = await upload_and_read(client, name, bomb)
        peak = memory_kb("VmHWM")
        health = await client.get("/health")

    assert record["status"] == "failed"
    assert "unpacks to more than 128 MB" in record["error"]
    assert "built to overload the reader" in record["error"]
    assert (peak - before) / 1024 < SERVER_GROWTH_MB
    assert health.status_code == 200


async def test_unfiltered_streams_are_read_and_count_as_their_own_length(
    tmp_path: Path, sqlite_url: str
) -> None:
    """A pdf whose streams have no filter was stored `failed` as damaged: the unpacking
    check asked pypdf to decode every stream, and it refuses "no filter"."""
    settings = service_settings(tmp_path, sqlite_url, file_max_inflated_bytes=4 * MB)
    plain = pdf_bytes(["Plain pages are read.", "Both of them."], compress=False)
    async with running_service(settings) as client:
        record = await upload_and_read(client, "plain.pdf", plain)
        text = (await client.get(f"/file/content/{record['fileId']}")).json()["data"]
        preview = await client.get(f"/file/preview/{record['fileId']}?page=2")
        under = await upload_and_read(client, "under.pdf", pdf_of_plain_and_packed_streams(1, 1))
        over = await upload_and_read(client, "over.pdf", pdf_of_plain_and_packed_streams(3, 2))
        bomb = await upload_and_read(client, "bomb.pdf", pdf_bomb_bytes(8))

    assert (record["status"], record["pages"]) == ("ready", 2)
    assert text == "Plain pages are read.\n\nBoth of them."
    assert preview.status_code == 200
    # Lines and no text: read to the end, and found empty.
    assert under["error"].startswith("No text could be found in this PDF")
    for refused in (over, bomb):
        assert refused["status"] == "failed"
        assert "unpacks to more than 4 MB" in refused["error"]


async def test_a_bomb_under_the_unpacking_budget_stops_at_the_memory_limit(
    tmp_path: Path, sqlite_url: str
) -> None:
    settings = service_settings(
        tmp_path, sqlite_url, file_max_inflated_bytes=1024 * MB, file_parse_memory_mb=256
    )
    async with running_service(settings) as client:
        before = memory_kb("VmRSS")
        reset_peak_memory()
        record = await upload_and_read(client, "bomb.docx", docx_bomb_bytes(BOMB_MB))
        peak = memory_kb("VmHWM")

    assert record["status"] == "failed"
    assert record["error"] == (
        "Reading a Word document needed more than 256 MB of memory, the limit: "
        "it may be damaged or built to overload the reader."
    )
    assert (peak - before) / 1024 < SERVER_GROWTH_MB


async def test_a_document_that_takes_too_long_to_read_ends_failed(
    tmp_path: Path, sqlite_url: str
) -> None:
    settings = service_settings(tmp_path, sqlite_url, file_parse_seconds=0.01)
    async with running_service(settings) as client:
        record = await upload_and_read(client, "notes.docx", docx_bytes(["Slow to read."]))

    assert record["status"] == "failed"
    assert record["error"] == (
        "Reading a Word document took longer than 0.01 seconds, the limit: "
        "it may be damaged or built to overload the reader."
    )


async def test_a_document_with_more_text_than_the_budget_ends_failed(
    tmp_path: Path, sqlite_url: str
) -> None:
    settings = service_settings(tmp_path, sqlite_url, file_max_chars=1000)
    async with running_service(settings) as client:
        small = await upload_and_read(client, "small.txt", b"a short note\n")
        large = await upload_and_read(client, "large.txt", b"many words\n" * 200)

    assert small["status"] == "ready"
    assert large == large | {
        "status": "failed",
        "error": "This is a text file with more than 1,000 characters of text, "
        "more than can be read.",
    }


async def test_a_pdf_of_deeply_nested_objects_ends_failed_and_the_server_lives(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with running_service(service_settings(tmp_path, sqlite_url)) as client:
        record = await upload_and_read(client, "nested.pdf", pdf_nested_bytes(200_000))
        health = await client.get("/health")
        after = await upload_and_read(client, "fine.docx", docx_bytes(["Still reading."]))

    assert record["status"] == "failed"
    assert "could not be read" in record["error"]
    assert health.status_code == 200
    assert after["status"] == "ready"


@pytest.mark.parametrize("one_page", [True, False], ids=["on-one-page", "a-page-each"])
async def test_a_pdf_of_ten_60_mb_streams_keeps_server_and_reader_under_600_mb(
    tmp_path: Path, one_page: bool
) -> None:
    """Read whole, ten 60 MB streams held the server and its reader at 899 MB together.

    The service runs as deployed (uvicorn, its own process), so its peak is
    exactly its own VmHWM; the reading child reports its own peak RSS
    (`ru_maxrss`), logged at DEBUG. The two peaks are added, which can only
    overstate the group's peak (they need not come at the same moment).
    """
    pdf = pdf_of_large_streams(10, 60, one_page=one_page)
    assert len(pdf) < 2 * MB
    env = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/app.db", "LOG_LEVEL": "DEBUG"}
    service = ServiceProcess("reader", tmp_path, env)
    await service.start()
    try:
        async with httpx.AsyncClient(base_url=service.url, timeout=60) as client:
            reset_peak_memory(service.pid)
            record = await upload_and_read(client, "streams.pdf", pdf)
            server_peak_mb = memory_kb("VmHWM", service.pid) / 1024
    finally:
        await service.stop()
    [reader_peak_mb] = map(
        int, re.findall(r"the document reader peaked at (\d+) MB", service.output())
    )

    assert record["status"] == "failed"
    if one_page:
        assert "unpacks to more than 128 MB" in record["error"]
    else:
        assert record["error"].startswith("No text could be found in this PDF")
    assert server_peak_mb + reader_peak_mb < PROCESS_GROUP_MB, (server_peak_mb, reader_peak_mb)
