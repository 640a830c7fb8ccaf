"""`load_skill`: the full instructions of one skill, on request (progressive disclosure).

The system prompt names each skill with its description; the body, which
may be long, enters the context only when the model asks for it. The answer
also says where the skill's files are, inside the shell's sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.core.events import ThinkingEvent
from app.core.tools import ToolSchema
from app.skills.catalog import Skill
from app.tools.base import ToolContext, ToolOutput
from app.tools.shell import SANDBOX_SKILLS

LOAD_SKILL = "load_skill"
MAX_LISTED_FILES = 50


class LoadSkill:
    def __init__(self, skills: Mapping[str, Skill], files_at: str | None) -> None:
        """`files_at`: where the shell sees the skill folders; None: at their own paths."""
        self._skills = skills
        self._files_at = files_at
        self.schema = ToolSchema(
            LOAD_SKILL,
            "Load a skill's full instructions before doing a task it covers; follow them.",
            {
                "type": "object",
                "properties": {"name": {"type": "string", "enum": list(skills)}},
                "required": ["name"],
            },
        )

    def folder(self, skill: Skill) -> str:
        """Where the skill's files are, as the shell sees them."""
        return f"{self._files_at}/{skill.name}" if self._files_at else str(skill.folder)

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        name = str(args.get("name") or "")
        skill = self._skills.get(name)
        if skill is None:
            known = ", ".join(self._skills) or "none"
            return ToolOutput(f"There is no skill {name!r}. Skills: {known}.", is_error=True)
        ctx.emit(ThinkingEvent(f"Loading the skill {skill.name}\n"))
        files = skill.files()
        listed = "\n".join(f"- {f}" for f in files[:MAX_LISTED_FILES]) or "(none)"
        if len(files) > MAX_LISTED_FILES:
            listed += f"\n- … and {len(files) - MAX_LISTED_FILES} more"
        folder = self.folder(skill)
        # Instructions name the sandbox's path; without the sandbox the files are elsewhere.
        body = skill.body.replace(f"{SANDBOX_SKILLS}/{skill.name}", folder)
        return ToolOutput(
            f"# Skill: {skill.name}\n\n{body}\n\n---\n"
            f"This skill's files are in {folder} (read-only; run its scripts from "
            f"the workspace, e.g. `python {folder}/scripts/...`):\n{listed}"
        )
