"""What the PowerPoint agent asks the model at each step. Every answer is one JSON object."""

from __future__ import annotations

from app.agents.pptx.templates import FieldSpec, TemplateSpec
from app.tools.untrusted import UNTRUSTED_CONTENT_RULE

JSON_ONLY = "Answer with one JSON object and nothing else."

INTENT = f"""You route messages in a conversation about a PowerPoint deck.
The conversation's latest deck build is in state {{status}}.
Decide what the user's new message asks for:
- "modify": change the existing deck (its slides, titles, wording, order, layout),
- "resume": continue or retry the unfinished build,
- "create": a new, different deck.
{JSON_ONLY} Format: {{{{"intent": "create" | "modify" | "resume"}}}}"""

REQUIREMENT = f"""You prepare a PowerPoint deck. From the user's messages, extract:
topic, audience, slideCount (a number, at most {{max_slides}}), style (a few words on the
look or tone), language (the language to write the deck in: the user's, unless asked).
Use null for anything the user has not said; do not guess.
Also write "ask": one short, friendly question, in the user's language, asking only for
what is null (null when nothing is missing).
{JSON_ONLY} Format: {{{{"topic": ..., "audience": ..., "slideCount": ..., "style": ...,
"language": ..., "ask": ...}}}}"""

TEMPLATE = f"""Choose the template that best fits this deck.
Templates (code: description):
{{templates}}
{JSON_ONLY} Format: {{{{"templateCode": "<one of the codes above>", "reason": "..."}}}}"""

OUTLINE = f"""Write the outline of a deck of exactly {{slide_count}} slides.
Topic: {{topic}}. Audience: {{audience}}. Style: {{style}}. Language: {{language}}.
Each slide has a page type; the first is "cover", the last is "closing". Page types:
{{pages}}
Use what the research found where it helps:
{{research}}
{UNTRUSTED_CONTENT_RULE}
{JSON_ONLY} Format: {{{{"title": "...", "slides": [{{{{"title": "...", "pageType": "...",
"points": ["..."]}}}}]}}}}"""

SCHEMA = f"""Write every slide of the deck from its outline, in {{language}}.
For each slide give its pageType and "fields": exactly the fields of its page type below,
every one filled, each text within its character budget (write shorter, never cut words).
A "text" field is a string, a "bullets" field a list of strings, a "table" field
{{{{"header": [...], "rows": [[...], ...]}}}} (one cell per header column), a "chart" field
{{{{"chartType": "bar" | "line" | "pie", "categories": [...], "series": [{{{{"name": "...",
"values": [numbers, one per category]}}}}]}}}} with real figures (a pie has one series).
Page types and their fields:
{{pages}}
Outline:
{{outline}}
{JSON_ONLY} Format:
{{{{"slides": [{{{{"pageType": "...", "fields": {{{{"title": "...", ...}}}}}}}}]}}}}"""

MODIFY = f"""You edit an existing PowerPoint deck as the user asks, in {{language}}.
Keep everything the user did not ask to change. Each slide's fields must be exactly the
fields of its page type below, every one filled and within its character budget.
Page types and their fields:
{{pages}}
The deck now:
{{deck}}
{JSON_ONLY} Answer with the whole edited deck, in the same format."""


SLIDE = f"""You rewrite one slide of an existing PowerPoint deck as the user asks, in {{language}}.
This is slide {{number}} of {{count}}; the other slides stay as they are:
{{titles}}
Its fields must be exactly the fields of its page type below, every one filled and within
its character budget. Keep its page type unless the user asks for another.
Page types and their fields:
{{pages}}
The slide now:
{{slide}}
{JSON_ONLY} Format: {{{{"pageType": "...", "fields": {{{{"title": "...", ...}}}}}}}}"""

ONE_SLIDE = f"""You write one slide of a PowerPoint deck, in {{language}}.
The deck has {{count}} slides:
{{titles}}
Write slide {{number}}: "{{title}}", a "{{page_type}}" page{{points}}.
Its fields must be exactly the fields of its page type below, every one filled and within
its character budget (write shorter, never cut words).
Page types and their fields:
{{pages}}
{JSON_ONLY} Format: {{{{"pageType": "...", "fields": {{{{"title": "...", ...}}}}}}}}"""


def describe_pages(template: TemplateSpec) -> str:
    """The page types with their purpose and fields, as the model reads them."""
    lines = []
    for page in template.pages:
        fields = ", ".join(_describe_field(f) for f in page.fields)
        lines.append(f'- "{page.page_type}": {page.purpose}. Fields: {fields}')
    return "\n".join(lines)


def _describe_field(field: FieldSpec) -> str:
    name, budget = field.name, field.budget
    if field.kind == "text":
        return f"{name} (text, ≤{budget} chars)"
    if field.kind == "bullets":
        return f"{name} (bullets, 1-{field.max_items} items, each ≤{budget} chars)"
    if field.kind == "chart":
        return (
            f"{name} (chart, ≤{field.max_items} categories, ≤{field.max_columns} series,"
            f" labels ≤{budget} chars)"
        )
    return (
        f"{name} (table, ≤{field.max_columns} columns, ≤{field.max_items - 1} rows under"
        f" the header, cells ≤{budget} chars)"
    )
