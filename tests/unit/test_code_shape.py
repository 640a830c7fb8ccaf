"""The code's shape stays readable for the next engineer: modules small enough to hold in
one's head, a short composition root, and wiring whose arguments are named.

Limits from issue 58; they fail the build when a change quietly grows past them, so a
split is decided when the module is written, not found by a reviewer later.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
PYTHON_MAX_LINES = 550
JAVASCRIPT_MAX_LINES = 450
LIFESPAN_MAX_LINES = 60
POSITIONAL_MAX = 3


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _too_long(paths: list[Path], limit: int) -> list[str]:
    return [f"{p.relative_to(ROOT)}: {n}" for p in paths if (n := _lines(p)) > limit]


def test_no_python_module_is_over_550_lines() -> None:
    assert _too_long(sorted(APP.rglob("*.py")), PYTHON_MAX_LINES) == []


def test_no_javascript_module_of_ours_is_over_450_lines() -> None:
    ours = [p for p in sorted((APP / "web").rglob("*.js")) if "vendor" not in p.parts]
    assert ours, "the page's modules moved: update this test"
    assert _too_long(ours, JAVASCRIPT_MAX_LINES) == []


def _function(tree: ast.Module, name: str) -> ast.AsyncFunctionDef | ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"no {name} in the module")


def test_the_lifespan_is_at_most_60_lines() -> None:
    lifespan = _function(ast.parse((APP / "factory.py").read_text(encoding="utf-8")), "lifespan")
    assert lifespan.end_lineno is not None
    assert lifespan.end_lineno - lifespan.lineno + 1 <= LIFESPAN_MAX_LINES


@pytest.mark.parametrize(
    "factory", sorted(APP.rglob("factory.py")), ids=lambda p: str(p.relative_to(APP))
)
def test_no_constructor_in_the_wiring_takes_more_than_three_positional_arguments(
    factory: Path,
) -> None:
    """Constructors are the capitalised calls: two adjacent floats passed by position can be
    swapped unnoticed, a keyword cannot."""
    tree = ast.parse(factory.read_text(encoding="utf-8"))
    crowded = [
        f"line {node.lineno}: {ast.unparse(node.func)} with {len(node.args)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.unparse(node.func).rpartition(".")[2][:1].isupper()
        and len(node.args) > POSITIONAL_MAX
    ]
    assert crowded == []
