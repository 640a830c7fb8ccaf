"""The skills agent (`/agent/skills/stream`): ReAct with skills, a workspace and a sandboxed shell.

Each conversation has a workspace of its own (`DATA_DIR/workspaces/...`),
kept across its turns and deleted with it. An attached upload (`fileId`) is
copied in before the model starts; a picture also joins the question, as an
image for a vision model and as its text for another (agents/picture.py).
The model sees the skills' names and descriptions in its system prompt and
loads a skill's instructions with `load_skill`; it works with the file tools
and `bash` (tools/shell.py: a sandbox it cannot get out of), and web search
and `fetch_page` when configured.

When the loop ends, every file made or changed in the workspace since the
last hand-over (this turn's work, or a stopped turn's) is handed to the
user: stored as a generated file of the turn, announced by a `file` event,
and linked at the end of the answer. Progress shows as short
`thinking` lines (the upload copied in, each command run, each skill
loaded, each file handed over).

It works with no skills installed, and without a shell (bubblewrap
missing): the tool then answers the model why, and the user is told once.
Rounds are capped by `SKILLS_MAX_ROUNDS`; old tool outputs are compacted
(agents/compaction.py) so a long task stays inside the model's context.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import mimetypes
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from app.agents.approvals import allowed_tools
from app.agents.compaction import Compactor
from app.agents.picture import attached_picture
from app.agents.react import ReActAgent
from app.agents.recall import context_prompt
from app.agents.tool_history import arguments_of
from app.agents.turn import AgentCore, Turn, TurnState
from app.config import Settings
from app.core.events import Event, TextEvent, ThinkingEvent
from app.core.messages import Msg
from app.core.run import ConversationKey
from app.documents.library import DocumentLibrary, generated_event
from app.skills import BUILTIN_SKILLS
from app.skills.catalog import Skill, load_skills
from app.store.base import GoneTurn
from app.tools.base import Tool
from app.tools.load_skill import LOAD_SKILL, LoadSkill
from app.tools.shell import SANDBOX_SKILLS, BashTool, Mount, Shell, ShellLimits, python_mounts
from app.tools.untrusted import UNTRUSTED_CONTENT_RULE
from app.tools.workspace import (
    Files,
    Workspace,
    WorkspaceError,
    delete_workspace,
    file_tools,
    workspace_root,
)

log = logging.getLogger(__name__)

MAX_HANDED_FILES = 20
"""Files of one turn handed to the user; more is a runaway script, not deliverables."""
_OFFICE = "application/vnd.openxmlformats-officedocument"
MIME_TYPES = {
    ".docx": f"{_OFFICE}.wordprocessingml.document",
    ".xlsx": f"{_OFFICE}.spreadsheetml.sheet",
    ".pptx": f"{_OFFICE}.presentationml.presentation",
    ".md": "text/markdown",
    ".csv": "text/csv",
}
"""What a skill most often makes; Python's own table lacks some where /etc/mime.types is absent."""

SYSTEM_PROMPT = """You get work done with tools, in a workspace of your own. Today is {today}.
- The workspace is a folder kept for this conversation. The file tools (read_file,
  write_file, edit_file, list_files, glob, grep) take paths relative to it; `bash` runs in it.
- Skills are instructions for particular tasks, often with scripts. When a task matches a
  skill, call load_skill first and follow its instructions.
- Every file you create or change in the workspace is given to the user for download when
  you finish: write deliverables there with clear names, and keep scratch files in `tmp/`
  or delete them. Say in your answer what each file is; the download links are added for you.
- Check your work (run the script, read the result) before you answer.
- Answer in the language of the user, in Markdown, concisely.
- {untrusted}

{skills}{attachment}"""


class SkillsAgent(ReActAgent):
    agent_type = "skills"

    def __init__(
        self,
        core: AgentCore,
        files: DocumentLibrary,
        skills: Mapping[str, Skill],
        shell: Shell,
        data_dir: Path,
        max_file_bytes: int,
        search: Tool | None = None,
        compactor: Compactor | None = None,
        reader: Tool | None = None,
    ) -> None:
        super().__init__(core)
        self._files = files
        self._skills = skills
        self.shell = shell
        self._data_dir = data_dir
        self._max_file_bytes = max_file_bytes
        self._search = search
        self._reader = reader
        self._load_skill = LoadSkill(skills, SANDBOX_SKILLS if shell.mode == "sandboxed" else None)
        self._compactor = compactor
        if compactor is not None:
            self.hooks = (compactor,)

    async def forget(self, key: ConversationKey, gone: Sequence[GoneTurn]) -> None:
        """A deleted conversation takes its workspace with it."""
        await delete_workspace(self._data_dir, key.user_id, key.conversation_id)

    def workspace(self, turn: Turn) -> Workspace:
        root = workspace_root(self._data_dir, turn.user_id, turn.conversation_id)
        return Workspace(root, self._max_file_bytes, owner=self.shell.run_as)

    def tools(self, turn: Turn) -> Sequence[Tool]:
        workspace = self.workspace(turn)
        tools: list[Tool] = [*file_tools(workspace), BashTool(self.shell, workspace)]
        if self._skills:
            tools.append(self._load_skill)
        tools.extend(tool for tool in (self._search, self._reader) if tool is not None)
        return tools

    def allowed(self, turn: Turn, state: TurnState) -> set[str] | None:
        """A loaded skill's `allowed-tools` narrows what runs without asking: the union of
        the loaded skills' lists, or None while no loaded skill has one."""
        loaded = {
            str(arguments_of(call).get("name"))
            for call in state.tool_calls
            if call.name == LOAD_SKILL and call.result is not None and not call.is_error
        }
        lists = [
            allowed_tools(skill.extra["allowed-tools"])
            for name in loaded
            if (skill := self._skills.get(name)) is not None and "allowed-tools" in skill.extra
        ]
        return set().union(*lists) if lists else None

    def notices(self, turn: Turn) -> list[str]:
        reason = self.shell.unavailable()
        return [f"No shell for this task: {reason}.\n"] if reason else []

    def prompt(self, attached: str | None) -> str:
        if self._skills:
            listed = "\n".join(f"- {s.name}: {s.description}" for s in self._skills.values())
            skills = f"Skills you can load:\n{listed}\n"
        else:
            skills = "No skills are installed: work with the tools alone.\n"
        attachment = (
            f"\nThe user attached a file; it is in the workspace as `{attached}`.\n"
            if attached
            else ""
        )
        return SYSTEM_PROMPT.format(
            today=datetime.now(UTC).date().isoformat(),
            skills=skills,
            attachment=attachment,
            untrusted=UNTRUSTED_CONTENT_RULE,
        )

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        carried = turn.carried is not None  # its notes were shown where it began
        for note in () if carried else self.notices(turn):
            yield ThinkingEvent(note)
        workspace = self.workspace(turn)
        await asyncio.to_thread(workspace.create)
        handed = await asyncio.to_thread(workspace.handed)
        attached = await self._attach(turn, workspace)
        if attached and not carried:
            yield ThinkingEvent(f"Copied {attached} into the workspace\n")
            # The user's own file is input, not something to hand back.
            handed[attached] = (await asyncio.to_thread(workspace.snapshot))[attached]
            await asyncio.to_thread(workspace.mark_handed, handed)
        picture = await attached_picture(self.core, turn)
        if picture is not None and picture.notice and not carried:
            yield ThinkingEvent(picture.notice)
        tools = {tool.schema.name: tool for tool in self.tools(turn)}
        messages = [
            Msg.text("system", self.prompt(attached) + context_prompt(turn, state)),
            *state.memory,
            picture.question(turn.question) if picture else Msg.text("user", turn.question),
        ]
        try:
            async for event in self.loop(turn, state, tools, messages):
                yield event
        finally:
            if self._compactor is not None:
                state.add_usage(self._compactor.take_usage(turn))
        async for event in self._hand_over(turn, workspace, handed):
            yield event

    async def _attach(self, turn: Turn, workspace: Workspace) -> str | None:
        """Copy the attached upload into the workspace (once); its name there."""
        if not turn.file_id:
            return None
        file = await self._files.get(turn.user_id, turn.file_id)
        if file is None:
            return None
        target = workspace.root / file.file_name
        if target.is_file() and target.stat().st_size == file.size:
            return file.file_name
        data = b"".join([chunk async for chunk in await self._files.download(file)])
        try:
            await asyncio.to_thread(workspace.write_bytes, file.file_name, data)
        except WorkspaceError as exc:
            log.warning("upload %s not copied into the workspace: %s", file.id, exc)
            return None
        return file.file_name

    async def _hand_over(
        self, turn: Turn, workspace: Workspace, handed: Files
    ) -> AsyncIterator[Event]:
        """Store what is new since the last hand-over as generated files, linked in the answer."""
        after = await asyncio.to_thread(workspace.snapshot)
        made = [
            name for name, seen in after.items() if handed.get(name) != seen and not _scratch(name)
        ]
        links: list[str] = []
        for name in made[:MAX_HANDED_FILES]:
            try:
                data = await asyncio.to_thread(workspace.read_bytes, name)
            except (WorkspaceError, OSError) as exc:
                log.warning("a generated file was not handed over: %s", exc)
                continue
            mime = MIME_TYPES.get(PurePosixPath(name).suffix.lower()) or (
                mimetypes.guess_type(name)[0] or "application/octet-stream"
            )
            stored = await self._files.add_generated(
                turn.user_id, turn.conversation_id, name, data, mime
            )
            event = generated_event(stored)
            yield ThinkingEvent(f"Handing over {name}\n")
            yield event
            links.append(f"- [{stored.file_name}]({event.url})")
        if len(made) > MAX_HANDED_FILES:
            links.append(f"- … and {len(made) - MAX_HANDED_FILES} more in the workspace")
        await asyncio.to_thread(workspace.mark_handed, after)
        if links:
            yield TextEvent("\n\n**Files:**\n" + "\n".join(links) + "\n")


def _scratch(name: str) -> bool:
    """Hidden files, caches and `tmp/`: working material, not deliverables."""
    parts = name.split("/")
    return parts[0] == "tmp" or any(p.startswith(".") or p == "__pycache__" for p in parts)


def build(core: AgentCore, settings: Settings) -> SkillsAgent:
    skills = load_skills(BUILTIN_SKILLS, settings.skills_dir)
    sandboxed = settings.skills_shell == "sandboxed"
    mounts = python_mounts()
    if sandboxed:
        mounts += [Mount(s.folder, f"{SANDBOX_SKILLS}/{s.name}") for s in skills.values()]
    limits = ShellLimits.from_settings(settings)
    shell = Shell(limits, settings.skills_shell, mounts, shutil.which("bwrap"))
    if not sandboxed:
        log.warning(
            "SKILLS_SHELL=unsandboxed: the skills agent's shell runs WITHOUT a sandbox,"
            " with the service's file system and network"
        )
    elif reason := shell.unavailable():
        log.warning("the skills agent has no shell: %s", reason)
    compactor = Compactor(
        core.model,
        core.tokens,
        settings.skills_keep_tool_results,
        settings.skills_context_tokens,
        kept_tools=(LOAD_SKILL,),
        model_of=lambda turn: core.model_for(turn.model_id),
    )
    own_core = dataclasses.replace(
        core, limits=dataclasses.replace(core.limits, max_rounds=settings.skills_max_rounds)
    )
    return SkillsAgent(
        own_core,
        core.documents,
        skills,
        shell,
        settings.data_dir,
        settings.skills_max_file_bytes,
        core.search,
        compactor,
        core.fetch_page,
    )
