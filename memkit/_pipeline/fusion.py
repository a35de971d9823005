"""Hybrid ranking: one fusion of vector and keyword hits, used for every store."""

from __future__ import annotations

from collections.abc import Sequence

from memkit.stores.base import Hit


def fuse(
    vector_hits: Sequence[Hit],
    keyword_hits: Sequence[Hit],
    *,
    vector_weight: float,
    keyword_weight: float,
    limit: int,
) -> list[Hit]:
    """A convex combination of the two scores, each in [0, 1].

    Keyword scores are rescaled so the query's best keyword hit scores 1. A
    record the vector search did not return gets the lowest vector score it
    did return (it ranked below all of them); one the keyword search did not
    return gets 0.
    """
    total = vector_weight + keyword_weight
    wv, wk = (vector_weight / total, keyword_weight / total) if total > 0 else (1.0, 0.0)
    vector = {h.record.id: h.score for h in vector_hits}
    floor = min(vector.values(), default=0.0)
    best = max((h.score for h in keyword_hits), default=0.0)
    keyword = {h.record.id: (h.score / best if best > 0 else 0.0) for h in keyword_hits}
    records = {h.record.id: h.record for h in (*keyword_hits, *vector_hits)}
    fused = [
        Hit(record, wv * vector.get(id, floor) + wk * keyword.get(id, 0.0))
        for id, record in records.items()
    ]
    fused.sort(key=lambda h: (-h.score, h.record.id))
    return fused[:limit]
