"""The house rules a reader relies on: no module reaches for another module's private names,
and none grows past what a reader can hold in their head."""

from __future__ import annotations

import ast
from pathlib import Path

import memkit

ROOT = Path(memkit.__file__).parent


def test_no_private_names_cross_modules() -> None:
    """A helper two modules share has a home under a name of its own (a private module, such as
    ``memkit/_guard.py``, may hold it; its name has no leading underscore)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name}"
                          for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not found, "\n".join(found)


#: a module a reader can hold in their head; a longer one is split by concern
MAX_LINES = 600


def test_no_module_over_the_line_limit() -> None:
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in sorted(ROOT.rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, "\n".join(long)
