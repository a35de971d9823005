"""A virtualenv with real CrewAI (from PyPI) and memkit's own dependencies, shared by the
CrewAI tests and built once (see ``tests/_venvs.py``).

CrewAI requires ``mcp<2`` and ``pydantic<2.13``; memkit's development set has ``mcp>=2``,
so CrewAI cannot live in the test run's virtualenv. This one holds CrewAI, memkit's core
dependencies and its ``local`` extra (the embedder of the example); memkit itself runs
from the source tree (``PYTHONPATH``), as a user's ``pip install 'memkit-ai[local,crewai]'``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests import _venvs

CREWAI = "crewai==1.15.30"
ROOT = Path(__file__).resolve().parents[3]


def packages() -> list[str]:
    """CrewAI, pinned, and what memkit's core and ``local`` extra require."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [CREWAI, *project["dependencies"], *project["optional-dependencies"]["local"]]


def build() -> Path:
    """The python of the virtualenv, built first if needed."""
    return _venvs.build(CREWAI.replace("==", "-"), packages())


if __name__ == "__main__":
    _venvs.main(build)
