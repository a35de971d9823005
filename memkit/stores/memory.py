"""In-process store: the reference implementation (filters by the reference evaluator).

Beside the records it keeps their ids and creation times sorted
(:class:`~memkit.stores._sorted.SortedKeys`), so a ``list`` page starts at its
cursor by bisection and reads only the records it walks past.
"""

from __future__ import annotations

import builtins
import math
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from memkit._errors import VectorStoreError
from memkit._filters import Filter, matches
from memkit.stores._sorted import SortedKeys, read, walk
from memkit.stores.base import Hit, Order, Record, Vector, VectorStore, Writer, check_collection, cosine_to_score

_WORD = re.compile(r"\w+")


def _terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class InMemoryStore(VectorStore):
    """Records in a dict; brute-force cosine search and BM25 keyword search. Nothing persists."""

    provider = "memory"
    default_history_path = ":memory:"
    supports_keyword = True
    locks_processes = True  # no other process can reach it

    def __init__(self, collection_name: str = "memkit") -> None:
        super().__init__()
        self.collection_name = collection_name
        self._records: dict[str, Record] = {}
        self._keys = SortedKeys()
        self._dimension: int | None = None
        self._model: str | None = None
        self._lock = threading.RLock()

    def open(self, dimension: int, model: str) -> None:
        with self._lock:
            if self._dimension is not None:
                check_collection(self.collection_name, (self._dimension, self._model), dimension, model)
            self._dimension, self._model = dimension, model

    def shadow(self, dimension: int, model: str) -> InMemoryStore:
        shadow = InMemoryStore(self.collection_name)
        shadow.open(dimension, model)
        return shadow

    def switch(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, InMemoryStore)
        with self._lock:
            self._records, self._keys, self._dimension, self._model = (
                shadow._records, shadow._keys, shadow._dimension, shadow._model)

    def discard(self, shadow: VectorStore) -> None:
        shadow.reset()

    @contextmanager
    def transaction(self, key: str = "") -> Iterator[Writer]:
        """All or nothing: a failure part-way (history included) restores the records."""
        with self._write_lock.hold(), self._lock:
            snapshot = dict(self._records)
            try:
                yield self
            except BaseException:
                self._records = snapshot
                self._keys = SortedKeys((r.id, r.created_at) for r in snapshot.values())
                raise

    def reset(self) -> None:
        with self._lock:
            self._records.clear()
            self._keys = SortedKeys()

    def _check(self, vector: Vector | None) -> None:
        if vector is not None and self._dimension is not None and vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds {self._dimension} dimensions"
            )

    def insert(self, records: Sequence[Record]) -> None:
        with self._lock:
            for record in records:
                if record.vector is None:
                    raise VectorStoreError(f"record {record.id} has no vector")
                self._check(record.vector)
            for record in records:
                self._records[record.id] = replace(record, metadata=dict(record.metadata))
            self._keys.put((r.id, r.created_at) for r in records)

    def update(self, records: Sequence[Record]) -> None:
        with self._lock:
            for record in records:
                if record.id not in self._records:
                    raise VectorStoreError(f"no record {record.id} to update")
                self._check(record.vector)
            for record in records:
                vector = record.vector if record.vector is not None else self._records[record.id].vector
                self._records[record.id] = replace(record, metadata=dict(record.metadata), vector=vector)
            self._keys.put((r.id, r.created_at) for r in records)

    def delete(self, ids: Sequence[str]) -> None:
        with self._lock:
            for id in ids:
                self._records.pop(id, None)
            self._keys.remove(ids)

    def get(self, id: str) -> Record | None:
        with self._lock:
            record = self._records.get(id)
            return None if record is None else replace(record, vector=None)

    def _matching(self, filter: Filter | None) -> list[Record]:
        with self._lock:
            return [r for r in self._records.values() if matches(filter, r.lookup)]

    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> list[Hit]:
        self._check(vector)
        candidates = self._matching(filter)
        if not candidates:
            return []
        matrix = np.stack([r.vector for r in candidates if r.vector is not None])
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(vector) or 1.0)
        sims = (matrix @ vector) / np.where(norms == 0, 1.0, norms)
        order = np.argsort(-sims, kind="stable")[:limit]
        return [
            Hit(replace(candidates[i], vector=None), cosine_to_score(float(sims[i]))) for i in order
        ]

    def keyword_search(self, text: str, limit: int, filter: Filter | None = None) -> list[Hit]:
        """Okapi BM25 (k1=1.2, b=0.75) over the matching records; the best hit scores 1."""
        query = set(_terms(text))
        candidates = self._matching(filter)
        if not query or not candidates:
            return []
        docs = [Counter(_terms(r.memory)) for r in candidates]
        average = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
        frequency = {t: sum(1 for d in docs if t in d) for t in query}
        scored = []
        for record, doc in zip(candidates, docs, strict=True):
            length = sum(doc.values())
            score = sum(
                math.log(1 + (len(docs) - frequency[t] + 0.5) / (frequency[t] + 0.5))
                * doc[t] * 2.2 / (doc[t] + 1.2 * (0.25 + 0.75 * length / average))
                for t in query if doc[t]
            )
            if score > 0:
                scored.append((score, record))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        best = scored[0][0] if scored else 1.0
        return [Hit(replace(r, vector=None), score / best) for score, r in scored[:limit]]

    def list(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[list[Record], str | None]:
        with self._lock:
            page, next_cursor = read(walk(self._keys, filter, limit, cursor, order), self._fetch)
        return [replace(r, vector=None) for r in page], next_cursor

    def _fetch(self, ids: builtins.list[str]) -> builtins.list[Record]:
        return [self._records[id] for id in ids if id in self._records]

    def count(self, filter: Filter | None = None) -> int:
        return len(self._matching(filter))
