"""Rewrite the generated blocks of README.md and docs/ from memkit's own lists.

    python scripts/docs_tables.py          # rewrite
    python scripts/docs_tables.py --check  # exit 1 if a block is stale (tests/test_docs.py runs this)

A block is the text between ``<!-- generated: NAME -->`` and ``<!-- /generated -->``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memkit.stores import extras_list, store_names, store_table  # noqa: E402

BLOCKS: dict[str, Callable[[], str]] = {
    "stores-table": store_table,
    "stores-names": lambda: f"Vector store providers: {store_names()}.",
    "stores-extras": extras_list,
}
FILES = ("README.md", "docs/index.md", "docs/configuration.md", "docs/backends.md")
BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.DOTALL)


def render(text: str) -> str:
    return BLOCK.sub(lambda m: f"{m.group(1)}{BLOCKS[m.group(2)]()}\n{m.group(4)}", text)


def stale() -> list[str]:
    return [name for name in FILES if render((ROOT / name).read_text(encoding="utf-8"))
            != (ROOT / name).read_text(encoding="utf-8")]


def main() -> int:
    if "--check" in sys.argv:
        names = stale()
        for name in names:
            print(f"{name}: a generated block is stale; run python scripts/docs_tables.py")
        return 1 if names else 0
    for name in FILES:
        path = ROOT / name
        path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
