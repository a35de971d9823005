"""A virtualenv with real mem0 (from PyPI), shared by the mem0 tests and built once.

``python -m tests.mem0.environment`` builds it ahead of time: ``scripts/test.sh`` starts
that in the background, so the ~4 minutes a cold machine spends installing mem0 overlap
the rest of the run. A file lock makes the tests wait for a build under way instead of
starting a second one. ``MEMKIT_TEST_CACHE`` moves the cache folder.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MEM0 = "mem0ai==1.0.11"


def venv_path() -> Path:
    cache = Path(os.environ.get("MEMKIT_TEST_CACHE") or Path(tempfile.gettempdir()) / "memkit-test-cache")
    return cache / f"{MEM0.replace('==', '-')}-py{sys.version_info[0]}{sys.version_info[1]}"


def build() -> Path:
    """The python of the virtualenv, built first if needed; raises CalledProcessError or
    TimeoutExpired when PyPI cannot provide mem0."""
    venv = venv_path()
    python = venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a build under way finishes before this one looks
        if (venv / "ready").exists():
            return python
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                       capture_output=True, timeout=300)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        MEM0, "psycopg[binary,pool]>=3.1"], check=True, capture_output=True, timeout=900)
        (venv / "ready").write_text(MEM0)
    return python


if __name__ == "__main__":
    try:
        print(build())
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:  # the tests report it
        print(f"could not build the mem0 environment: {exc}", file=sys.stderr)
