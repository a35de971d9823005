"""README command (1) runs examples/quickstart.py: it works offline and shows what it says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MEMKIT_LLM_MODEL")}
    env["HOME"] = str(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MEMKIT_QUICKSTART_DB"] = str(tmp_path / "quickstart.db")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    search = out.split("search: what should I cook for alice?")[1].splitlines()
    assert "I'm vegetarian and allergic to peanuts." in search[1]
    assert "UPDATE \"I'm vegetarian and allergic to peanuts.\" -> \"I'm vegan and allergic to peanuts.\"" in out
    assert "No LLM configured" in out
