"""Which SKILL.md folders become skills: real YAML, invalid ones skipped, the user's win."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.core.events import Event, ThinkingEvent
from app.skills import BUILTIN_SKILLS
from app.skills.catalog import load_skills
from app.tools.base import ToolContext
from app.tools.load_skill import LoadSkill


def skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(text)
    return path


def test_front_matter_is_yaml_and_extra_fields_are_kept(tmp_path: Path) -> None:
    folder = skill(
        tmp_path,
        "csv-tools",
        '---\nname: csv-tools\ndescription: >\n  Work with CSV files:\n  "quoted", colons: too.\n'
        "license: MIT\nallowed-tools: [bash, read_file]\nmetadata:\n  version: 2\n---\n"
        "# CSV tools\n\nDo this.\n",
    )
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print(1)\n")

    [found] = load_skills(tmp_path).values()

    assert found.name == "csv-tools"
    assert found.description == 'Work with CSV files: "quoted", colons: too.'
    assert found.body == "# CSV tools\n\nDo this."
    assert found.extra == {
        "license": "MIT",
        "allowed-tools": ["bash", "read_file"],
        "metadata": {"version": 2},
    }
    assert found.files() == ["scripts/run.py"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("# no front matter\n", "no front matter"),
        ("---\nname: [unclosed\n---\nbody\n", "not valid YAML"),
        ("---\n- a list\n---\nbody\n", "not a mapping"),
        ("---\nname: Bad Name\ndescription: d\n---\n", "`name` must be"),
        ("---\nname: fine\n---\nbody\n", "`description` is missing"),
    ],
)
def test_an_invalid_skill_is_skipped_with_a_warning_and_the_rest_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, why: str
) -> None:
    skill(tmp_path, "broken", text)
    skill(tmp_path, "good", "---\nname: good\ndescription: Works.\n---\nBody.\n")

    with caplog.at_level(logging.WARNING, logger="app.skills.catalog"):
        skills = load_skills(tmp_path)

    assert list(skills) == ["good"]
    assert "broken" in caplog.text
    assert why in caplog.text


def test_a_users_skill_replaces_a_builtin_one_of_the_same_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    builtin, user = tmp_path / "builtin", tmp_path / "user"
    skill(builtin, "report", "---\nname: report\ndescription: Built in.\n---\nOld.\n")
    skill(builtin, "other", "---\nname: other\ndescription: Kept.\n---\nKept.\n")
    skill(user, "my-report", "---\nname: report\ndescription: Mine.\n---\nNew.\n")

    with caplog.at_level(logging.WARNING, logger="app.skills.catalog"):
        skills = load_skills(builtin, user)

    assert {name: s.description for name, s in skills.items()} == {
        "other": "Kept.",
        "report": "Mine.",
    }
    assert skills["report"].source == "user"
    assert "replaces the built-in skill" in caplog.text


def test_no_skills_anywhere_is_an_empty_catalog(tmp_path: Path) -> None:
    assert load_skills(tmp_path, tmp_path / "missing") == {}


def test_the_builtin_skills_load_with_their_scripts() -> None:
    skills = load_skills(BUILTIN_SKILLS)

    assert set(skills) == {"data-summary", "docx-report", "pdf-extract"}
    assert all(s.files() and s.source == "builtin" for s in skills.values())


async def test_load_skill_returns_the_body_and_where_its_files_are(tmp_path: Path) -> None:
    skill(tmp_path, "good", "---\nname: good\ndescription: Works.\n---\nStep one.\n")
    events: list[Event] = []
    tool = LoadSkill(load_skills(tmp_path), "/skills")

    loaded = await tool({"name": "good"}, ToolContext("u", "c", events.append))
    unknown = await tool({"name": "nope"}, ToolContext("u", "c", events.append))

    assert "Step one." in loaded.text
    assert "/skills/good" in loaded.text
    assert unknown.is_error
    assert "Skills: good." in unknown.text
    assert events == [ThinkingEvent("Loading the skill good\n")]


async def test_without_the_sandbox_a_skill_names_its_real_folder(tmp_path: Path) -> None:
    folder = skill(
        tmp_path,
        "good",
        "---\nname: good\ndescription: Works.\n---\nRun /skills/good/scripts/go.py\n",
    )
    events: list[Event] = []

    loaded = await LoadSkill(load_skills(tmp_path), None)(
        {"name": "good"}, ToolContext("u", "c", events.append)
    )

    assert f"Run {folder.resolve()}/scripts/go.py" in loaded.text
    assert "/skills/good" not in loaded.text
