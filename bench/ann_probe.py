"""Can an HNSW index meet the SQLite store's 100k target? (BENCHMARKS.md §2)

    pip install usearch           # or the local extra, which now brings it
    python bench/ann_probe.py     # 1k, 10k, 100k; random and structured vectors
    python bench/ann_probe.py --sizes 1000 10000 --data random

For each data set and size it measures, over ``--queries`` queries, limit 10:

- ``exact``: the SQLite store's own unscoped search (``SQLiteStore.search``,
  NumPy over the in-RAM matrix), which is also the ground truth;
- ``hnsw``: a usearch HNSW graph (int8 vectors, cosine) asked for
  ``--candidates`` keys, re-ranked exactly with the float32 vectors, for each
  ``--ef`` (the search beam), with recall@10 against ``exact``; and the
  graph's build time on these cores.

Data sets: ``random`` are the unit vectors ``bench/scale.py`` uses (isotropic
Gaussian, 384 dimensions: the worst case for any graph index, since no
neighbourhood structure exists); ``structured`` are unit vectors of a rank-32
Gaussian plus 10% isotropic noise, a stand-in for sentence embeddings, whose
intrinsic dimension is low. Queries are drawn from the same distribution.
Writes bench/results/ann_probe.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from _common import machine, median, percentile, table, write_results  # noqa: E402

DIM = 384


def vectors(kind: str, rng: np.random.Generator, basis: np.ndarray, n: int) -> np.ndarray:
    if kind == "random":
        block = rng.standard_normal((n, DIM), dtype=np.float32)
    else:
        block = rng.standard_normal((n, basis.shape[0]), dtype=np.float32) @ basis
        noise = rng.standard_normal((n, DIM), dtype=np.float32)
        block = block / np.linalg.norm(block, axis=1, keepdims=True) + 0.1 * noise / np.sqrt(DIM)
    return block / np.linalg.norm(block, axis=1, keepdims=True)


def timed(store: Any, queries: np.ndarray, field: str = "id",
          where: Any = None) -> tuple[list[float], list[set[str]]]:
    """Seconds per search (limit 10; unscoped unless ``where`` filters), and the ``field``
    of the hits of each."""
    times, answers = [], []
    for q in queries:
        t = time.perf_counter()
        hits = store.search(q, limit=10, filter=where)
        times.append(time.perf_counter() - t)
        answers.append({getattr(h.record, field) for h in hits})
    return times, answers


def probe(kind: str, sizes: list[int], args: argparse.Namespace) -> list[dict[str, Any]]:
    from usearch.index import Index

    from memkit.stores.base import Record
    from memkit.stores.sqlite import SQLiteStore

    rng = np.random.default_rng(21)
    basis = np.random.default_rng(22).standard_normal((32, DIM)).astype(np.float32)
    data = vectors(kind, rng, basis, max(sizes))
    queries = vectors(kind, np.random.default_rng(23), basis, args.queries)
    store = SQLiteStore(os.path.join(tempfile.mkdtemp(prefix="ann-probe-"), "probe.db"))
    store.open(DIM, "synthetic")
    now = "2024-01-01T00:00:00+00:00"
    rows, filled = [], 0
    for size in sorted(sizes):
        store.insert([Record(id=str(uuid.uuid4()), memory=f"m{i}", hash=f"{i:032x}", created_at=now,
                             updated_at=now, user_id=f"user-{i // 1000}", vector=data[i])
                      for i in range(filled, size)])
        filled = size
        store.search(queries[0], limit=10)
        times, exact = timed(store, queries, "hash")
        row: dict[str, Any] = {"data": kind, "size": size, "exact_p50": median(times),
                               "exact_p95": percentile(times, 95), "hnsw": []}
        index = Index(ndim=DIM, metric="cos", dtype="i8", connectivity=args.connectivity,
                      expansion_add=args.expansion_add)
        t = time.perf_counter()
        index.add(np.arange(size, dtype=np.uint64), data[:size], threads=os.cpu_count() or 1)
        row["build_seconds"] = time.perf_counter() - t
        for ef in args.ef:
            index.expansion_search = ef
            times, found = [], 0
            for q, truth in zip(queries, exact, strict=True):
                t = time.perf_counter()
                keys = index.search(q, min(args.candidates, size)).keys.astype(np.int64)
                best = keys[np.argsort(-(data[keys] @ q), kind="stable")[:10]]
                times.append(time.perf_counter() - t)
                found += len({f"{k:032x}" for k in best.tolist()} & truth)
            row["hnsw"].append({"ef": ef, "p50": median(times), "p95": percentile(times, 95),
                                "recall_at_10": found / (10 * len(queries))})
        rows.append(row)
        best = max(row["hnsw"], key=lambda h: h["recall_at_10"])
        print(f"  {kind} {size}: exact {1000 * row['exact_p50']:.2f} ms, build {row['build_seconds']:.1f} s,"
              f" hnsw ef {best['ef']} {1000 * best['p50']:.2f} ms recall {best['recall_at_10']:.3f}",
              file=sys.stderr, flush=True)
    store.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--data", nargs="+", default=["random", "structured"],
                        choices=["random", "structured"])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=100,
                        help="keys asked of the graph, re-ranked exactly")
    parser.add_argument("--ef", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--connectivity", type=int, default=16)
    parser.add_argument("--expansion-add", type=int, default=128)
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/ann_probe.json")
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = os.getloadavg()
    results = [row for kind in args.data for row in probe(kind, args.sizes, args)]
    table_rows = [[r["data"], r["size"], 1000 * r["exact_p50"], 1000 * r["exact_p95"], r["build_seconds"],
                   h["ef"], 1000 * h["p50"], 1000 * h["p95"], h["recall_at_10"]]
                  for r in results for h in r["hnsw"]]
    print("\nunscoped search, limit 10, times in ms")
    print(table(["data", "memories", "exact p50", "exact p95", "hnsw build s", "ef", "hnsw p50",
                 "hnsw p95", "recall@10"], table_rows))
    config = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    write_results(args.out, {"machine": machine(), "load_before": load_before,
                             "load_after": os.getloadavg(), "seconds": time.perf_counter() - started,
                             "results": results, "config": config})


if __name__ == "__main__":
    main()
