"""Ingest and search at scale for every available store (BENCHMARKS.md §2).

    python bench/scale.py                                   # 1k, 10k, 100k; ~10 min on 2 cores
    python bench/scale.py --sizes 1000 10000 --stores sqlite memory
    MEMKIT_TEST_PG_DSN=postgresql://... python bench/scale.py   # adds pgvector
    bash -c 'source scripts/engines.sh && engines_start && python bench/scale.py \
        --stores pgvector chroma-server --out bench/results/scale-servers.json'   # throwaway servers

Each store runs in its own process (so its peak RSS is its own), fills itself
with synthetic 384-dimensional unit vectors through the store API (one
``insert`` call per ``--batch`` records, by default one per size step, as an
import of a large export does; 1,000 memories per user), and at each size
measures search latency (p50/p95) for ``--queries`` random query vectors:
unscoped, scoped to one user among many, filtered on a metadata key that one
record in ten matches, and both, each with its recall@10 against exact search over the
same records (NumPy, in the benchmark process); "with query embedding" adds
embedding a real question with the local embedder to each search; "list" is a
page of 100 in id order from a random cursor ("list_newest" newest first from a
cursor in the middle of the creation times, one a second; "list_scoped" in id
order within one user's memories). A store whose next size would take
longer than ``--budget`` seconds to fill stops there.

Then the real pipeline: the local embedder's load time and throughput, and
``Memory.add(infer=False)`` on LoCoMo turns against that raw throughput.
Writes bench/results/scale.json and, when matplotlib is installed,
bench/results/scale.png.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    locomo_sessions,
    machine,
    median,
    percentile,
    table,
    write_results,
)
from ann_probe import vectors as synthetic  # noqa: E402

DIM = 384
DEFAULT_DATA = REPO.parent / "shared/data/locomo/locomo10-dev.json"
STORES = ["sqlite", "memory", "qdrant", "chroma", "chroma-server", "pgvector", "milvus", "lancedb"]


def open_store(name: str, workdir: str, args: argparse.Namespace) -> Any:
    from memkit.stores.base import VectorStore

    store: VectorStore
    if name == "sqlite":
        from memkit.stores.sqlite import SQLiteStore

        store = SQLiteStore(path=os.path.join(workdir, "scale.db"))
    elif name == "memory":
        from memkit.stores.memory import InMemoryStore

        store = InMemoryStore()
    elif name == "qdrant":
        from memkit.stores.qdrant import QdrantStore

        store = QdrantStore(path=os.path.join(workdir, "qdrant"))
    elif name == "chroma":
        from memkit.stores.chroma import ChromaStore

        store = ChromaStore(path=os.path.join(workdir, "chroma"))
    elif name == "chroma-server":
        from memkit.stores.chroma import ChromaStore

        store = ChromaStore(url=args.chroma_url,
                            collection_name=f"scale_{uuid.uuid4().hex[:8]}")
    elif name == "pgvector":
        from memkit.stores.pgvector import PgVectorStore

        store = PgVectorStore(dsn=args.pg_dsn, collection_name=f"scale_{uuid.uuid4().hex[:8]}",
                              ef_search=args.pg_ef_search[0])
    elif name == "milvus":
        from memkit.stores.milvus import MilvusStore

        store = MilvusStore(uri=os.path.join(workdir, "milvus.db"))
    elif name == "lancedb":
        from memkit.stores.lancedb import LanceDBStore

        store = LanceDBStore(path=os.path.join(workdir, "lancedb"))
    else:
        raise SystemExit(f"unknown store {name}")
    store.open(DIM, "synthetic-unit-vectors")
    return store


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    block = rng.standard_normal((n, DIM), dtype=np.float32)
    return block / np.linalg.norm(block, axis=1, keepdims=True)


#: the rank-32 basis of ``--vectors structured`` (bench/ann_probe.py's stand-in for
#: sentence embeddings, on which HNSW behaves as on real ones; on uniformly random
#: vectors its recall collapses)
_BASIS = np.random.default_rng(22).standard_normal((32, DIM)).astype(np.float32)


def searchers(name: str, store: Any, args: argparse.Namespace) -> list[tuple[str, Any]]:
    """The store, and for pgvector the same collection at each further ``--pg-ef-search``."""
    found = [("", store)]
    if name == "pgvector":
        from memkit.stores.pgvector import PgVectorStore

        for ef in args.pg_ef_search[1:]:
            other = PgVectorStore(dsn=args.pg_dsn, collection_name=store.collection_name,
                                  ef_search=ef)
            other.open(DIM, "synthetic-unit-vectors")
            found.append((f"@ef{ef}", other))
    return found


def exact_ids(vectors: np.ndarray, ids: np.ndarray, mask: np.ndarray | None,
              query: np.ndarray, k: int = 10) -> set[str]:
    """The ids of the ``k`` records nearest ``query`` among those ``mask`` keeps."""
    pool, pool_ids = (vectors, ids) if mask is None else (vectors[mask], ids[mask])
    scores = pool @ query
    top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
    return {str(i) for i in pool_ids[top]}


def recall(store: Any, flt: Any, mask: np.ndarray | None, queries: np.ndarray,
           vectors: np.ndarray, ids: np.ndarray) -> float:
    found = [len({h.record.id for h in store.search(q, limit=10, filter=flt)}
                 & exact_ids(vectors, ids, mask, q)) / 10 for q in queries]
    return float(np.mean(found))


def run_store(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One store, in this process: fill to each size and measure."""
    from memkit._filters import And, Condition
    from memkit._time import to_iso
    from memkit.embeddings.local import LocalEmbedder
    from memkit.stores.base import Record, cursor_of

    workdir = tempfile.mkdtemp(prefix=f"scale-{name}-")
    store = open_store(name, workdir, args)
    embedder = LocalEmbedder()
    questions = args.questions[: args.queries]
    embedder.embed(questions[:2])
    rng = np.random.default_rng(11)
    queries = synthetic(args.vectors, np.random.default_rng(12), _BASIS, args.queries)
    scope = Condition(field="user_id", operator="eq", value="user-0")
    topic = Condition(field="topic", operator="eq", value="t3")
    filtered = {"unscoped": None, "scoped": scope, "metadata": topic,
                "scoped_metadata": And(items=(scope, topic))}
    epoch = datetime(2024, 1, 1, tzinfo=UTC)
    filled, sizes = 0, {}
    cursors: list[Record] = []
    blocks: list[np.ndarray] = []
    all_ids: list[str] = []
    for size in sorted(args.sizes):
        start = time.perf_counter()
        while filled < size:
            n = min(args.batch or size, size - filled)
            vectors = synthetic(args.vectors, rng, _BASIS, n)
            records = []
            for j, i in enumerate(range(filled, filled + n)):
                created = to_iso(epoch + timedelta(seconds=i))
                records.append(Record(
                    id=str(uuid.uuid4()), memory=f"memory number {i} of user {i // 1000}",
                    hash=f"{i:032x}", created_at=created, updated_at=created,
                    user_id=f"user-{i // args.per_user}", metadata={"topic": f"t{i % 10}"},
                    vector=vectors[j]))
            store.insert(records)
            blocks.append(vectors)
            all_ids += [r.id for r in records]
            cursors += records[:: max(1, n // 20)]
            filled += n
        ingest_s = time.perf_counter() - start
        row: dict[str, Any] = {
            "ingest_seconds": ingest_s,
            "ingest_per_s": size_delta(sizes, size) / ingest_s if ingest_s else None,
        }
        vectors_so_far, ids = np.concatenate(blocks), np.array(all_ids)
        blocks = [vectors_so_far]
        numbers = np.arange(size)
        in_scope, on_topic = numbers // args.per_user == 0, numbers % 10 == 3
        masks = {"unscoped": None, "scoped": in_scope, "metadata": on_topic,
                 "scoped_metadata": in_scope & on_topic}
        for suffix, searcher in searchers(name, store, args):
            for label, flt in filtered.items():
                searcher.search(queries[0], limit=10, filter=flt)
                row[label + suffix] = _timed([
                    lambda q=q, f=flt, s=searcher: s.search(q, limit=10, filter=f)
                    for q in queries], args.query_budget)
                row[label + suffix]["recall_at_10"] = recall(
                    searcher, flt, masks[label], queries[: args.recall_queries],
                    vectors_so_far, ids)
            if searcher is not store:
                searcher.close()
        for label, flt in (("unscoped", None), ("scoped", scope)):
            store.search(queries[0], limit=10, filter=flt)
            row[f"{label}_embed"] = _timed([
                lambda t=t, f=flt: store.search(embedder.embed([t])[0], limit=10, filter=f)
                for t in questions], args.query_budget)
        if name.startswith("chroma"):  # the same query on the chromadb collection itself
            raw = store.client.get_collection(store.collection_name)
            row["raw_chromadb_unscoped"] = _timed([
                lambda q=q, raw=raw: raw.query(query_embeddings=[q.tolist()], n_results=10,
                                               include=["metadatas", "distances"])
                for q in queries], args.query_budget)
        row["list"] = _timed([lambda c=c: store.list(limit=100, cursor=c.id)
                              for c in cursors[: args.queries]], args.query_budget)
        row["list_newest"] = _timed([
            lambda c=c: store.list(limit=100, cursor=cursor_of(c, "newest"), order="newest")
            for c in cursors[: args.queries]], args.query_budget)
        row["list_scoped"] = _timed([lambda c=c: store.list(scope, limit=100, cursor=c.id)
                                     for c in cursors[: args.queries]], args.query_budget)
        sizes[str(size)] = row
        series = ", ".join(f"{k} {1000 * v['p50']:.2f} ms (recall {v['recall_at_10']:.3f})"
                           for k, v in row.items() if isinstance(v, dict) and "recall_at_10" in v)
        print(f"  {name} {size}: ingest {ingest_s:.1f} s, p50 {series}"
              f", list {1000 * row['list']['p50']:.2f} ms"
              f" (newest {1000 * row['list_newest']['p50']:.2f}, scoped"
              f" {1000 * row['list_scoped']['p50']:.2f})"
              + (f", raw chromadb {1000 * row['raw_chromadb_unscoped']['p50']:.2f} ms"
                 if "raw_chromadb_unscoped" in row else ""), file=sys.stderr, flush=True)
        next_sizes = [s for s in args.sizes if s > size]
        if next_sizes and ingest_s / max(1, size_delta(sizes, size)) * (
                next_sizes[0] - size) > args.budget:
            print(f"  {name}: stopping before {next_sizes[0]} (over the {args.budget} s budget)",
                  file=sys.stderr)
            break
    store.close()
    return {"store": name, "sizes": sizes, "peak_rss_mb": _peak_rss_mb()}


def size_delta(sizes: dict[str, Any], size: int) -> int:
    done = [int(s) for s in sizes if int(s) < size]
    return size - (max(done) if done else 0)


def _timed(calls: list[Any], budget: float) -> dict[str, Any]:
    """Wall p50/p95 of ``calls`` and their mean CPU time (the process's, all threads: on a
    busy machine the fairer measure of a change)."""
    times: list[float] = []
    started, cpu = time.perf_counter(), time.process_time()
    for call in calls:
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
        if time.perf_counter() - started > budget and len(times) >= 5:
            break
    cpu_mean = (time.process_time() - cpu) / len(times) if times else 0.0
    return {"n": len(times), "p50": median(times), "p95": percentile(times, 95), "cpu": cpu_mean}


def _ms(series: dict[str, Any] | None) -> float | None:
    return None if series is None else 1000 * series["p50"]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_pipeline(args: argparse.Namespace) -> dict[str, Any]:
    """Local embedder load and throughput; Memory.add(infer=False) against it."""
    from memkit import Memory
    from memkit._eval.locomo import load_samples
    from memkit.embeddings.local import LocalEmbedder

    sessions = locomo_sessions(load_samples(args.data))[: args.pipeline_sessions]
    count = sum(len(s) for s in sessions)

    start = time.perf_counter()
    embedder = LocalEmbedder()
    embedder.embed(["load"])
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    for texts in sessions:
        embedder.embed(texts)
    raw_s = time.perf_counter() - start

    workdir = tempfile.mkdtemp(prefix="scale-pipeline-")
    config = {"vector_store": {"provider": "sqlite",
                               "config": {"path": os.path.join(workdir, "memkit.db")}}}
    with Memory.from_config(config, embedder=embedder) as memory:
        start = time.perf_counter()
        for i, texts in enumerate(sessions):
            memory.add([{"role": "user", "content": t} for t in texts], user_id=f"u{i % 5}",
                       infer=False)
        add_s = time.perf_counter() - start
        questions = args.questions[: args.queries]
        memory.search(questions[0], user_id="u0", limit=10)
        search = _timed([lambda q=q: memory.search(q, user_id="u0", limit=10)
                         for q in questions], args.query_budget)
        at_size = _search_at_size(memory, embedder, os.path.join(workdir, "memkit.db"), count, args)
    return {
        "texts": count, "sessions": len(sessions), "embedder_load_s": load_s,
        "embedder_per_s": count / raw_s, "add_infer_false_per_s": count / add_s,
        "add_vs_raw": raw_s / add_s, "memory_search_hybrid_with_embedding": search,
        "search_at_size": at_size,
    }


def _search_at_size(memory: Any, embedder: Any, path: str, filled: int,
                    args: argparse.Namespace) -> dict[str, Any]:
    """``Memory.search`` (hybrid, with the query's embedding) once the store holds
    ``--search-size`` memories, nearly all of them the searched user's: LoCoMo turns over
    again with random vectors, written through a second connection to the file. The embedder alone is timed in the
    same run."""
    from memkit.stores.base import Record
    from memkit.stores.sqlite import SQLiteStore

    store = SQLiteStore(path)
    store.open(embedder.dimension, embedder.model_name)
    turns = [t for t in args.turn_texts if t.strip()]
    rng = np.random.default_rng(13)
    now = "2024-01-01T00:00:00+00:00"
    for start in range(filled, args.search_size, 1000):
        end = min(start + 1000, args.search_size)
        vectors = unit(rng, end - start)
        store.insert([Record(id=str(uuid.uuid4()), memory=turns[i % len(turns)], hash=f"{i:032x}",
                             created_at=now, updated_at=now, user_id="u0",
                             vector=vectors[i - start]) for i in range(start, end)])
    store.close()
    questions = args.questions[: args.queries]
    memory.search(questions[0], user_id="u0", limit=10)
    return {
        "memories": max(filled, args.search_size),
        "embed_query": _timed([lambda q=q: embedder.embed([q]) for q in questions], args.query_budget),
        "memory_search": _timed([lambda q=q: memory.search(q, user_id="u0", limit=10)
                                 for q in questions], args.query_budget),
    }


def child(args: argparse.Namespace) -> None:
    result = run_pipeline(args) if args.one == "pipeline" else run_store(args.one, args)
    sys.stdout.write(json.dumps(result) + "\n")


def available(args: argparse.Namespace) -> list[str]:
    found = []
    for name in args.stores:
        if name == "pgvector" and not args.pg_dsn:
            print("pgvector: skipped (no --pg-dsn / MEMKIT_TEST_PG_DSN)")
            continue
        if name == "chroma-server" and not args.chroma_url:
            print("chroma-server: skipped (no --chroma-url / MEMKIT_TEST_CHROMA_URL)")
            continue
        module = {"sqlite": None, "memory": None, "qdrant": "qdrant_client",
                  "chroma": "chromadb", "chroma-server": "chromadb",
                  "pgvector": "psycopg", "milvus": "pymilvus", "lancedb": "lancedb"}[name]
        if module:
            try:
                __import__(module)
            except ImportError:
                print(f"{name}: skipped ({module} is not installed)")
                continue
        found.append(name)
    return found


def plot(results: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for r in results:
        sizes = [int(s) for s in r["sizes"]]
        for ax, key in zip(axes, ("unscoped", "scoped"), strict=False):
            ax.plot(sizes, [1000 * r["sizes"][str(s)][key]["p50"] for s in sizes], "o-",
                    label=r["store"])
        axes[2].plot(sizes, [r["sizes"][str(s)]["ingest_per_s"] for s in sizes], "o-",
                     label=r["store"])
    titles = ("search p50, unscoped (ms)", "search p50, one user's 1k (ms)", "ingest (records/s)")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("memkit stores, 384-dim synthetic vectors, query embedding excluded")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", default=STORES, choices=STORES)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=0,
                        help="records per insert call (0: one call per size step)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--query-budget", type=float, default=15.0,
                        help="seconds per latency series before it stops (at least 5 queries)")
    parser.add_argument("--budget", type=float, default=150.0,
                        help="seconds a store may take to fill the next size")
    parser.add_argument("--pipeline-sessions", type=int, default=60)
    parser.add_argument("--search-size", type=int, default=10_000,
                        help="memories in the store when Memory.search is timed at size")
    parser.add_argument("--no-pipeline", action="store_true",
                        help="measure the stores only, not the real pipeline")
    parser.add_argument("--recall-queries", type=int, default=20,
                        help="queries whose recall@10 against exact search is measured")
    parser.add_argument("--pg-ef-search", type=int, nargs="+", default=[40],
                        help="pgvector's ef_search; each further value measures the searches again")
    parser.add_argument("--vectors", choices=["random", "structured"], default="random",
                        help="the stores' synthetic vectors: uniformly random, or rank-32"
                        " Gaussian plus noise (like sentence embeddings, for ANN recall)")
    parser.add_argument("--pg-dsn", default=os.environ.get("MEMKIT_TEST_PG_DSN"))
    parser.add_argument("--chroma-url", default=os.environ.get("MEMKIT_TEST_CHROMA_URL"),
                        help="a Chroma server for the chroma-server store")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/scale.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    from memkit._eval.locomo import entries, load_samples

    samples = load_samples(args.data)
    args.questions = [qa["question"] for s in samples for qa in s["qa"]]
    args.turn_texts = [e.text for s in samples for e in entries(s, "turns")]
    if args.one:
        child(args)
        return

    started = time.perf_counter()
    results, pipeline = [], None
    argv = sys.argv[1:]
    for name in [*available(args), *([] if args.no_pipeline else ["pipeline"])]:
        print(f"{name} ...", flush=True)
        proc = subprocess.run([sys.executable, __file__, *argv, "--one", name],
                              capture_output=True, text=True)
        sys.stderr.write(proc.stderr[-2000:] if proc.returncode else proc.stderr)
        if proc.returncode != 0:
            print(f"{name}: failed", flush=True)
            continue
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        if name == "pipeline":
            pipeline = result
        else:
            results.append(result)

    rows = []
    for r in results:
        for size, s in r["sizes"].items():
            rows.append([r["store"], size, s["ingest_per_s"],
                         1000 * s["unscoped"]["p50"], 1000 * s["unscoped"]["p95"],
                         1000 * s["scoped"]["p50"], 1000 * s["scoped"]["p95"],
                         1000 * s["unscoped_embed"]["p50"], 1000 * s["scoped_embed"]["p50"],
                         1000 * s["list"]["p50"], _ms(s.get("list_newest")),
                         _ms(s.get("list_scoped")), r["peak_rss_mb"]])
    print("\nsearch latency in ms (limit 10); scoped = one user's 1k among many")
    print(table(["store", "memories", "ingest/s", "unscoped p50", "p95", "scoped p50", "p95",
                 "unscoped+embed p50", "scoped+embed p50", "list page p50", "newest page p50",
                 "scoped page p50", "peak RSS MB"],
                rows))
    if pipeline:
        print("\nreal pipeline (local embedder, SQLite, LoCoMo turns)")
        print(table(["embedder load s", "embedder texts/s", "add(infer=False) texts/s",
                     "add / raw", "Memory.search p50 ms (hybrid, with embedding)"],
                    [[pipeline["embedder_load_s"], pipeline["embedder_per_s"],
                      pipeline["add_infer_false_per_s"], pipeline["add_vs_raw"],
                      1000 * pipeline["memory_search_hybrid_with_embedding"]["p50"]]]))
        at = pipeline["search_at_size"]
        print(f"\nMemory.search at {at['memories']:,} memories (hybrid, with the query's embedding), ms")
        print(table(["embed query p50", "Memory.search p50", "p95", "CPU a search",
                     "CPU an embedding"],
                    [[1000 * at["embed_query"]["p50"], 1000 * at["memory_search"]["p50"],
                      1000 * at["memory_search"]["p95"], 1000 * at["memory_search"]["cpu"],
                      1000 * at["embed_query"]["cpu"]]]))
    png = plot(results, args.out.with_suffix(".png")) if results else None
    elapsed = time.perf_counter() - started
    print(f"\ntotal {elapsed:.0f} s")
    hidden = ("questions", "turn_texts", "one", "pg_dsn", "chroma_url")
    config = {k: v for k, v in vars(args).items() if k not in hidden}
    write_results(args.out, {
        "machine": machine(), "seconds": elapsed, "stores": results, "pipeline": pipeline,
        "plot": str(png) if png else None,
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in config.items()},
    })


if __name__ == "__main__":
    main()
