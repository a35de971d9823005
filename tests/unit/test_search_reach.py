"""Hybrid search ranks only the fused hits its later steps could bring into the results
(:func:`memkit._pipeline.search.fusion.in_reach`): the results are those of ranking all."""

from __future__ import annotations

import random

from memkit._pipeline.search.fusion import in_reach
from memkit.stores.base import Hit, Record


def _hits(scores: list[float]) -> list[Hit]:
    now = "2024-01-01T00:00:00+00:00"
    return [Hit(Record(id=f"{i:03d}", memory="", hash="", created_at=now, updated_at=now), s)
            for i, s in sorted(enumerate(scores), key=lambda p: (-p[1], f"{p[0]:03d}"))]


def _ranked(hits: list[Hit], moves: dict[str, float], limit: int) -> list[str]:
    moved = [(h.score + moves[h.record.id], h.record.id) for h in hits]
    return [id for _, id in sorted(moved, key=lambda p: (-p[0], p[1]))[:limit]]


def test_the_hits_within_the_spread_of_the_limit_th_are_kept() -> None:
    hits = _hits([0.9, 0.8, 0.75, 0.7, 0.5])
    assert [h.score for h in in_reach(hits, 2, 0.05)] == [0.9, 0.8, 0.75]
    assert [h.score for h in in_reach(hits, 2, 0.0)] == [0.9, 0.8]
    assert len(in_reach(hits, 10, 0.0)) == 5  # fewer than the limit: all


def test_steps_within_the_spread_rank_the_kept_hits_as_they_rank_all() -> None:
    rng = random.Random(11)
    for _ in range(500):
        scores = [round(rng.random(), 2) for _ in range(rng.randint(1, 60))]  # ties too
        down, up, limit = rng.choice([0, 0.02, 0.1]), rng.choice([0, 0.4]), rng.randint(1, 12)
        hits = _hits(scores)
        moves = {h.record.id: rng.choice([-down, 0.0, up, rng.uniform(-down, up)]) for h in hits}
        assert _ranked(in_reach(hits, limit, down + up), moves, limit) == _ranked(hits, moves, limit)
