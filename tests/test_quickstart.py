"""README command (1) runs examples/quickstart.py: offline, the whole curated pipeline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs_offline_and_shows_the_curated_pipeline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MEMKIT_LLM_MODEL")}
    env["HOME"] = str(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MEMKIT_QUICKSTART_DB"] = str(tmp_path / "quickstart.db")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout

    assert "SCRIPTED" in out  # the stand-in model is labelled as such
    assert "llm='FunctionLLM'" in out and "embedder='all-MiniLM-L6-v2'" in out
    first, second, third = out.split("\nadd ")[1:4]
    assert [line.split()[0] for line in first.splitlines()[1:4]] == ["ADD", "ADD", "ADD"]
    assert "UPDATE 'Lives in Lisbon (moved from Porto)'  (was: 'Lives in Porto')" in second
    assert "DELETE 'Goes bouldering on weekends'" in second
    assert "NONE   'Is vegetarian'" in third
    search = out.split("search 'where does alice live?':\n")[1].splitlines()
    assert search[0].endswith("Lives in Lisbon (moved from Porto)")
    history = out.split("history of ")[1].splitlines()
    assert history[1].split()[0] == "ADD" and history[2].split()[0] == "UPDATE"
    final = out.split("what alice's memory holds now:\n")[1].splitlines()
    assert sorted(final) == ["  - Is vegetarian", "  - Lives in Lisbon (moved from Porto)"]
