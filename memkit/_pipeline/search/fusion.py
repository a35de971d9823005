"""Hybrid ranking: one fusion of vector and keyword hits, used for every store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memkit._pipeline.add.context import PREVIOUS_TURN
from memkit.stores.base import Hit, Record


def fuse(
    vector_hits: Sequence[Hit],
    keyword_hits: Sequence[Hit],
    *,
    vector_weight: float,
    keyword_weight: float,
    limit: int,
    keyword_exponent: float = 1.0,
    context_share: float = 0.0,
    context_turns: int = 1,
) -> list[Hit]:
    """Vector similarity, raised by keyword evidence: ``sv + b * sk * (1 - sv)``.

    ``sv`` is the vector score; ``sk`` the keyword score rescaled so the query's
    best keyword hit scores 1, then raised to ``keyword_exponent`` (above 1, a
    weak keyword match lifts little and the best ones much); ``b =
    keyword_weight / (vector_weight + keyword_weight)``. A record without keyword evidence keeps its vector score,
    so scores stay comparable with vector search and with ``threshold``; one
    the vector search did not return gets the lowest vector score it did return
    (it ranked below all of them).

    With ``context_share``, a dialogue turn also takes that share of the keyword
    scores of the turns up to ``context_turns`` before and after it, linked to it
    through candidates (``metadata["previous_turn"]``), capped at 1: "Yes, it was
    great!" gets some of the keyword evidence of the question it answers, as its
    vector does, and the answer to "What's it about?" some of the turn that named
    the film.
    """
    total = vector_weight + keyword_weight
    boost = keyword_weight / total if total > 0 else 0.0
    vector = {h.record.id: h.score for h in vector_hits}
    floor = min(vector.values(), default=0.0)
    best = max((h.score for h in keyword_hits), default=0.0)
    keyword = {h.record.id: (h.score / best) ** keyword_exponent if best > 0 else 0.0
               for h in keyword_hits}
    records = {h.record.id: h.record for h in (*keyword_hits, *vector_hits)}
    if context_share > 0 and keyword:
        keyword = _with_context(keyword, records, context_share, context_turns)
    of_vector, of_keyword = vector.get, keyword.get
    scored = [(-min(1.0, (sv := of_vector(id, floor)) + boost * of_keyword(id, 0.0) * (1.0 - sv)),
               id, record) for id, record in records.items()]
    scored.sort()  # best first, ties by id (ids differ: records are never compared)
    return [Hit(record, -negated) for negated, _, record in scored[:limit]]


def in_reach(hits: Sequence[Hit], limit: int, spread: float) -> list[Hit]:
    """The best-first ``hits`` that later steps could still bring into the first
    ``limit``, when those steps lower a score by at most ``down`` and raise one by at
    most ``up``, ``spread`` being ``down + up``: a hit more than that below the
    ``limit``-th ends below each of the first ``limit``.

        >>> record = Record(id="a", memory="", hash="", created_at="", updated_at="")
        >>> [h.score for h in in_reach([Hit(record, s) for s in (.9, .8, .75, .7)], 2, .05)]
        [0.9, 0.8, 0.75]
    """
    if len(hits) <= limit:
        return list(hits)
    floor = hits[limit - 1].score - spread - 1e-9  # rounding never drops a hit in reach
    end = limit
    while end < len(hits) and hits[end].score >= floor:
        end += 1
    return list(hits[:end])


def _with_context(keyword: dict[str, float], records: Mapping[str, Record],
                  share: float, turns: int) -> dict[str, float]:
    """Each candidate's keyword score plus ``share`` of those of the turns up to ``turns``
    before and after it, linked through candidates (each turn on the way is one), capped
    at 1."""
    linked = {id: previous for id, record in records.items()
              if isinstance(previous := record.metadata.get(PREVIOUS_TURN), str)
              and previous in records}  # each candidate's previous turn, when one too
    lifted = dict(keyword)
    for id in linked:
        this = keyword.get(id, 0.0)
        at = id
        for _ in range(turns):
            previous = linked.get(at)
            if previous is None:
                break
            before = keyword.get(previous, 0.0)
            if before > 0:
                lifted[id] = lifted.get(id, 0.0) + share * before
            if this > 0:
                lifted[previous] = lifted.get(previous, 0.0) + share * this
            at = previous
    return {id: min(1.0, score) for id, score in lifted.items()}
