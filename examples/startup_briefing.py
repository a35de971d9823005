"""An agent's startup briefing: what it should know before the first message of a session.

Runs offline: memories are stored as given (``infer=False``), so no LLM is called, and
the embedder is memkit's local default. Run it with ``python examples/startup_briefing.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from memkit import Memory

AGENT = {"user_id": "alice", "agent_id": "assistant"}

with tempfile.TemporaryDirectory() as notes, Memory({"vector_store": "memory"}) as memory:
    # -- an earlier session left tasks, a standing instruction and some facts ----------------
    report = memory.add("Draft the Q3 report for Alice", **AGENT, infer=False,
                        memory_type="task", importance=0.9).results[0].id
    memory.add("Book the team offsite in Porto", **AGENT, infer=False, memory_type="task")
    invoices = memory.add("Send the May invoices", **AGENT, infer=False,
                          memory_type="task").results[0].id
    memory.add("Alice wants answers in short bullet points", **AGENT, infer=False,
               surface="startup")
    memory.add("Alice is allergic to peanuts", **AGENT, infer=False, importance=1.0)
    memory.add("Alice's favourite editor is Helix", **AGENT, infer=False, importance=0.3)
    memory.update_task(report, status="in_progress")
    memory.update_task(invoices, status="done")  # done: no longer briefed

    # -- and Alice's notes folder is indexed into the same memory ---------------------------
    (Path(notes) / "projects.md").write_text(
        "# Q3 report\nNumbers come from the finance dashboard, tab 'Quarterly'.\n")
    indexed = memory.index_folder(notes, **AGENT)
    print(f"indexed {indexed.added} sections of {indexed.files} note files")

    # -- a new session starts: brief the agent within a token budget -------------------------
    briefing = memory.startup_context(**AGENT, budget_tokens=300)
    print(f"\nsystem prompt ({briefing.tokens} of {briefing.budget_tokens} tokens):\n")
    print(briefing.text)

    # -- during the session the agent looks up details, notes included ----------------------
    hit = memory.search("where do the Q3 numbers come from?", **AGENT, limit=1).results[0]
    print(f"search: {hit.memory.splitlines()[-1]!r} from {Path(hit.location or '').name}")
