"""The skill catalog: every valid `SKILL.md` of the built-in and the user's skill folders.

A skill is a folder holding `SKILL.md`: YAML front matter between `---`
lines with at least `name` and `description`, then Markdown instructions
(the body), beside any scripts or references the instructions use. The front
matter is parsed by a real YAML parser (the safe loader), so quoting,
multi-line values and extra fields (`license`, `allowed-tools`, `metadata`)
behave as the format says; extra fields are kept.

A folder that is not a valid skill is skipped with a warning naming it and
why; when a user's skill has the name of a built-in one, the user's wins,
with a warning. No skills at all is a valid catalog.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_SKILL_BYTES = 256 * 1024
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)

Source = Literal["builtin", "user"]


class InvalidSkill(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path
    source: Source
    extra: dict[str, Any] = field(default_factory=dict)
    """Front-matter fields beyond name and description, as written."""

    def files(self) -> list[str]:
        """The skill's other files, relative to its folder (scripts, references)."""
        return sorted(
            p.relative_to(self.folder).as_posix()
            for p in self.folder.rglob("*")
            if p.is_file() and p.name != SKILL_FILE and "__pycache__" not in p.parts
        )


def parse_skill(folder: Path, source: Source) -> Skill:
    """The skill in `folder`; raises `InvalidSkill` saying what is wrong."""
    path = folder / SKILL_FILE
    try:
        if path.stat().st_size > MAX_SKILL_BYTES:
            raise InvalidSkill(f"{SKILL_FILE} is larger than {MAX_SKILL_BYTES} bytes")
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidSkill(f"{SKILL_FILE} cannot be read ({type(exc).__name__})") from exc
    match = _FRONT_MATTER.match(text)
    if match is None:
        raise InvalidSkill("no front matter between '---' lines at the top")
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise InvalidSkill(f"the front matter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise InvalidSkill("the front matter is not a mapping of fields")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > MAX_NAME_CHARS:
        raise InvalidSkill(
            "`name` must be lowercase letters, digits and single hyphens, "
            f"at most {MAX_NAME_CHARS} characters"
        )
    if not isinstance(description, str) or not description.strip():
        raise InvalidSkill("`description` is missing or empty")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise InvalidSkill(f"`description` is longer than {MAX_DESCRIPTION_CHARS} characters")
    extra = {str(k): v for k, v in meta.items() if k not in ("name", "description")}
    body = text[match.end() :].strip()
    return Skill(name, description.strip(), body, folder.resolve(), source, extra)


def load_skills(builtin: Path, user: Path | None = None) -> dict[str, Skill]:
    """Every valid skill by name, sorted; the user's folder wins a name both have."""
    skills: dict[str, Skill] = {}
    for skill in _scan(builtin, "builtin"):
        skills[skill.name] = skill
    if user is not None:
        if not user.is_dir():
            log.warning("SKILLS_DIR %s is not a folder: no user skills loaded", user)
        for skill in _scan(user, "user") if user.is_dir() else ():
            if skill.name in skills:
                log.warning(
                    "skill %r in %s replaces the built-in skill of that name",
                    skill.name,
                    skill.folder,
                )
            skills[skill.name] = skill
    return dict(sorted(skills.items()))


def _scan(root: Path, source: Source) -> Iterable[Skill]:
    seen: dict[str, Path] = {}
    for folder in sorted(p for p in root.iterdir() if (p / SKILL_FILE).is_file()):
        try:
            skill = parse_skill(folder, source)
        except InvalidSkill as exc:
            log.warning("skipping the skill in %s: %s", folder, exc)
            continue
        if skill.name in seen:
            log.warning(
                "skipping the skill in %s: %s already has the name %r",
                folder,
                seen[skill.name],
                skill.name,
            )
            continue
        seen[skill.name] = folder
        yield skill
