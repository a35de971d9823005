"""A virtualenv with real mem0 (from PyPI), shared by the mem0 tests and built once (see
``tests/_venvs.py``; ``scripts/test.sh`` builds it in the background, ~4 minutes on a cold
machine)."""

from __future__ import annotations

from pathlib import Path

from tests import _venvs

MEM0 = "mem0ai==1.0.11"


def build() -> Path:
    """The python of the virtualenv (mem0, and psycopg for its pgvector store), built
    first if needed; raises CalledProcessError or TimeoutExpired when PyPI cannot provide mem0."""
    return _venvs.build(MEM0.replace("==", "-"), [MEM0, "psycopg[binary,pool]>=3.1"], stamp=MEM0)


if __name__ == "__main__":
    _venvs.main(build)
