"""The chat page checked by axe-core in its main states: no serious or critical violation.

axe-core is vendored (tests/e2e/vendor/README.md) and loaded into the page by the
test only. Each state is checked in the light and the dark colour scheme.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from playwright.async_api import Page, expect

from tests.e2e.conftest import LOOP, Upstreams, artifact
from tests.e2e.test_chat_page import ask
from tests.e2e.test_deck_page import TITLES
from tests.fakes.scripted_server import Reply
from tests.support.decks import DeckModel

pytestmark = LOOP

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
SCHEMES: tuple[Literal["light", "dark"], ...] = ("light", "dark")


async def serious_violations(page: Page) -> list[dict[str, Any]]:
    """What axe finds serious or critical on the page as it stands, in both schemes."""
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        # Evaluated, not added as a <script>: the page's CSP rightly refuses inline scripts.
        await page.evaluate(AXE.read_text())
    found = []
    for scheme in SCHEMES:
        await page.emulate_media(color_scheme=scheme)
        results = await page.evaluate(
            "axe.run(document, {resultTypes: ['violations']})"
            ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
            " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)})))"
        )
        found += [
            {"scheme": scheme, **v} for v in results if v["impact"] in ("serious", "critical")
        ]
    return found


async def test_the_empty_page_and_a_conversation_pass_axe(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(
        Reply.tool_calls([("web_search", {"query": "python 3.13"})]),
        Reply.text("Python **3.13** is out [1].", reasoning="The results say so."),
        Reply.text('{"questions": ["What changed?", "Is it faster?", "How to upgrade?"]}'),
    )
    await page.goto(app_url)
    await expect(page.locator("#examples .example")).not_to_have_count(0)
    found = await serious_violations(page)
    assert found == [], str(found)

    turn = await ask(page, "What is new in Python?")
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".follow-up")).to_have_count(3)
    found = await serious_violations(page)
    assert found == [], str(found)
    await page.emulate_media(color_scheme="dark")
    await page.screenshot(path=artifact("chat-page-dark.png"))


async def test_a_deck_passes_axe(page: Page, app_url: str, upstreams: Upstreams) -> None:
    upstreams.llm.responder = DeckModel(TITLES)
    await page.goto(app_url)
    await page.locator("#agent").select_option("pptx")
    turn = await ask(page, "6 friendly slides on solar power for students")
    await expect(turn).to_have_attribute("data-status", "completed")
    await expect(turn.locator(".deck .slide")).to_have_count(len(TITLES))

    found = await serious_violations(page)
    assert found == [], str(found)


CODE = """Here it is:

```python
# Greets everyone, twice.
def greet(names: list[str]) -> None:
    for name in names * 2:
        print(f"Hello, {name}!", len(name), True)
```
"""


async def test_coloured_code_is_readable_in_both_schemes(
    page: Page, app_url: str, upstreams: Upstreams
) -> None:
    upstreams.llm.script(Reply.text(CODE), Reply.text('{"questions": ["One?", "Two?", "Three?"]}'))
    await page.goto(app_url)
    turn = await ask(page, "Show me a greeting in Python")
    await expect(turn).to_have_attribute("data-status", "completed")
    code = turn.locator(".answer pre code")
    await expect(code).to_have_attribute("data-highlighted", "yes")
    kinds = await code.evaluate(
        "c => [...new Set([...c.querySelectorAll('span')].map(s => s.className))].sort()"
    )
    found = await serious_violations(page)
    await page.screenshot(path=artifact("code-answer.png"))

    assert {"hljs-keyword", "hljs-string", "hljs-comment", "hljs-title function_"} <= set(kinds)
    assert found == [], str(found)
