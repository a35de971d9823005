"""Search as a flow: vector, keyword or hybrid hits, ranked by time and confidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memkit._errors import (
    ConfigError,
    InvalidArgument,
)
from memkit._filters import Filter
from memkit._models import SearchResult
from memkit._pipeline.effects import Embed, Flow, KeywordSearch, Search, ask
from memkit._pipeline.features.lifecycle import Lifecycle, confidence_of, note_flow, rank
from memkit._pipeline.inputs import bounded_words, query_of
from memkit._pipeline.search.fusion import fuse, in_reach
from memkit._pipeline.search.keywords import distinctive, keyword_terms
from memkit._pipeline.search.questions import lower_questions
from memkit._pipeline.search.temporal import asks_when, favour_dated, named_time
from memkit._time import to_iso, utcnow
from memkit.stores.base import Hit, Vector

SearchMode = Literal["hybrid", "vector", "keyword"]


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """The ``search`` section of the config (its defaults live there)."""

    mode: SearchMode | None
    vector_weight: float
    keyword_weight: float
    candidates: int
    temporal_weight: float
    keyword_exponent: float
    common_word_share: float
    context_share: float
    context_turns: int
    question_penalty: float


def search_flow(
    query: str, filter: Filter | None, limit: int, threshold: float | None,
    mode: SearchMode | None, settings: SearchSettings, keyword_capable: bool,
    lifecycle: Lifecycle | None = None, now: str | None = None,
    min_confidence: float | None = None, vector: Vector | None = None,
) -> Flow[SearchResult]:
    """``vector``: the query's embedding when the caller has it already."""
    query = query_of(query)
    life = lifecycle or Lifecycle()
    if min_confidence is not None:
        min_confidence = confidence_of(min_confidence, "min_confidence")
    when = now or to_iso(utcnow())
    mode = mode or settings.mode or ("hybrid" if keyword_capable else "vector")
    if mode not in ("hybrid", "vector", "keyword"):
        raise InvalidArgument(f"search mode must be 'hybrid', 'vector' or 'keyword', got {mode!r}")
    if mode != "vector" and not keyword_capable:
        raise ConfigError(f"this vector store has no keyword search; {mode!r} search needs one")
    pool = max(limit, settings.candidates) if mode == "hybrid" else limit
    if life.decay or min_confidence is not None:  # room to re-rank or drop
        pool = max(pool, 2 * limit)
    vector_hits: list[Hit] = []
    keyword_hits: list[Hit] = []
    weight = settings.temporal_weight if mode != "keyword" else 0.0
    named = named_time(query) if weight > 0 else None
    if mode != "keyword":
        if vector is None:
            [vector] = yield from ask(Embed((query,), query=True))
        vector_hits = yield from ask(Search(vector, pool, filter))
    # Bounded first (a 100 KB query of one word becomes one term), then content words only:
    # a query of function words ("I") has no keyword evidence. Hybrid search also skips the
    # words most of its vector candidates share (a name in every turn of a conversation).
    terms = keyword_terms(bounded_words(query)) if mode != "vector" else []
    if mode == "hybrid":
        terms = distinctive(terms, [h.record.memory for h in vector_hits],
                            settings.common_word_share)
    if terms:
        keyword_hits = yield from ask(KeywordSearch(" ".join(terms), pool, filter))
    if mode == "hybrid":
        hits = fuse(vector_hits, keyword_hits, vector_weight=settings.vector_weight,
                    keyword_weight=settings.keyword_weight, limit=pool,
                    keyword_exponent=settings.keyword_exponent,
                    context_share=settings.context_share,
                    context_turns=settings.context_turns)
        if not life.decay and min_confidence is None:  # else confidence reorders the pool
            # the steps below lower a score by at most the penalty and raise it by at most
            # the temporal weight a step: only hits within that of the first ``limit`` move
            raised = weight * (asks_when(query) + (named is not None))
            hits = in_reach(hits, limit, settings.question_penalty + raised)
    else:
        hits = vector_hits or keyword_hits
    if mode != "keyword":  # keyword scores are the store's own, not in [0, 1]
        hits = lower_questions(hits, settings.question_penalty)
        hits = favour_dated(hits, query, weight)
        if named is not None:
            hits = named(hits, weight)
    ranked = rank(hits, life, when, min_confidence, threshold, limit)
    yield from note_flow([h.record for h, _ in ranked], when, life)
    return SearchResult(results=[
        h.record.to_item(round(h.score, 6), round(c, 6)) for h, c in ranked])
