"""Runs a script of examples/ as a user would, offline, and returns what it printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, tmp_path: Path, *, deprecations_fail: bool = True, python: Path | None = None) -> str:
    """``deprecations_fail=False`` for a framework that trips a DeprecationWarning of its own;
    ``python``: another interpreter (a framework's own virtualenv) than the test run's."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MEMKIT_LLM_MODEL")}
    env.update(HOME=str(tmp_path), MEMKIT_EXAMPLE_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    warnings = ["-W", "error::DeprecationWarning"] if deprecations_fail else []
    done = subprocess.run([str(python or sys.executable), *warnings, str(ROOT / "examples" / name)],
                          env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout
