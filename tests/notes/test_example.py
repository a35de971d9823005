"""examples/startup_briefing.py runs offline and shows an agent's startup briefing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_startup_briefing_example(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMKIT_")}
    env["HOME"] = str(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "startup_briefing.py")],
                         env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "indexed 1 sections of 1 note files" in out
    prompt = out.split("tokens):\n\n")[1]
    lines = prompt.splitlines()
    assert lines[0] == "## Open tasks"
    assert lines[1].startswith("- [in_progress] Draft the Q3 report for Alice (task id: ")
    assert lines[2].startswith("- [open] Book the team offsite in Porto")
    assert "## Remember\n- Alice wants answers in short bullet points" in prompt
    assert "## Important\n- Alice is allergic to peanuts\n- Alice's favourite editor is Helix" in prompt
    assert "May invoices" not in prompt
    assert "search: \"Numbers come from the finance dashboard, tab 'Quarterly'.\" from projects.md" in out
