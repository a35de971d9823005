"""The memory lifecycle at 10k memories (docs/benchmarks.md, "Lifecycle").

    python bench/lifecycle.py                     # ~1-2 min on 2 cores
    python bench/lifecycle.py --memories 2000 --queries 100

(a) Search latency with decay on against decay off: one SQLite file of
``--memories`` memories in one scope (HashEmbedder, verbatim adds of 500
messages each, typed memories 45 days old), three ``Memory`` objects on it:
decay off; decay on with reinforcement off; decay on with reinforcement on
(the default with decay: every hit is buffered and written 64 at a time). Each
query goes to all three in a rotating order, so that load from other processes
falls on each alike; p50/p95 of each and the ratios to decay off.

(b) Consolidation of ``--memories`` memories of which 10% are near-duplicates
of another (the same words, case and punctuation changed): the time of
``consolidate(dry_run=False)``, the clusters found, and a check that nothing is
lost: every merged memory has ended, lists its keeper in ``versions`` and has
its DELETE in ``history``, and every memory ever added is still readable
through ``versions``.

Writes bench/results/lifecycle.json.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _common import machine, percentile, table, write_results  # noqa: E402

from memkit import Memory  # noqa: E402
from memkit.testing import HashEmbedder, ScriptedLLM  # noqa: E402

TYPES = ["observation", "decision", "preference", "fact", None]
START = datetime(2025, 1, 1, tzinfo=UTC)


def sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        text = "User " + " ".join(rng.sample(words, 8))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def memory(path: str, clock: datetime, **lifecycle: Any) -> Memory:
    return Memory({"vector_store": {"provider": "sqlite", "config": {"path": path}},
                   "lifecycle": lifecycle}, llm=ScriptedLLM(), embedder=HashEmbedder(),
                  clock=lambda: clock)


def fill(m: Memory, texts: list[str]) -> list[str]:
    ids: list[str] = []
    for start in range(0, len(texts), 500):
        chunk = texts[start:start + 500]
        kind = TYPES[(start // 500) % len(TYPES)]
        added = m.add([{"role": "user", "content": t} for t in chunk], user_id="u", infer=False,
                      memory_type=kind)
        ids += [e.id for e in added.results]
    return ids


def search_latency(workdir: str, n: int, queries: int) -> dict[str, Any]:
    path = os.path.join(workdir, "search.db")
    texts = sentences(n, seed=1)
    with memory(path, START) as loader:
        started = time.perf_counter()
        fill(loader, texts)
        load_s = time.perf_counter() - started
    later = START + timedelta(days=45)
    variants = {"off": memory(path, later, decay=False),
                "on": memory(path, later, decay=True, reinforce=False),
                "on+reinforce": memory(path, later, decay=True)}
    rng = random.Random(2)
    asked = [" ".join(rng.choice(texts).split()[1:5]) for _ in range(queries)]
    for m in variants.values():  # warm each (open the store, first queries)
        for q in asked[:10]:
            m.search(q, user_id="u", limit=10)
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for i, q in enumerate(asked):
        for name in names[i % 3:] + names[:i % 3]:
            t0 = time.perf_counter()
            variants[name].search(q, user_id="u", limit=10)
            times[name].append((time.perf_counter() - t0) * 1000)
    for m in variants.values():
        m.close()
    p50 = {k: percentile(v, 50) for k, v in times.items()}
    p95 = {k: percentile(v, 95) for k, v in times.items()}
    return {"memories": n, "queries": queries, "load_s": round(load_s, 2),
            "p50_ms": {k: round(v, 2) for k, v in p50.items()},
            "p95_ms": {k: round(v, 2) for k, v in p95.items()},
            "ratio_p50": {k: round(v / p50["off"], 3) for k, v in p50.items()},
            "ratio_p95": {k: round(v / p95["off"], 3) for k, v in p95.items()}}


def near_duplicate(text: str, rng: random.Random) -> str:
    return rng.choice([text.lower() + "!", text.upper(), text + ".", "  " + text.lower()])


def consolidation(workdir: str, n: int) -> dict[str, Any]:
    rng = random.Random(3)
    duplicates = n // 10
    base = sentences(n - duplicates, seed=4)
    copies = [near_duplicate(t, rng) for t in rng.sample(base, duplicates)]
    texts = base + copies
    rng.shuffle(texts)
    path = os.path.join(workdir, "consolidate.db")
    with memory(path, START) as m:
        ids = fill(m, texts)
        started = time.perf_counter()
        report = m.consolidate(user_id="u", dry_run=False)
        seconds = time.perf_counter() - started
        merged = [(c.keeper.id, item.id) for c in report.clusters for item in c.merged]
        lost: list[str] = []
        for keeper, gone in merged:
            chain = {v.id for v in m.versions(gone)}
            events = [h.event for h in m.history(gone)]
            if m.get(gone) is not None or keeper not in chain or gone not in chain or \
                    events[-1:] != ["DELETE"]:
                lost.append(gone)
        unreachable = [i for i in ids if i not in {v.id for v in m.versions(i)}]
        current = len(m.get_all(user_id="u", limit=n).results)
    return {"memories": n, "near_duplicates": duplicates, "seconds": round(seconds, 2),
            "clusters": len(report.clusters), "merged": len(merged), "current_after": current,
            "merged_not_reachable": len(lost), "ids_not_reachable": len(unreachable)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/lifecycle.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        search = search_latency(workdir, args.memories, args.queries)
        print(table(["search (10 results)", "p50 ms", "p95 ms", "p50 / off", "p95 / off"], [
            [name, search["p50_ms"][name], search["p95_ms"][name], search["ratio_p50"][name],
             search["ratio_p95"][name]] for name in search["p50_ms"]]))
        merged = consolidation(workdir, args.memories)
        print(table(list(merged), [list(merged.values())]))
    write_results(args.out, {"machine": machine(), "search": search, "consolidation": merged})


if __name__ == "__main__":
    main()
