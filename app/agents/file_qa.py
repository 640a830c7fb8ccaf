"""The file question-answering agent (`/agent/file/stream`): ReAct over one uploaded document.

The document is read only through its search tool, and the first search,
with the question itself, is made before the model is called: every turn
shows the tool at work, the model starts from the passages that matter
(one model round saved), and a model that does not call tools still answers
from the document. The model may search again with other words.

A file with no readable text (scanned, an image, damaged) is not answered
from: the turn says why, without asking the model. A picture is the
exception when the turn's model has vision: it is shown the picture with the
question (agents/picture.py), and searches its OCR text when there is some;
a model without vision answers from that text, and the user is told so.

In a project with files, a question with no `fileId` is asked of all the project's
files (`search_project_files`), the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from app.agents.picture import AttachedPicture, attached_picture
from app.agents.react import ReActAgent, act
from app.agents.turn import AgentCore, Turn, TurnState
from app.config import Settings
from app.core.events import Event, TextEvent, ThinkingEvent
from app.core.messages import Msg, ToolResultBlock, ToolUseBlock, new_call_id
from app.documents.library import DocumentLibrary
from app.tools.base import Tool
from app.tools.documents import DocumentSearch, unreadable_reason
from app.tools.project_files import ProjectFileSearch
from app.tools.untrusted import UNTRUSTED_CONTENT_RULE

SYSTEM_PROMPT = (
    """You answer questions about a document the user uploaded, from what it says.
- The search_document tool returns numbered passages of the document, each with its location.
  The question has already been searched for; search again with other words when the
  passages do not hold the answer.
- Cite the location of what you use, like (page 3) or (paragraph 12).
- When the document does not say, tell the user so; do not fill the gap from general knowledge.
- Answer in the language of the question, in Markdown, concisely.
"""
    + UNTRUSTED_CONTENT_RULE
)


PROJECT_PROMPT = (
    """You answer questions from the files of the user's project, from what they say.
- The search_project_files tool returns numbered passages of the project's files, each with its
  file and location. The question has already been searched for; search again with other
  words when the passages do not hold the answer.
- Cite the file and location of what you use, like (report.pdf, page 3).
- When the files do not say, tell the user so; do not fill the gap from general knowledge.
- Answer in the language of the question, in Markdown, concisely.
"""
    + UNTRUSTED_CONTENT_RULE
)


class FileQaAgent(ReActAgent):
    agent_type = "file"

    def __init__(self, core: AgentCore, files: DocumentLibrary) -> None:
        super().__init__(core)
        self._files = files

    def system_prompt(self, turn: Turn) -> str:
        return PROJECT_PROMPT if _in_project_files(turn) else SYSTEM_PROMPT

    def tools(self, turn: Turn) -> Sequence[Tool]:
        if turn.project is not None and _in_project_files(turn):
            return (ProjectFileSearch(self._files, turn.user_id, turn.project.file_ids),)
        return (DocumentSearch(self._files, turn.user_id, turn.file_id or ""),)

    async def execute(self, turn: Turn, state: TurnState) -> AsyncIterator[Event]:
        if _in_project_files(turn):
            async for event in self._search_first(turn, state, None):
                yield event
            return
        picture = await attached_picture(self.core, turn)
        if picture is not None and picture.notice and turn.carried is None:
            yield ThinkingEvent(picture.notice)
        seen = picture is not None and picture.image is not None
        file = picture.file if picture is not None else None
        file = file or await self._files.get(turn.user_id, turn.file_id or "")
        if seen and (file is None or file.status != "ready"):
            # A photo with no text in it: the model looks at it, with nothing to search.
            async for event in self.loop(turn, state, {}, self._first(turn, state, picture)):
                yield event
            return
        if (file is None or file.status != "ready") and turn.carried is None:
            # The search says why it cannot read the file: shown, then told to the user.
            async for event in self._search(turn, state, []):
                yield event
            yield TextEvent(f"I cannot answer from this file. {unreadable_reason(file)}")
            return
        async for event in self._search_first(turn, state, picture):
            yield event

    async def _search_first(
        self, turn: Turn, state: TurnState, picture: AttachedPicture | None
    ) -> AsyncIterator[Event]:
        """Search with the question itself, then let the model go on from the passages."""
        tools = {t.schema.name: t for t in self.tools(turn)}
        if turn.carried is not None:
            # Its first search is in the run's log: the loop goes on from it.
            async for event in self.loop(turn, state, tools, self._first(turn, state, picture)):
                yield event
            return
        messages: list[Msg] = []
        async for event in self._search(turn, state, messages):
            yield event
        messages[:0] = self._first(turn, state, picture)
        async for event in self.loop(turn, state, tools, messages):
            yield event

    async def _search(
        self, turn: Turn, state: TurnState, messages: list[Msg]
    ) -> AsyncIterator[Event]:
        """The first search, made before the model is called; its call and result join
        `messages`."""
        (tool,) = self.tools(turn)
        tools = {tool.schema.name: tool}
        search = ToolUseBlock(new_call_id(), tool.schema.name, {"query": turn.question})
        results: list[ToolResultBlock] = []
        async for event in act(self.core, turn, state, tools, [search], results):
            yield event
        messages.extend([Msg("assistant", [search]), Msg("tool", list(results))])

    def _first(self, turn: Turn, state: TurnState, picture: AttachedPicture | None) -> list[Msg]:
        """The first messages; a picture's text is the search's to give, not the question's."""
        question = picture.question(turn.question, with_text=False) if picture else None
        return self.first_messages(turn, state, question)


def _in_project_files(turn: Turn) -> bool:
    """Asked with no file in a project that has some: all of them are searched."""
    return not turn.file_id and turn.project is not None and bool(turn.project.file_ids)


def build(core: AgentCore, settings: Settings) -> FileQaAgent:
    return FileQaAgent(core, core.documents)
