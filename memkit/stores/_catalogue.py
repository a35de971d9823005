"""What each vector store is for: the one list README, docs and ``memkit --help`` are generated from.

``tests/test_docs.py`` checks that every generated block in the docs matches this list
(``python scripts/docs_tables.py`` rewrites them) and that it names every provider.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoreInfo:
    title: str
    extra: str | None
    """The pip extra that brings its client (None: nothing to install)."""
    runs: str
    """Where the data lives: in the process, in a file or folder, or on a server."""
    pick: str
    """When to pick it."""


STORES: dict[str, StoreInfo] = {
    "sqlite": StoreInfo(
        "SQLite", None, "one file (default)",
        "the default: one process or several on one machine, up to ~1M memories, nothing to run"),
    "memory": StoreInfo(
        "in-memory", None, "the process",
        "tests and notebooks: nothing is kept after the process ends"),
    "qdrant": StoreInfo(
        "Qdrant", "qdrant", "a Qdrant server, or local mode in a folder",
        "you already run Qdrant, or want its server's scale-out"),
    "chroma": StoreInfo(
        "Chroma", "chroma", "a Chroma server, or a folder",
        "you already run Chroma"),
    "pgvector": StoreInfo(
        "PostgreSQL + pgvector", "pgvector", "a PostgreSQL server",
        "several machines share one memory, or your data already lives in PostgreSQL"),
    "milvus": StoreInfo(
        "Milvus", "milvus", "a Milvus Lite file, or a Milvus server or cluster",
        "very large collections on a Milvus cluster"),
    "lancedb": StoreInfo(
        "LanceDB", "lancedb", "a folder (or object storage)",
        "embedded columnar storage, e.g. a memory kept beside other Lance data"),
    "faiss": StoreInfo(
        "FAISS", "faiss", "an index file plus a SQLite file beside it",
        "an embedded exact index you can copy around as files"),
    "redis": StoreInfo(
        "Redis (search)", "redis", "a Redis server with its search module (Redis 8, or Redis Stack)",
        "you already run Redis 8 or Redis Stack"),
}


def store_names() -> str:
    """``sqlite (default), memory, qdrant, ...``: for help texts."""
    return ", ".join(f"{name} (default)" if name == "sqlite" else name for name in STORES)


def store_table() -> str:
    """The "which store" table, as markdown."""
    rows = ["| provider | store | install | data lives in | pick it when |", "|---|---|---|---|---|"]
    for name, info in STORES.items():
        extra = f"`pip install 'memkit-ai[{info.extra}]'`" if info.extra else "included"
        rows.append(f"| `{name}` | {info.title} | {extra} | {info.runs} | {info.pick} |")
    return "\n".join(rows)


def extras_list() -> str:
    """The store extras, as a markdown sentence."""
    extras = [f"`{info.extra}` ({info.title})" for info in STORES.values() if info.extra]
    return "Store extras: " + ", ".join(extras) + "."
