"""The client code the integration docs give is the code the client tests run.

`docs/integrate/ai-sdk.md` and `ag-ui.md` show integrators a transport and an
agent that resume a cut stream; tests/integration/test_takeover_balanced.py
runs the files in tests/js with the real npm packages. Each page must hold its
file whole, byte for byte, in one code block, so what is tested is what is read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("page", "code"),
    [
        ("docs/integrate/ai-sdk.md", "tests/js/ai-sdk/resuming-transport.mjs"),
        ("docs/integrate/ag-ui.md", "tests/js/ag-ui/resuming-agent.mjs"),
    ],
)
def test_the_docs_give_the_tested_client_code_whole(page: str, code: str) -> None:
    text = (ROOT / page).read_text()
    block = f"```js\n{(ROOT / code).read_text()}```\n"

    assert block in text, f"{page} must show {code} as it is, in a ```js block"
