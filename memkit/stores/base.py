"""The vector store interface every backend implements.

A store holds :class:`Record` objects: a memory's text, built-in fields, the
caller's metadata and its vector. Stores speak only the portable filter tree
(:mod:`memkit._filters`); each backend translates it, in a pure function, or
raises :class:`~memkit.FilterError`.

Async methods default to running the sync method in a worker thread; a store
with a native async client overrides them.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from memkit._filters import MISSING, And, Condition, Filter, all_of
from memkit._models import HistoryRecord, MemoryItem
from memkit._time import to_datetime

Vector = npt.NDArray[np.float32]


@dataclass(slots=True)
class Record:
    """One memory as a store keeps it. Timestamps are ISO strings (``memkit._time.to_iso``)."""

    id: str
    memory: str
    hash: str
    created_at: str
    updated_at: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: Vector | None = None

    def lookup(self, name: str) -> Any:
        """A field's value for the filter evaluator, or ``MISSING``."""
        value = getattr(self, name) if name in _BUILTINS else self.metadata.get(name, MISSING)
        return MISSING if value is None else value

    def payload(self) -> dict[str, Any]:
        """Everything but the id and the vector, JSON-serialisable."""
        return {
            "memory": self.memory, "hash": self.hash,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id,
            "metadata": self.metadata,
        }

    @classmethod
    def from_payload(cls, id: str, payload: dict[str, Any], vector: Vector | None = None) -> Record:
        return cls(
            id=id, memory=payload["memory"], hash=payload["hash"],
            created_at=payload["created_at"], updated_at=payload["updated_at"],
            user_id=payload.get("user_id"), agent_id=payload.get("agent_id"),
            run_id=payload.get("run_id"), metadata=dict(payload.get("metadata") or {}),
            vector=vector,
        )

    def with_vector(self, vector: Vector | None) -> Record:
        return replace(self, vector=vector)

    def to_item(self, score: float | None = None) -> MemoryItem:
        return MemoryItem(
            id=self.id, memory=self.memory, hash=self.hash, metadata=self.metadata,
            user_id=self.user_id, agent_id=self.agent_id, run_id=self.run_id,
            created_at=to_datetime(self.created_at), updated_at=to_datetime(self.updated_at),
            score=score,
        )


_BUILTINS = frozenset({"memory", "hash", "user_id", "agent_id", "run_id", "created_at", "updated_at"})


@dataclass(slots=True)
class Hit:
    record: Record
    score: float  # in [0, 1], higher is better


@dataclass(slots=True)
class WriteBatch:
    """Changes applied together by :meth:`VectorStore.apply`.

    ``adds`` whose hash already exists among the records matching
    ``dedup_scope`` (or earlier in the same batch) are skipped, atomically with
    respect to other ``apply`` calls on the store; their history rows too.
    """

    adds: list[Record] = field(default_factory=list)
    updates: list[Record] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    history: list[HistoryRecord] = field(default_factory=list)
    dedup_scope: Filter | None = None


def hash_filter(scope: Filter | None, hashes: Sequence[str]) -> Filter:
    """Records in ``scope`` whose hash is one of ``hashes``."""
    cond = Condition(field="hash", operator="in", value=tuple(hashes))
    combined = all_of(scope, cond)
    assert combined is not None
    return combined


class VectorStore(ABC):
    """A collection of records with vectors of one dimension and one embedding model."""

    #: whether :meth:`keyword_search` is implemented
    supports_keyword: ClassVar[bool] = False
    #: provider name used in config
    provider: ClassVar[str] = ""
    #: operators (``"icontains"``) or combinators (``"NOT"``) this store rejects with FilterError
    unsupported_filters: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self._write_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------
    @abstractmethod
    def open(self, dimension: int, model: str) -> None:
        """Create the collection, or check that the stored one has this dimension and model.

        A mismatch raises :class:`~memkit.ConfigError` naming both.
        """

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections. Idempotent."""

    @abstractmethod
    def reset(self) -> None:
        """Delete every record (the collection stays open)."""

    # -- primitives ------------------------------------------------------
    @abstractmethod
    def insert(self, records: Sequence[Record]) -> None:
        """Insert records (vectors required)."""

    @abstractmethod
    def update(self, record: Record) -> None:
        """Replace a record (and its vector when given; otherwise keep the old vector)."""

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Delete records; unknown ids are ignored."""

    @abstractmethod
    def get(self, id: str) -> Record | None:
        """A record by id (without its vector), or ``None``."""

    @abstractmethod
    def search(self, vector: Vector, *, limit: int, filter: Filter | None = None) -> list[Hit]:
        """The ``limit`` nearest records matching ``filter``, best first.

        Scores are cosine similarity mapped to [0, 1]: ``(1 + cos) / 2``.
        Whenever at least ``limit`` records match, ``limit`` hits come back.
        """

    def keyword_search(self, text: str, *, limit: int, filter: Filter | None = None) -> list[Hit]:
        """Full-text ranking of ``text`` (plain words, never query syntax), scores in [0, 1]."""
        raise NotImplementedError(f"{type(self).__name__} has no keyword search")

    @abstractmethod
    def list(
        self, filter: Filter | None = None, *, limit: int = 100, cursor: str | None = None
    ) -> tuple[list[Record], str | None]:
        """Records matching ``filter`` in ascending id order, and the cursor of the next page."""

    @abstractmethod
    def count(self, filter: Filter | None = None) -> int:
        """How many records match ``filter``."""

    # -- composite -------------------------------------------------------
    def apply(self, batch: WriteBatch, history: HistoryLike) -> set[str]:
        """Apply a batch and record its history; return the ids of adds skipped as duplicates."""
        with self._write_lock:
            skipped = self._duplicates(batch)
            adds = [r for r in batch.adds if r.id not in skipped]
            if adds:
                self.insert(adds)
            for record in batch.updates:
                self.update(record)
            if batch.deletes:
                self.delete(batch.deletes)
            rows = [h for h in batch.history if h.memory_id not in skipped]
            if rows:
                history.add(rows)
            return skipped

    def _duplicates(self, batch: WriteBatch) -> set[str]:
        if not batch.adds:
            return set()
        hashes = sorted({r.hash for r in batch.adds})
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            page, cursor = self.list(hash_filter(batch.dedup_scope, hashes), limit=1000, cursor=cursor)
            seen.update(r.hash for r in page)
            if cursor is None:
                break
        skipped: set[str] = set()
        for record in batch.adds:
            if record.hash in seen:
                skipped.add(record.id)
            seen.add(record.hash)
        return skipped

    # -- async (thread fallback) ----------------------------------------
    async def aopen(self, dimension: int, model: str) -> None:
        await asyncio.to_thread(self.open, dimension, model)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def areset(self) -> None:
        await asyncio.to_thread(self.reset)

    async def aget(self, id: str) -> Record | None:
        return await asyncio.to_thread(self.get, id)

    async def asearch(
        self, vector: Vector, *, limit: int, filter: Filter | None = None
    ) -> builtins.list[Hit]:
        return await asyncio.to_thread(self.search, vector, limit=limit, filter=filter)

    async def akeyword_search(
        self, text: str, *, limit: int, filter: Filter | None = None
    ) -> builtins.list[Hit]:
        return await asyncio.to_thread(self.keyword_search, text, limit=limit, filter=filter)

    async def alist(
        self, filter: Filter | None = None, *, limit: int = 100, cursor: str | None = None
    ) -> tuple[builtins.list[Record], str | None]:
        return await asyncio.to_thread(self.list, filter, limit=limit, cursor=cursor)

    async def acount(self, filter: Filter | None = None) -> int:
        return await asyncio.to_thread(self.count, filter)

    async def aapply(self, batch: WriteBatch, history: HistoryLike) -> set[str]:
        return await asyncio.to_thread(self.apply, batch, history)


class HistoryLike(ABC):
    @abstractmethod
    def add(self, records: Sequence[HistoryRecord]) -> None: ...


def cosine_to_score(cos: float) -> float:
    """Map a cosine similarity in [-1, 1] to a score in [0, 1]."""
    return min(1.0, max(0.0, (1.0 + cos) / 2.0))


__all__ = [
    "And",
    "HistoryLike",
    "Hit",
    "Record",
    "Vector",
    "VectorStore",
    "WriteBatch",
    "cosine_to_score",
    "hash_filter",
]
