"""What reading and searching a document costs: upload (extract, chunk, store) and search.

    .venv/bin/python -m bench.documents --pages 100 300 --searches 20

Builds pdfs of N pages with fpdf2 (about 1,900 characters a page), uploads
each through the real DocumentLibrary on a temporary SQLite database, then times
searches, by BM25 alone and hybrid against the local fake embeddings server
(tests/fakes/embeddings_server.py, so the figures include real HTTP but not a
real model's latency). Prints medians in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import tempfile
import time
from pathlib import Path

import httpx2
from pydantic import SecretStr

from app.documents.library import DocumentLibrary, LibrarySettings
from app.documents.retrieval import Embedder
from app.llm.embeddings import OpenAIEmbeddings
from app.store.blobs import LocalBlobStore
from app.store.db import Database
from app.store.file_store import SqlFileStore
from tests.fakes.embeddings_server import FakeEmbeddings
from tests.support.documents import pdf_bytes

WORDS = [
    "pump",
    "filter",
    "warranty",
    "hose",
    "seal",
    "motor",
    "valve",
    "pressure",
    "water",
    "season",
    "storage",
    "cleaning",
    "noise",
    "power",
    "socket",
    "safety",
    "housing",
    "impeller",
    "dealer",
    "refund",
    "delivery",
    "manual",
    "level",
    "inlet",
]


def page(n: int) -> str:
    sentences = [
        f"Section {n}.{i}: the {WORDS[(n * 7 + i) % len(WORDS)]} and the "
        f"{WORDS[(n * 3 + i * 5) % len(WORDS)]} need care in step {i} of part {n}."
        for i in range(24)
    ]
    return " ".join(sentences)


async def measure(root: Path, pages: int, searches: int, embedder: Embedder | None) -> str:
    data = pdf_bytes([page(n) for n in range(1, pages + 1)])
    url = f"sqlite+aiosqlite:///{root}/bench.db"
    async with Database.open(url, pool_size=5, migrate=True) as db:
        library = DocumentLibrary(
            SqlFileStore(db),
            LocalBlobStore(root / "blobs"),
            embedder=embedder,
            settings=LibrarySettings.defaults(),
        )
        started = time.perf_counter()
        file = await library.upload("bench", "bench.pdf", io.BytesIO(data))
        upload_ms = (time.perf_counter() - started) * 1000
        chunks = len(await SqlFileStore(db).file_chunks("bench", file.id))
        timings = []
        for i in range(searches):
            started = time.perf_counter()
            await library.search(file, f"{WORDS[i % len(WORDS)]} step {i % 24} part {i + 1}")
            timings.append((time.perf_counter() - started) * 1000)
    mode = "hybrid" if embedder else "bm25"
    return (
        f"{mode:6} pages={pages:4} bytes={len(data):9,} passages={chunks:5} "
        f"upload={upload_ms:8.1f} ms  search p50={statistics.median(timings):7.1f} ms "
        f"max={max(timings):7.1f} ms"
    )


async def main(pages: list[int], searches: int) -> None:
    async with FakeEmbeddings().running() as fake, httpx2.AsyncClient(timeout=60) as http:
        embedder = OpenAIEmbeddings(http, fake.base_url, SecretStr(""), "fake-embed")
        for count in pages:
            for mode in (None, embedder):
                with tempfile.TemporaryDirectory() as tmp:
                    print(await measure(Path(tmp), count, searches, mode))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--searches", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.pages, args.searches))
