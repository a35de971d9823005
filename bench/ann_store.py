"""The SQLite store's HNSW index, measured through the store (BENCHMARKS.md §2).

    python bench/ann_store.py                      # 100k structured vectors
    python bench/ann_store.py --size 20000 --queries 50

Fills a SQLite file with ``--size`` structured unit vectors (the ``structured``
data of ``bench/ann_probe.py``: rank-32 Gaussian plus noise, a stand-in for
sentence embeddings), then opens two stores on it: one with the graph
(``ann_threshold`` at its default) and one without (``ann_threshold=None``,
exact: the ground truth). It waits for the background build, then times
unscoped searches (limit 10) on both and reports recall@10 of the graph's
answers against the exact ones; then closes the graph store (saving the
graph), reopens it and times how long until the saved graph serves searches.
Last, filtered searches on the reopened store against exact ones: a filter keeping
99% of the rows (like the one user of a personal agent, which the graph serves) and
one user's 1,000 rows (ranked exactly). Writes bench/results/ann_store.json.
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
from _common import machine, median, percentile, write_results  # noqa: E402
from ann_probe import DIM, timed, vectors  # noqa: E402

from memkit._filters import Condition  # noqa: E402
from memkit.stores.base import Record  # noqa: E402
from memkit.stores.sqlite import SQLiteStore  # noqa: E402


def fill(path: str, data: np.ndarray) -> None:
    store = SQLiteStore(path, ann_threshold=None)
    store.open(DIM, "synthetic")
    now = "2024-01-01T00:00:00+00:00"
    for start in range(0, len(data), 10_000):
        store.insert([Record(id=str(uuid.uuid4()), memory=f"m{i}", hash=f"{i:032x}", created_at=now,
                             updated_at=now, user_id=f"user-{i // 1000}", vector=data[i])
                      for i in range(start, min(start + 10_000, len(data)))])
    store.close()


def until_ready(store: SQLiteStore, query: np.ndarray) -> float:
    started = time.perf_counter()
    while True:
        store.search(query, limit=10)
        graph = store._matrix.ann
        if graph is not None and graph.ready and graph.covered == graph.fed:
            return time.perf_counter() - started
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threshold", type=int, default=20_000, help="the store's ann_threshold")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/ann_store.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    basis = np.random.default_rng(22).standard_normal((32, DIM)).astype(np.float32)
    data = vectors("structured", np.random.default_rng(21), basis, args.size)
    queries = vectors("structured", np.random.default_rng(23), basis, args.queries)
    path = os.path.join(tempfile.mkdtemp(prefix="ann-store-"), "store.db")
    t = time.perf_counter()
    fill(path, data)
    fill_seconds = time.perf_counter() - t
    print(f"filled {args.size} in {fill_seconds:.0f} s", file=sys.stderr, flush=True)
    exact = SQLiteStore(path, ann_threshold=None)
    graph = SQLiteStore(path, ann_threshold=args.threshold)
    build_seconds = until_ready(graph, queries[0])
    print(f"graph built in {build_seconds:.0f} s", file=sys.stderr, flush=True)
    exact.search(queries[0], limit=10)
    exact_times, truth = timed(exact, queries)
    ann_times, found = timed(graph, queries)
    recall = sum(len(a & b) for a, b in zip(found, truth, strict=True)) / (10 * len(queries))
    graph.close()
    saved_bytes = os.path.getsize(f"{path}.ann-memkit")
    reopened = SQLiteStore(path, ann_threshold=args.threshold)
    load_seconds = until_ready(reopened, queries[0])
    again_times, again = timed(reopened, queries)
    recall_again = sum(len(a & b) for a, b in zip(again, truth, strict=True)) / (10 * len(queries))
    scopes: dict[str, Any] = {}
    for name, where in (("broad_99pct", Condition(field="user_id", operator="ne", value="user-0")),
                        ("one_user_1k", Condition(field="user_id", operator="eq", value="user-7"))):
        exact_scoped, scoped_truth = timed(exact, queries, where=where)
        scoped, scoped_found = timed(reopened, queries, where=where)
        hits = sum(len(a & b) for a, b in zip(scoped_found, scoped_truth, strict=True))
        scopes[name] = {"p50": median(scoped), "p95": percentile(scoped, 95),
                        "exact_p50": median(exact_scoped), "recall_at_10": hits / (10 * len(queries))}
    reopened.close()
    exact.close()
    result: dict[str, Any] = {
        "size": args.size, "queries": len(queries), "fill_seconds": fill_seconds,
        "build_seconds": build_seconds, "exact_p50": median(exact_times),
        "exact_p95": percentile(exact_times, 95), "ann_p50": median(ann_times),
        "ann_p95": percentile(ann_times, 95), "recall_at_10": recall,
        "file_bytes": saved_bytes, "reopen_ready_seconds": load_seconds,
        "reopened_p50": median(again_times), "reopened_recall_at_10": recall_again,
        "filtered": scopes,
    }
    print(result)
    write_results(args.out, {"machine": machine(), "load_before": load_before,
                             "load_after": os.getloadavg(), "result": result,
                             "config": {"size": args.size, "queries": args.queries}})


if __name__ == "__main__":
    main()
