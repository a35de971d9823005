"""The house rules a reader relies on: no module reaches for another module's private names."""

from __future__ import annotations

import ast
from pathlib import Path

import memkit

ROOT = Path(memkit.__file__).parent
#: where every shared helper has a home under a name of its own
CLEAN = ("cli", "server", "history", "stores", "graph", "mcp", "integrations", "ui")


def test_no_private_names_cross_modules() -> None:
    found = []
    for package in CLEAN:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom):
                    found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name}"
                              for alias in node.names
                              if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not found, "\n".join(found)
