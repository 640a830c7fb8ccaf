"""A file an agent could not make (a report's PDF without LibreOffice) in every wire format:
said, with why, and never offered as something to download."""

from __future__ import annotations

import orjson
from a2a.types import TaskArtifactUpdateEvent, TaskStatusUpdateEvent

from app.api.a2a.mapping import TaskRef, TaskUpdates, stored_task
from app.api.formats.ai_sdk import AiSdkTranslator
from app.core.events import FileEvent
from app.store.models import StoredTurn
from app.store.records import TurnFile

BASE_URL = "https://agents.example.test/dodo"
REASON = "No PDF was made: LibreOffice is not installed on the server."
WORD = FileEvent("f1", "report.docx", "/file/download/f1", 2048, "application/msword")
UNMADE = FileEvent(
    "f2", "report.pdf", "/file/download/f2", 0, "application/pdf", status="failed", error=REASON
)


def test_our_frame_says_failed_and_why_and_a_made_file_keeps_its_shape() -> None:
    assert UNMADE.wire() == {
        "type": "file",
        "fileId": "f2",
        "name": "report.pdf",
        "url": "/file/download/f2",
        "size": 0,
        "mimeType": "application/pdf",
        "status": "failed",
        "error": REASON,
    }
    assert set(WORD.wire()) == {"type", "fileId", "name", "url", "size", "mimeType"}
    stored = TurnFile.model_validate(UNMADE).wire()
    assert stored == {k: v for k, v in UNMADE.wire().items() if k != "type"}
    assert "status" not in TurnFile.model_validate(WORD).wire()


def test_ai_sdk_gives_an_unmade_file_as_data_only() -> None:
    translator = AiSdkTranslator()
    parts = [
        orjson.loads(line.removeprefix(b"data: "))
        for event in (WORD, UNMADE)
        for line in translator.translate(1, event).splitlines()
        if line.startswith(b"data: ")
    ]

    assert [p["type"] for p in parts] == ["file", "data-file", "data-file"]
    assert parts[2]["data"]["status"] == "failed"
    assert parts[2]["data"]["error"] == REASON


def test_a2a_gives_an_unmade_file_as_a_status_line_not_an_artifact() -> None:
    updates = TaskUpdates(TaskRef("c1", 1), BASE_URL).translate([WORD, UNMADE])
    turn = StoredTurn(
        session_id="c1",
        user_id="u1",
        agent_type="deep",
        question="How big is the market?",
        answer="Big.",
        status="completed",
        files=[TurnFile.model_validate(WORD), TurnFile.model_validate(UNMADE)],
    )
    task = stored_task([turn], TaskRef("c1", 1), BASE_URL)

    artifact, status = updates
    assert isinstance(artifact, TaskArtifactUpdateEvent)
    assert artifact.artifact.artifact_id == "file-f1"
    assert isinstance(status, TaskStatusUpdateEvent)
    assert status.status.message.parts[0].text == f"report.pdf: {REASON}"
    assert [a.artifact_id for a in task.artifacts if a.artifact_id.startswith("file-")] == [
        "file-f1"
    ]
