"""The /file endpoints over real HTTP, with real documents, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from tests.integration.service import running_service, service_settings
from tests.support.documents import (
    docx_bytes,
    image_bytes,
    pdf_bytes,
    scanned_pdf_bytes,
    xlsx_bytes,
)

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def settings_for(tmp_path: Path, database_url: str, **overrides: Any) -> Settings:
    keys = "key-alice:alice,key-bob:bob"
    return service_settings(tmp_path, database_url, api_keys=keys, **overrides)


@contextlib.asynccontextmanager
async def service(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with running_service(settings) as client:
        client.headers.update(ALICE)
        yield client


def blobs(settings: Settings) -> list[Path]:
    return sorted(p for p in (settings.data_dir / "files").rglob("*") if p.is_file())


async def upload(
    client: httpx.AsyncClient, name: str, data: bytes, headers: dict[str, str] | None = None
) -> httpx.Response:
    return await client.post("/file/upload", files={"file": (name, data)}, headers=headers)


async def test_upload_then_every_endpoint(tmp_path: Path, database_url: str) -> None:
    settings = settings_for(tmp_path, database_url)
    data = pdf_bytes(["The pump manual.", "The warranty lasts seven years."])
    async with service(settings) as client:
        uploaded = await upload(client, "manual.pdf", data)
        file_id = uploaded.json()["data"]["fileId"]
        info = await client.get(f"/file/info/{file_id}")
        content = await client.get(f"/file/content/{file_id}")
        exists = await client.get(f"/file/exists/{file_id}")
        listing = await client.get("/file/list")
        download = await client.get(f"/file/download/{file_id}")
        stored_while_there = blobs(settings)
        deleted = await client.delete(f"/file/{file_id}")
        after = [
            await client.get(f"/file/info/{file_id}"),
            await client.get(f"/file/content/{file_id}"),
            await client.get(f"/file/download/{file_id}"),
            await client.delete(f"/file/{file_id}"),
        ]
        exists_after = await client.get(f"/file/exists/{file_id}")
        listing_after = await client.get("/file/list")

    assert uploaded.status_code == 200
    assert uploaded.json() == {
        "code": 200,
        "message": "success",
        "data": {
            "fileId": file_id,
            "fileName": "manual.pdf",
            "size": len(data),
            "mimeType": "application/pdf",
        },
    }
    record = info.json()["data"]
    assert record == {
        "fileId": file_id,
        "fileName": "manual.pdf",
        "size": len(data),
        "mimeType": "application/pdf",
        "status": "ready",
        "error": None,
        "source": "upload",
        "createTime": record["createTime"],
        "ocr": False,
        "pages": 2,
    }
    assert record["createTime"].endswith("Z")
    assert content.json()["data"] == "The pump manual.\n\nThe warranty lasts seven years."
    assert exists.json()["data"] is True
    assert listing.json()["data"] == [{k: v for k, v in record.items() if k != "pages"}]
    assert download.status_code == 200
    assert download.content == data
    assert download.headers["content-type"] == "application/pdf"
    assert download.headers["content-disposition"] == "inline; filename*=UTF-8''manual.pdf"
    # The bytes are stored once, under the generated id, never under the client's name;
    # beside them, what counting the pages for `/file/info` kept of the preview.
    root = settings.data_dir / "files"
    assert [p.relative_to(root).as_posix() for p in stored_while_there] == [
        f"previews/uploads/{file_id}/page-1",
        f"previews/uploads/{file_id}/pages",
        f"uploads/{file_id}",
    ]
    assert deleted.json()["data"] == {"fileId": file_id, "deleted": True}
    assert [r.status_code for r in after] == [404, 404, 404, 404]
    assert after[0].json() == {"code": 404, "message": "File not found", "data": None}
    assert exists_after.json()["data"] is False
    assert listing_after.json()["data"] == []
    assert blobs(settings) == []


@pytest.mark.parametrize(
    ("name", "data", "mime", "text"),
    [
        (
            "notes.docx",
            docx_bytes(["First paragraph.", "Second paragraph."], table=[["a", "b"]]),
            DOCX_MIME,
            "Test document\n\nFirst paragraph.\n\nSecond paragraph.\n\na | b",
        ),
        (
            "notes.txt",
            "保修期为七年。\n第二行".encode("gb18030"),
            "text/plain",
            "保修期为七年。\n第二行",
        ),
        (
            "README.md",
            b"# Title\n\nSome *markdown*.\n",
            "text/markdown",
            "# Title\n\nSome *markdown*.",
        ),
        ("sales.csv", b"region,units\nNorth,12\n", "text/csv", "region,units\nNorth,12"),
        (
            "sales.xlsx",
            xlsx_bytes({"Q1": [("region", "units"), ("North", 12)]}),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "[Q1]\nregion\tunits\nNorth\t12",
        ),
    ],
    ids=["docx", "txt-gb18030", "md", "csv", "xlsx"],
)
async def test_each_document_type_is_read(
    tmp_path: Path, sqlite_url: str, name: str, data: bytes, mime: str, text: str
) -> None:
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        uploaded = (await upload(client, name, data)).json()["data"]
        info = (await client.get(f"/file/info/{uploaded['fileId']}")).json()["data"]
        content = (await client.get(f"/file/content/{uploaded['fileId']}")).json()["data"]

    assert (uploaded["mimeType"], info["status"]) == (mime, "ready")
    assert content == text


async def test_files_without_text_are_kept_as_failed_with_the_reason(
    tmp_path: Path, sqlite_url: str
) -> None:
    async with service(settings_for(tmp_path, sqlite_url, ocr_enabled=False)) as client:
        scanned = (await upload(client, "scan.pdf", scanned_pdf_bytes())).json()["data"]
        photo = (await upload(client, "photo.jpg", image_bytes("JPEG"))).json()["data"]
        damaged = (await upload(client, "broken.docx", docx_bytes(["x"])[:300])).json()["data"]
        infos = [
            (await client.get(f"/file/info/{f['fileId']}")).json()["data"]
            for f in (scanned, photo, damaged)
        ]
        content = await client.get(f"/file/content/{scanned['fileId']}")
        download = await client.get(f"/file/download/{photo['fileId']}")

    assert [i["status"] for i in infos] == ["failed", "failed", "failed"]
    assert "scanned image" in infos[0]["error"]
    assert "text recognition (OCR) is turned off" in infos[1]["error"]
    assert "could not be read" in infos[2]["error"]
    assert photo["mimeType"] == "image/jpeg"
    assert content.status_code == 422
    assert "text recognition (OCR) is turned off" in content.json()["message"]
    assert download.content == image_bytes("JPEG")


@pytest.mark.parametrize(
    ("name", "data", "status", "message"),
    [
        ("tool.exe", b"MZ\x90\x00", 415, "Unsupported file type"),
        ("photo.pdf", image_bytes("PNG"), 415, "named as a PDF document, but its content is not"),
        ("notes.txt", pdf_bytes(["x"]), 415, "named as a text file, but its content is not"),
        ("empty.txt", b"", 400, "The file is empty."),
        (".pdf", pdf_bytes(["x"]), 415, "Unsupported file type"),
    ],
    ids=["exe", "png-as-pdf", "pdf-as-txt", "empty", "no-name"],
)
async def test_bad_uploads_are_refused_and_leave_nothing(
    tmp_path: Path, sqlite_url: str, name: str, data: bytes, status: int, message: str
) -> None:
    settings = settings_for(tmp_path, sqlite_url)
    async with service(settings) as client:
        response = await upload(client, name, data)
        listing = await client.get("/file/list")

    assert response.status_code == status
    assert response.json()["code"] == status
    assert message in response.json()["message"]
    assert listing.json()["data"] == []
    assert blobs(settings) == []


async def test_an_upload_without_a_file_is_422(tmp_path: Path, sqlite_url: str) -> None:
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        other_field = await client.post("/file/upload", files={"other": ("a.txt", b"hi")})
        # A part without a file name is a plain form field, not a file.
        no_filename = await client.post("/file/upload", files={"file": ("", b"hi")})

    assert (other_field.status_code, other_field.json()["code"]) == (422, 422)
    assert "file" in other_field.json()["message"]
    assert no_filename.status_code == 422


async def test_uploads_over_the_limit_are_413_and_leave_nothing(
    tmp_path: Path, sqlite_url: str
) -> None:
    settings = settings_for(tmp_path, sqlite_url, upload_max_bytes=1000)
    huge = b"x" * 300_000
    boundary = "dodo-test-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n'
            f"Content-Type: text/plain\r\n\r\n"
        ).encode()
        + huge
        + f"\r\n--{boundary}--\r\n".encode()
    )

    async def chunked() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 16384):
            yield body[start : start + 16384]

    async with service(settings) as client:
        at_limit = await upload(client, "fits.txt", b"y" * 1000)
        just_over = await upload(client, "over.txt", b"y" * 1001)
        declared = await upload(client, "big.txt", huge)
        # No Content-Length: the body is refused as it streams in, not after.
        streamed = await client.post(
            "/file/upload",
            content=chunked(),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        listing = await client.get("/file/list")

    assert at_limit.status_code == 200
    assert just_over.status_code == 413
    assert "larger than the limit of 1000 bytes" in just_over.json()["message"]
    assert (declared.status_code, declared.json()["code"]) == (413, 413)
    assert (streamed.status_code, streamed.json()["code"]) == (413, 413)
    assert [f["fileName"] for f in listing.json()["data"]] == ["fits.txt"]
    assert len(blobs(settings)) == 1


async def test_the_client_path_is_never_used(tmp_path: Path, sqlite_url: str) -> None:
    settings = settings_for(tmp_path, sqlite_url)
    async with service(settings) as client:
        unix = (await upload(client, "../../etc/passwd.txt", b"root")).json()["data"]
        windows = (await upload(client, "C:\\Users\\x\\evil<1>|?.md", b"# hi")).json()["data"]
        spoof = "in\u202evoice\u200b\x85\u2028 e\u0301t\u00e9" + "x" * 400 + ".txt"
        hidden = (await upload(client, spoof, b"text")).json()["data"]

    assert unix["fileName"] == "passwd.txt"
    assert windows["fileName"] == "evil1.md"
    # No bidi override or invisible character survives; the name is NFC and bounded.
    assert hidden["fileName"] == "invoice \u00e9t\u00e9" + "x" * 240 + ".txt"
    assert len(hidden["fileName"]) == 255
    stored = sorted(p.name for p in blobs(settings))
    assert stored == sorted([unix["fileId"], windows["fileId"], hidden["fileId"]])
    assert all(p.parent == settings.data_dir / "files" / "uploads" for p in blobs(settings))


async def test_another_users_file_answers_404(tmp_path: Path, sqlite_url: str) -> None:
    async with service(settings_for(tmp_path, sqlite_url)) as client:
        file_id = (await upload(client, "mine.txt", b"secret")).json()["data"]["fileId"]
        as_bob = [
            await client.get(f"/file/info/{file_id}", headers=BOB),
            await client.get(f"/file/content/{file_id}", headers=BOB),
            await client.get(f"/file/download/{file_id}", headers=BOB),
            await client.delete(f"/file/{file_id}", headers=BOB),
        ]
        exists = await client.get(f"/file/exists/{file_id}", headers=BOB)
        bobs_list = await client.get("/file/list", headers=BOB)
        anonymous = await client.get("/file/list", headers={"Authorization": ""})
        still_there = await client.get(f"/file/download/{file_id}")

    assert [r.status_code for r in as_bob] == [404, 404, 404, 404]
    assert exists.json()["data"] is False
    assert bobs_list.json()["data"] == []
    assert anonymous.status_code == 401
    assert still_there.content == b"secret"
