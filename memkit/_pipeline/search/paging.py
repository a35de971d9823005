"""Pages of one search: ``search(query, offset=20, limit=10)`` is the third page of ten.

A ranking is computed over a window of candidates, and a larger window can order the
results near its edge differently (hybrid fusion and graph expansion score a result
against the others found). So a page is not cut from one search of ``offset + limit``:
the pages of a query read one order, built in windows of ``limit``, ``2 * limit``,
``4 * limit``, ...: the first window's results, then those of each larger window that
the order does not hold yet, up to its size. Page one is exactly ``search(limit=limit)``;
every later page continues it, with no result twice and none skipped, as long as the
store does not change and every page has the same ``limit``. A page past the first runs
one ranking per window (``log2(offset / limit) + 2`` of them; the query is embedded once).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memkit._errors import (
    InvalidArgument,
)
from memkit._models import MemoryItem, SearchResult
from memkit._pipeline.effects import Embed, Flow, Get, ask
from memkit._pipeline.features.lifecycle import Lifecycle, note_flow
from memkit.stores.base import Record, Vector

MAX_OFFSET = 100_000

Ranked = Callable[[int, Vector | None, Lifecycle], Flow[SearchResult]]
"""A ranking of ``window`` results, given the query's vector (``None``: embed it) and the
lifecycle to rank (and reinforce) with."""


def offset_of(value: object, most: int = MAX_OFFSET) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise InvalidArgument(f"offset must be an integer from 0 to {most}, got {value!r}"[:300])
    return value


def paged_flow(ranked: Ranked, query: str, offset: int, limit: int, lifecycle: Lifecycle,
               now: str, embed: bool) -> Flow[SearchResult]:
    """Results ``offset`` to ``offset + limit`` of the query's order (module docstring).
    ``embed``: the ranking needs the query's vector (not a keyword-only search)."""
    if offset == 0:
        return (yield from ranked(limit, None, lifecycle))
    vector: Vector | None = None
    if embed:
        [vector] = yield from ask(Embed((query,), query=True))
    quiet = replace(lifecycle, reinforce=False)  # only the page's results are accesses
    order: dict[str, MemoryItem] = {}
    relations = []
    window = limit
    while len(order) < offset + limit:
        result = yield from ranked(window, vector, quiet)
        relations = result.relations
        for item in result.results:
            if len(order) == window:
                break
            order.setdefault(item.id, item)
        if len(result.results) < window:  # the store holds no more for this query
            break
        window *= 2
    page = list(order.values())[offset:offset + limit]
    records: list[Record] = []
    for item in page if lifecycle.reinforce else ():
        record: Record | None = yield from ask(Get(item.id))
        if record is not None:
            records.append(record)
    yield from note_flow(records, now, lifecycle)
    return SearchResult(results=page, relations=relations)
