"""kill -9 a writer in the middle of adds, updates, deletes and reverts: afterwards every
memory's history and its version chain tell the same story."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path

from memkit import HistoryRecord, Memory, MemoryItem
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM

WRITER = """
import random, sys
from memkit import ConflictError, Memory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM

m = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=SQLiteStore(sys.argv[1]))
rng = random.Random(int(sys.argv[2]))
ids = []
step = 0
while True:
    step += 1
    roll = rng.random()
    try:
        if roll < 0.3 or not ids:
            ids.append(m.add(f"fact {step}", user_id="u", infer=False).results[0].id)
        elif roll < 0.6:
            m.update(rng.choice(ids), f"fact {step} (updated)")
        elif roll < 0.75:
            m.delete(rng.choice(ids))
        else:
            m.revert(rng.choice(m.history(rng.choice(ids))).id)
    except (ConflictError, KeyError):  # already reverted, changed since, already deleted
        pass
    print(step, flush=True)
"""


def expected_periods(rows: list[HistoryRecord]) -> tuple[list[str], bool]:
    """The texts a memory held, in order, and whether it is ended, as its history tells."""
    texts: list[str] = []
    ended = False
    for row in rows:
        if row.event in ("ADD", "UPDATE"):
            assert row.new_value is not None
            texts.append(row.new_value)
            ended = False
        elif row.event == "DELETE":
            ended = True
    return texts, ended


def check_agreement(m: Memory, memory_id: str) -> None:
    rows = m.history(memory_id)
    chain: list[MemoryItem] = m.versions(memory_id)
    texts, ended = expected_periods(rows)
    assert [v.memory for v in chain] == texts, (rows, chain)
    assert chain[-1].id == memory_id
    assert (chain[-1].valid_to is not None) == ended
    assert all(v.valid_to is not None for v in chain[:-1])
    # versions follow each other; a gap is a deletion that a revert undid
    assert all(a.valid_to is not None and b.valid_from is not None and a.valid_to <= b.valid_from
               for a, b in itertools.pairwise(chain))


def test_history_and_versions_agree_after_a_writer_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for seed, kill_after in ((1, 40), (2, 90)):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(seed)],
                                  stdout=subprocess.PIPE, text=True, env=env)
        assert writer.stdout is not None
        for _ in range(kill_after):
            assert writer.stdout.readline(), "the writer stopped early"
        writer.send_signal(signal.SIGKILL)
        writer.wait(60)
        assert writer.returncode == -signal.SIGKILL
        writer.stdout.close()
    store = SQLiteStore(str(path))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store) as m:
        current = {i.id for i in m.get_all(user_id="u", limit=1000, include_expired=True).results}
        page, _ = store.list(limit=10_000)
        heads = {r.id for r in page if not any(o.supersedes == r.id for o in page)}
        assert current <= heads and len(heads) >= 10
        for memory_id in sorted(heads):
            check_agreement(m, memory_id)
