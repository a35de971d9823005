"""The code examples in README.md and docs/ run as they are written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import in_ci

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
PAGES = sorted(
    p for p in [ROOT / "README.md", *ROOT.glob("docs/*.md")]
    if p.exists() and "```python" in p.read_text() and p.name != "api.md"  # api.md: generated signatures
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


def test_every_public_name_is_in_the_api_reference() -> None:
    import memkit

    reference = (ROOT / "docs" / "reference.md").read_text()
    for name in memkit.__all__:
        if name == "__version__":
            continue
        assert f"::: memkit.{name}\n" in reference, name
        if name != "Filter":  # a type alias; its docstring is the string after it
            assert (getattr(memkit, name).__doc__ or "").strip(), f"{name} has no docstring"
    import memkit.tools

    assert "::: memkit.tools\n" in reference
    for name in memkit.tools.__all__:
        if name != "TOOLS":  # a constant; its docstring is the string after it
            assert (getattr(memkit.tools, name).__doc__ or "").strip(), f"memkit.tools.{name} has no docstring"


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """The API reference is generated from the docstrings; a broken link or reference fails."""
    import shutil
    import subprocess
    import sys

    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        reason = "mkdocs is not installed: pip install 'memkit-ai[docs]'"
        pytest.fail(reason) if in_ci() else pytest.skip(reason)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "top_k" in page and "HistoryList" in page


@pytest.mark.slow  # subprocesses: the full tier runs it
def test_generated_pages_match_the_code() -> None:
    """README's and the docs' store lists and docs/api.md are generated from the code."""
    import subprocess
    import sys

    for script in ("scripts/docs_tables.py", "scripts/api_reference.py"):
        done = subprocess.run([sys.executable, script, "--check"], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_store_list_names_every_store_once_everywhere() -> None:
    import subprocess
    import sys

    from memkit.stores import PROVIDERS, STORES

    assert set(STORES) == set(PROVIDERS)
    for page in ("README.md", "docs/index.md", "docs/configuration.md", "docs/backends.md"):
        assert "<!-- generated: stores-" in (ROOT / page).read_text(), page
    done = subprocess.run([sys.executable, "-m", "memkit.cli", "--help"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}, timeout=120)
    for name in PROVIDERS:
        assert name in done.stdout.split("Vector store provider:")[1], name
