"""In-process store: the reference implementation (filters by the reference evaluator).

Beside the records it keeps two sorted indexes, of ids and of (creation time,
id), so a ``list`` page starts at its cursor by bisection and reads only the
records it walks past (every record it reads is a match when there is no filter).
"""

from __future__ import annotations

import math
import re
import threading
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import Filter, matches
from memkit.stores.base import (
    Hit,
    Order,
    Record,
    Vector,
    VectorStore,
    Writer,
    cosine_to_score,
    cursor_key,
    cursor_of,
)

_WORD = re.compile(r"\w+")
#: a write of more records than this re-sorts the indexes instead of inserting one by one
_RESORT = 64


def _terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class InMemoryStore(VectorStore):
    """Records in a dict; brute-force cosine search and BM25 keyword search. Nothing persists."""

    provider = "memory"
    supports_keyword = True

    def __init__(self, collection_name: str = "memkit") -> None:
        super().__init__()
        self.collection_name = collection_name
        self._records: dict[str, Record] = {}
        #: the ids, sorted; and (created_at, id), sorted
        self._ids: list[str] = []
        self._times: list[tuple[str, str]] = []
        self._dimension: int | None = None
        self._model: str | None = None
        self._lock = threading.RLock()

    def open(self, dimension: int, model: str) -> None:
        with self._lock:
            if self._dimension is not None and (self._dimension, self._model) != (dimension, model):
                raise ConfigError(
                    f"collection {self.collection_name!r} holds {self._dimension}-dimensional vectors "
                    f"of {self._model!r}; got {dimension}-dimensional vectors of {model!r}"
                )
            self._dimension, self._model = dimension, model

    def shadow(self, dimension: int, model: str) -> InMemoryStore:
        shadow = InMemoryStore(self.collection_name)
        shadow.open(dimension, model)
        return shadow

    def switch(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, InMemoryStore)
        with self._lock:
            self._records, self._dimension, self._model = (
                shadow._records, shadow._dimension, shadow._model)
            self._ids, self._times = shadow._ids, shadow._times

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
                self._resort()
                raise

    def reset(self) -> None:
        with self._lock:
            self._records.clear()
            self._ids, self._times = [], []

    def _resort(self) -> None:
        self._ids = sorted(self._records)
        self._times = sorted((r.created_at, r.id) for r in self._records.values())

    def _put(self, records: Iterable[Record]) -> None:
        """Store ``records`` (replacing those with their ids) and keep the indexes sorted."""
        batch = list(records)
        if len(batch) > _RESORT:
            self._records.update((r.id, r) for r in batch)
            self._resort()
            return
        for record in batch:
            old = self._records.get(record.id)
            if old is None:
                insort(self._ids, record.id)
            elif old.created_at != record.created_at:
                del self._times[bisect_left(self._times, (old.created_at, old.id))]
            if old is None or old.created_at != record.created_at:
                insort(self._times, (record.created_at, record.id))
            self._records[record.id] = record

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
            self._put(replace(r, metadata=dict(r.metadata)) for r in records)

    def update(self, records: Sequence[Record]) -> None:
        with self._lock:
            for record in records:
                if record.id not in self._records:
                    raise VectorStoreError(f"no record {record.id} to update")
                self._check(record.vector)
            old = self._records
            self._put(replace(r, metadata=dict(r.metadata),
                              vector=old[r.id].vector if r.vector is None else r.vector)
                      for r in records)

    def delete(self, ids: Sequence[str]) -> None:
        with self._lock:
            gone = [r for r in (self._records.pop(i, None) for i in ids) if r is not None]
            if len(gone) > _RESORT:
                self._resort()
                return
            for record in gone:
                del self._ids[bisect_left(self._ids, record.id)]
                del self._times[bisect_left(self._times, (record.created_at, record.id))]

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
        """Walks the index of ``order`` from the cursor until a page and one more match."""
        if limit <= 0:
            return [], None
        page: list[Record] = []
        with self._lock:
            for id in self._walk(cursor, order):
                record = self._records[id]
                if matches(filter, record.lookup):
                    if len(page) == limit:
                        return page, cursor_of(page[-1], order)
                    page.append(replace(record, vector=None))
        return page, None

    def _walk(self, cursor: str | None, order: Order) -> Iterator[str]:
        if order == "newest":
            times = self._times
            end = len(times) if cursor is None else bisect_left(times, cursor_key(cursor))
            return (times[i][1] for i in range(end - 1, -1, -1))
        ids = self._ids
        return (ids[i] for i in range(0 if cursor is None else bisect_right(ids, cursor), len(ids)))

    def count(self, filter: Filter | None = None) -> int:
        return len(self._matching(filter))
