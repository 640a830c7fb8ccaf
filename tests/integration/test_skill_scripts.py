"""Each built-in skill's script, run as the agent runs it: in the sandbox, on a real file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import docx
import pytest

from app.skills import BUILTIN_SKILLS
from app.skills.catalog import load_skills
from app.tools.shell import SANDBOX_SKILLS, Mount, Shell, ShellLimits
from app.tools.workspace import Workspace
from tests.support.documents import pdf_bytes, xlsx_bytes
from tests.support.sandbox import sandboxed_shell

SALES_CSV = """region,product,units,price
North,Widget,12,2.50
South,Widget,7,2.50
North,Gadget,3,10.00
East,Widget,,2.50
North,Gizmo,5,4.25
"""


@pytest.fixture
def shell() -> Shell:
    skills = load_skills(BUILTIN_SKILLS)
    mounts = [Mount(s.folder, f"{SANDBOX_SKILLS}/{s.name}") for s in skills.values()]
    return sandboxed_shell(dataclasses.replace(ShellLimits.defaults(), timeout_seconds=60), mounts)


@pytest.fixture
def workspace(tmp_path: Path, shell: Shell) -> Workspace:
    space = Workspace(tmp_path / "ws", 10 * 1024 * 1024, owner=shell.run_as)
    space.create()
    return space


async def run(shell: Shell, workspace: Workspace, command: str) -> str:
    result = await shell.run(command, workspace.root)
    assert result.exit_code == 0, result.output
    return result.output


async def test_data_summary_describes_each_column_of_a_csv(
    shell: Shell, workspace: Workspace
) -> None:
    workspace.write_bytes("sales.csv", SALES_CSV.encode())

    await run(
        shell,
        workspace,
        "python /skills/data-summary/scripts/summarize_table.py sales.csv --out summary.md",
    )
    summary = (workspace.root / "summary.md").read_text()

    assert "5 rows, 4 columns." in summary
    assert "### units\n\n- type: number\n- missing: 1\n- min: 3, max: 12" in summary
    assert "### region\n\n- type: text\n- missing: 0\n- distinct values: 3\n- `North`: 3" in summary


async def test_data_summary_reads_an_excel_sheet(shell: Shell, workspace: Workspace) -> None:
    rows = [("city", "people"), ("Lyon", 522000), ("Nice", 342000)]
    workspace.write_bytes("cities.xlsx", xlsx_bytes({"2024": rows}))

    printed = await run(
        shell, workspace, "python /skills/data-summary/scripts/summarize_table.py cities.xlsx"
    )

    assert "2 rows, 2 columns." in printed
    assert "- min: 342000, max: 522000" in printed


async def test_docx_report_turns_markdown_into_a_word_document(
    shell: Shell, workspace: Workspace
) -> None:
    workspace.write_bytes(
        "tmp/report.md",
        b"# Sales report\n\nUnits sold **rose** in the *north*.\n\n## Figures\n\n"
        b"- North: 20 units\n- South: 7 units\n\n| region | units |\n|---|---|\n"
        b"| North | 20 |\n| South | 7 |\n",
    )

    await run(
        shell,
        workspace,
        'python /skills/docx-report/scripts/markdown_to_docx.py tmp/report.md "Sales report.docx"',
    )
    document = docx.Document(str(workspace.root / "Sales report.docx"))

    texts = [(p.style.name if p.style else "", p.text) for p in document.paragraphs]
    assert ("Title", "Sales report") in texts
    assert ("Heading 1", "Figures") in texts
    assert ("List Bullet", "North: 20 units") in texts
    assert ("Normal", "Units sold rose in the north.") in texts
    assert [[c.text for c in row.cells] for row in document.tables[0].rows] == [
        ["region", "units"],
        ["North", "20"],
        ["South", "7"],
    ]
    assert document.core_properties.title == "Sales report"


async def test_pdf_extract_gives_the_text_page_by_page(shell: Shell, workspace: Workspace) -> None:
    workspace.write_bytes(
        "paper.pdf", pdf_bytes(["Solar panels convert light.", "Wind turbines convert wind."])
    )

    await run(
        shell,
        workspace,
        "python /skills/pdf-extract/scripts/extract_pdf.py paper.pdf --out tmp/paper.md",
    )
    second = await run(
        shell, workspace, "python /skills/pdf-extract/scripts/extract_pdf.py paper.pdf --pages 2"
    )
    text = (workspace.root / "tmp" / "paper.md").read_text()

    assert "Pages: 2" in text
    assert "## Page 1\n\nSolar panels convert light." in text
    assert "## Page 2\n\nWind turbines convert wind." in text
    assert "Solar" not in second
    assert "## Page 2" in second


async def test_the_skills_are_read_only_in_the_sandbox(shell: Shell, workspace: Workspace) -> None:
    skill_file = BUILTIN_SKILLS / "pdf-extract" / "SKILL.md"
    before = skill_file.read_bytes()

    result = await shell.run(
        "echo x >> /skills/pdf-extract/SKILL.md; rm -f /skills/pdf-extract/SKILL.md",
        workspace.root,
    )

    assert result.exit_code != 0
    assert skill_file.read_bytes() == before
