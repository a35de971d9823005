"""Sorted keys beside a collection, for stores whose engine cannot page from a cursor.

A store that is the only writer of its collection (the in-memory store; Qdrant's
local mode, whose path one client locks) keeps the ids, and the (creation time,
id) pairs, in sorted lists. A ``list`` page then starts at its cursor by
bisection and reads only the records it walks past (:func:`walk`), checking
the filter with the reference evaluator: without a filter, one page and one
record more.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Generator, Iterable

from memkit._filters import Filter, matches
from memkit.stores._ops import run
from memkit.stores.base import Order, Record, cursor_key, cursor_of

#: a write of more keys than this re-sorts the lists instead of inserting one by one
_RESORT = 64
#: the most records one step of a filtered walk reads
_MOST = 4096

Page = tuple[list[Record], str | None]
Walk = Generator[list[str], list[Record], Page]
"""Yields the ids to read next, receives their records (those that still exist)."""


class SortedKeys:
    """The ids of a collection in order, and its (created_at, id) pairs in order. Thread-safe."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        self._lock = threading.Lock()
        self._created: dict[str, str] = dict(pairs)
        self._resort()

    def _resort(self) -> None:
        self._ids = sorted(self._created)
        self._times = sorted((created, id) for id, created in self._created.items())

    def put(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Add ``(id, created_at)`` pairs, or move known ids to their new creation time."""
        batch = list(pairs)
        with self._lock:
            if len(batch) > _RESORT:
                self._created.update(batch)
                self._resort()
                return
            for id, created in batch:
                old = self._created.get(id)
                if old == created:
                    continue
                if old is None:
                    insort(self._ids, id)
                else:
                    del self._times[bisect_left(self._times, (old, id))]
                insort(self._times, (created, id))
                self._created[id] = created

    def remove(self, ids: Iterable[str]) -> None:
        """Forget ``ids`` (unknown ones are ignored)."""
        with self._lock:
            gone = [(id, created) for id in ids
                    if (created := self._created.pop(id, None)) is not None]
            if len(gone) > _RESORT:
                self._resort()
                return
            for id, created in gone:
                del self._ids[bisect_left(self._ids, id)]
                del self._times[bisect_left(self._times, (created, id))]

    def after(self, cursor: str | None, order: Order, count: int) -> list[tuple[str, str]]:
        """Up to ``count`` ids that follow ``cursor`` in ``order``, each with its own cursor."""
        with self._lock:
            if order == "newest":
                times = self._times
                end = len(times) if cursor is None else bisect_left(times, cursor_key(cursor))
                return [(id, f"{created}|{id}")
                        for created, id in reversed(times[max(0, end - count):end])]
            start = 0 if cursor is None else bisect_right(self._ids, cursor)
            return [(id, id) for id in self._ids[start:start + count]]


def walk(keys: SortedKeys, filter: Filter | None, limit: int, cursor: str | None,
         order: Order) -> Walk:
    """One ``list`` page: reads ahead of the cursor in growing steps until it has a page of
    matches and one more (which says there is a next page)."""
    page: list[Record] = []
    step = limit + 1
    while limit > 0 and (ahead := keys.after(cursor, order, step)):
        found = {r.id: r for r in (yield [id for id, _ in ahead])}
        for id, _ in ahead:
            record = found.get(id)
            if record is None or not matches(filter, record.lookup):
                continue
            if len(page) == limit:
                return page, cursor_of(page[-1], order)
            page.append(record)
        cursor = ahead[-1][1]
        step = min(4 * step, max(_MOST, step))
    return page, None


def read(pages: Walk, fetch: Callable[[list[str]], list[Record]]) -> Page:
    """Drive :func:`walk` with a blocking ``fetch``."""
    return run(pages, fetch)
