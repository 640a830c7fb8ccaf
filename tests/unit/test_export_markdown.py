"""The Markdown export read as Markdown: links that survive odd titles and URLs, files
linked whole (one not made: why, no link), a turn that did not complete said so."""

from __future__ import annotations

from datetime import UTC, datetime

from app.api.export import markdown
from app.api.sessions import ConversationDetail, MessageRecord
from app.store.records import TurnFile


def test_links_survive_brackets_and_spaces_and_files_link_to_the_service() -> None:
    turn = MessageRecord(
        id=7,
        question="Make me a report",
        answer="Here it is [1].",
        status="failed",
        error="The model stopped\nhalfway",
        reference=[{"url": "https://x.test/a b>c", "title": "A [weird]\ntitle"}],
        files=[
            TurnFile(
                file_id="f1",
                name="report.docx",
                url="/file/download/f1",
                size=10,
                mime_type="application/octet-stream",
            ),
            TurnFile(
                file_id="f2",
                name="report.pdf",
                url="/file/download/f2",
                size=0,
                mime_type="application/pdf",
                status="failed",
                error="No PDF was made: LibreOffice is not installed.",
            ),
        ],
        create_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    detail = ConversationDetail(
        conversation_id="c1",
        title="Reports\nand more",
        agent_type="skills",
        fileid=None,
        messages=[turn],
    )

    text = markdown(detail, "https://agents.example")

    assert text.splitlines() == [
        "# Reports and more",
        "",
        "## Question",
        "",
        "Make me a report",
        "",
        "## Answer",
        "",
        "Here it is [1].",
        "",
        "_(failed: The model stopped halfway)_",
        "",
        "Sources:",
        "",
        r"1. [A \[weird\] title](<https://x.test/a%20b%3Ec>)",
        "",
        "Files:",
        "",
        "- [report.docx](<https://agents.example/file/download/f1>)",
        "- report.pdf: No PDF was made: LibreOffice is not installed.",
        "",
        "---",
    ]


def test_a_failed_turn_says_the_sentence_its_stream_said_not_its_code() -> None:
    sentence = "Planning the research failed: the model's answer could not be used."
    turn = MessageRecord(
        id=8,
        question="How big is the heat pump market?",
        answer="",
        status="failed",
        error="LLM_INVALID_OUTPUT",
        error_message=sentence,
        create_time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    detail = ConversationDetail(
        conversation_id="c2", title="Heat pumps", agent_type="deep", fileid=None, messages=[turn]
    )

    assert f"_(failed: {sentence})_" in markdown(detail, "https://agents.example").splitlines()
