"""The deep research prompts, one per step of the graph.

Every structured step asks for one JSON object and names its fields with an
example, so a model answers it in the prompt's form too (the fallback of
`app/llm/structured.py`, which asks in the provider's native structured
output first); the answer is validated against the pydantic model in state.py.
"""

from app.tools.untrusted import UNTRUSTED_CONTENT_RULE

CLARIFY = """You decide whether a research request can be researched as it stands.
Today is {today}.
Ask only when something essential is missing or ambiguous (the subject, the scope,
the period, the audience) and the conversation so far does not settle it.
Answer with one JSON object and nothing else:
{{"needClarification": true or false, "questions": "the questions for the user, in the
language of the request, as short Markdown; empty when no clarification is needed",
"remember": []}}
"remember" stays [] unless the user states a lasting fact or preference about themselves, or
asks you to remember or forget one: then it lists the changes to their memory, each
{{"action": "save" or "update" or "forget", "id": "an item's id (update, forget)",
"content": "the fact, in their words (save, update)"}}.{context}"""

BRIEF = """Write the research brief for the request below: one sentence stating the topic,
then 3 to 5 numbered analysis points the research must cover. Today is {today}.
Write in the language of the request. Only the brief, no preamble."""

PLAN = """You plan research. Today is {today}.
Split the brief into at most {max_tasks} tasks, each answerable by a few web searches.
Tasks that need another task's findings name it in "dependsOn"; independent tasks run
at the same time, so prefer independent tasks.
{previous}
Answer with one JSON object and nothing else:
{{"tasks": [{{"id": "1", "title": "short title", "goal": "what to find out",
"dependsOn": []}}]}}"""

PLAN_REJECTED = """The user rejected the previous plan for this round. Their feedback:
{feedback}
Plan again, following it."""
PLAN_AGAIN = """This is round {round}. What earlier rounds found is below; plan only the
research still missing, as the critique says:
{feedback}"""

TASK = (
    """You are a researcher working on one task of a larger research. Today is {today}.
Search the web for what the task needs, then answer with a concise, factual summary
(at most 300 words) of what you found, citing the sources' URLs. Search results may come
with passages of the pages read; read another page with fetch_page when a result matters
and its passage does not say enough.
"""
    + UNTRUSTED_CONTENT_RULE
)

CRITIQUE = """You check research before its report is written.
Does what was found cover every analysis point of the brief well enough to write a
sound report? Answer with one JSON object and nothing else:
{"passed": true or false, "feedback": "what is missing or weak (empty when passed)"}"""

REPORT = (
    """Write the research report. Today is {today}.
Answer the original question, covering the brief's analysis points, from the task
results below. Cite sources inline as [n] with the numbers of the source list, and only
those. Write in the language of the question, in Markdown, with headings.
"""
    + UNTRUSTED_CONTENT_RULE
)

CONTINUE_WORDS = frozenset({"continue", "retry", "resume", "go on", "继续", "重试"})
"""A message that resumes an unfinished research instead of starting a new one."""
