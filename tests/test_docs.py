"""The code examples in README.md and docs/ run as they are written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
PAGES = sorted(
    p for p in [ROOT / "README.md", *ROOT.glob("docs/*.md")] if p.exists() and "```python" in p.read_text()
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = BLOCK.findall(page.read_text())
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for index, block in enumerate(blocks):
        code = compile(block, f"{page.name}[block {index}]", "exec")
        exec(code, namespace)
