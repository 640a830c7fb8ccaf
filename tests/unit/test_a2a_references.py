"""A task's references reach another agent as links it can follow, whoever wrote them."""

from __future__ import annotations

from app.api.a2a.mapping import TaskRef, stored_task
from app.core.events import Reference
from app.store.models import StoredTurn
from tests.support.a2a import artifact_data

BASE_URL = "https://agents.example.test/dodo"


def test_a_documents_relative_download_link_is_made_whole_and_a_web_link_kept() -> None:
    turn = StoredTurn(
        session_id="c1",
        user_id="u1",
        agent_type="file",
        question="What does the manual say?",
        answer="Seven years [1].",
        status="completed",
        reference=[
            {"url": "/file/download/7#page=3", "title": "manual.pdf", "content": "Seven years."},
            {"url": "https://example.test/warranty", "title": "Warranty", "content": "Seven."},
        ],
    )

    task = stored_task([turn], TaskRef("c1", 1), BASE_URL)

    listed = artifact_data(task, "references")
    assert [item["url"] for item in listed] == [
        f"{BASE_URL}/file/download/7#page=3",
        "https://example.test/warranty",
    ]
    # The host agent on the other side keeps both: they are web addresses now.
    assert [ref.url for ref in Reference.listed(listed)] == [item["url"] for item in listed]
