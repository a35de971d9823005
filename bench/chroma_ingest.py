"""Chroma ingest: raw chromadb against memkit's ChromaStore, in one run (BENCHMARKS.md §2).

    python bench/chroma_ingest.py                       # embedded (PersistentClient)
    python bench/chroma_ingest.py --url http://127.0.0.1:8000   # a Chroma server

Each variant fills a fresh collection with ``--records`` synthetic 384-dimensional
unit vectors in ``--batch``-sized calls and reports records per second; the
variants alternate, ``--repeat`` times, so load on a shared machine hits them alike:
raw ``add`` with no metadata, with one key, and with the metadata memkit writes
(the record as JSON and its typed field index); raw ``upsert`` with that metadata;
``ChromaStore.insert``; raw ``add`` with a larger HNSW batch and sync threshold; and
raw ``add`` in bigger calls. Writes bench/results/chroma_ingest.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from _common import machine, median, table, write_results  # noqa: E402

from memkit.stores.base import Record  # noqa: E402
from memkit.stores.chroma import ChromaStore, encode_metadata  # noqa: E402

DIM = 384
Meta = Callable[[Record], dict[str, Any] | None]


def records(rng: np.random.Generator, n: int) -> list[Record]:
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = "2024-01-01T00:00:00.000000+00:00"
    return [Record(id=str(uuid.uuid4()), memory=f"memory number {i} of user {i // 1000}",
                   hash=f"{i:032x}", created_at=now, updated_at=now, user_id=f"user-{i // 1000}",
                   vector=vectors[i]) for i in range(n)]


def client(url: str | None) -> Any:
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url)
        return chromadb.HttpClient(host=parsed.hostname, port=parsed.port or 8000,
                                   settings=settings)
    return chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="chroma-ingest-"),
                                     settings=settings)


def raw(args: argparse.Namespace, rows: list[Record], meta: Meta, method: str = "add",
        hnsw: dict[str, int] | None = None, batch: int | None = None) -> float:
    chroma = client(args.url)
    name = f"raw{uuid.uuid4().hex[:8]}"
    collection = chroma.create_collection(name, embedding_function=None,
                                          metadata={"hnsw:space": "cosine", **(hnsw or {})})
    size = batch or args.batch
    start = time.perf_counter()
    for at in range(0, len(rows), size):
        chunk = rows[at:at + size]
        call: dict[str, Any] = {"ids": [r.id for r in chunk],
                                "embeddings": [r.vector.tolist() for r in chunk if r.vector is not None],
                                "documents": [r.memory for r in chunk]}
        metadatas = [meta(r) for r in chunk]
        if metadatas[0] is not None:
            call["metadatas"] = metadatas
        getattr(collection, method)(**call)
    elapsed = time.perf_counter() - start
    chroma.delete_collection(name)
    return len(rows) / elapsed


def memkit(args: argparse.Namespace, rows: list[Record]) -> float:
    name = f"mk{uuid.uuid4().hex[:8]}"
    store = (ChromaStore(url=args.url, collection_name=name) if args.url else
             ChromaStore(path=tempfile.mkdtemp(prefix="chroma-ingest-"), collection_name=name))
    store.open(DIM, "synthetic")
    start = time.perf_counter()
    for at in range(0, len(rows), args.batch):
        store.insert(rows[at:at + args.batch])
    elapsed = time.perf_counter() - start
    store.client.delete_collection(name)
    return len(rows) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a Chroma server (default: embedded)")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/chroma_ingest.json")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    one_key: Meta = lambda r: {"user_id": r.user_id}  # noqa: E731
    variants: dict[str, Callable[[list[Record]], float]] = {
        "raw add, no metadata": lambda rows: raw(args, rows, lambda r: None),
        "raw add, 1 key": lambda rows: raw(args, rows, one_key),
        "raw add, memkit metadata": lambda rows: raw(args, rows, encode_metadata),
        "raw upsert, memkit metadata": lambda rows: raw(args, rows, encode_metadata, "upsert"),
        "memkit ChromaStore.insert": lambda rows: memkit(args, rows),
        "raw add, 1 key, hnsw:batch_size 10000, hnsw:sync_threshold 100000":
            lambda rows: raw(args, rows, one_key,
                             hnsw={"hnsw:batch_size": 10_000, "hnsw:sync_threshold": 100_000}),
        "raw add, 1 key, 5x bigger calls": lambda rows: raw(args, rows, one_key,
                                                            batch=5 * args.batch),
    }
    before = machine()
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeat):
        for name, run in variants.items():
            rates[name].append(run(records(rng, args.records)))
            print(f"{name}: {rates[name][-1]:.0f}/s", flush=True)
    rows = [[name, median(r), min(r), max(r)] for name, r in rates.items()]
    print(table(["variant", "records/s (median)", "min", "max"], rows))
    print(f"metadata keys per record: {len(encode_metadata(records(rng, 1)[0]))}")
    write_results(args.out, {"machine_before": before, "machine": machine(),
                             "mode": "server" if args.url else "embedded",
                             "records": args.records, "batch": args.batch, "rates": rates})


if __name__ == "__main__":
    main()
