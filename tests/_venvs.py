"""Virtualenvs of their own, from PyPI, for frameworks that cannot be installed beside
memkit's development set (mem0, CrewAI): built once, kept under the temp folder
(``MEMKIT_TEST_CACHE`` moves it) and rebuilt when their package list changes.

``scripts/test.sh`` builds them in the background, so the minutes a cold machine spends
installing overlap the rest of the run. A file lock makes the tests wait for a build
under way instead of starting a second one.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path


def venv_path(name: str) -> Path:
    """Where the virtualenv ``name`` lives, for this Python."""
    cache = Path(os.environ.get("MEMKIT_TEST_CACHE") or Path(tempfile.gettempdir()) / "memkit-test-cache")
    return cache / f"{name}-py{sys.version_info[0]}{sys.version_info[1]}"


def build(name: str, packages: Sequence[str], stamp: str | None = None) -> Path:
    """The python of the virtualenv ``name`` holding ``packages``, built first if needed;
    raises CalledProcessError or TimeoutExpired when PyPI cannot provide them. ``stamp``
    (default: the package list) is what a built virtualenv records; another one rebuilds it."""
    venv = venv_path(name)
    python = venv / "bin" / "python"
    wanted = "\n".join(packages) if stamp is None else stamp
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a build under way finishes before this one looks
        ready = venv / "ready"
        if ready.exists() and ready.read_text() == wanted:
            return python
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                       capture_output=True, timeout=300)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages],
                       check=True, capture_output=True, timeout=900)
        ready.write_text(wanted)
    return python


def main(build: Callable[[], Path]) -> None:
    """``python -m tests.<framework>.environment``: build ahead of time; a failure is
    reported here and again, with pip's output, by the tests that need the virtualenv."""
    try:
        print(build())
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        print(f"could not build the environment: {exc}", file=sys.stderr)


def python_for_tests(build: Callable[[], Path], what: str) -> Path:
    """``build()`` for a test fixture: when PyPI cannot provide ``what``, the test is skipped
    locally and fails in CI, with pip's output."""
    import pytest

    from tests.conftest import in_ci

    try:
        return build()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        output = getattr(exc, "stderr", b"") or b""
        reason = f"could not install {what} from PyPI: {output.decode(errors='replace')[-2000:]}"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
