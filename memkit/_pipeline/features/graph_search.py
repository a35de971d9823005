"""Graph-expanded search: the entities a query names lift the memories their relations
came from, and memories the search did not return join the ranking.

A memory scores ``s + b * g * (1 - s)``: ``s`` its search score, ``b = GRAPH_BOOST`` and
``g`` the lift of the link it came through (:func:`graph_lift`). A memory reached only
through the graph enters at ``s`` = the lowest score of the results: the search ranked it
below all of them, and the graph vouches for it. Memories with equal scores (the siblings
behind one link, which get the same lift) are ordered by their own similarity to the
query: the store's score of their stored vector against the query's vector, so "Bob lives
in Paris" comes before "Bob plays tennis" for "Which city does Alice's manager live in?".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memkit._filters import Filter
from memkit._models import MemoryItem, SearchResult
from memkit._pipeline.effects import Embed, Flow, Get, Neighbourhood, ResolveNames, Search, ask
from memkit._pipeline.features.graph import relation_model
from memkit._pipeline.inputs import query_of
from memkit.graph.base import GraphScope, Relation, Subgraph, entity_id, normalise
from memkit.stores.base import Hit, Record, Vector, hash_filter

_WORD = re.compile(r"[\w'’-]+")
_POSSESSIVE = re.compile(r"['’]s?$")
_MAX_NAMES = 64
_MAX_LINKED = 20
GRAPH_BOOST = 0.5
"""How far a graph link lifts a memory's score toward 1: ``s + b * g * (1 - s)``."""

SearchGiven = Callable[[Vector], Flow[SearchResult]]
"""The search, given the query's vector (embedded once, for it and for the graph)."""


def named_in(query: str) -> list[str]:
    """Candidate entity names in ``query``: its runs of one to three words, possessives
    dropped ("Alice's manager" names Alice)."""
    words = [_POSSESSIVE.sub("", word) or word for word in _WORD.findall(query)]
    names: dict[str, None] = {}
    for size in (3, 2, 1):
        for start in range(len(words) - size + 1):
            names.setdefault(" ".join(words[start:start + size]), None)
    return [n for n in names if normalise(n) and len(n) <= 200][:_MAX_NAMES]


def graph_lift(relations: Sequence[Relation], seeds: set[str], relevance: dict[str, float],
               floor: float) -> dict[str, float]:
    """How far each linked memory is lifted (``g``): 1 for the memories of a relation touching
    a named entity; ``k`` hops out, ``r / 2 ** (k - 1)``, where ``r`` is the score for the
    query (``relevance``; ``floor`` when unknown) of the best memory linking the walk's first
    step to a named entity. So "Alice works at Acme" carries the lift on to Acme's city more
    than a weaker link carries it on to the neighbours of Alice's city, and the lift fades
    with each further hop rather than reaching everything the neighbourhood holds."""
    touching: dict[str, list[Relation]] = {}
    for r in relations:
        touching.setdefault(r.source_id, []).append(r)
        touching.setdefault(r.target_id, []).append(r)
    strength = dict.fromkeys(seeds, 1.0)
    lift: dict[str, float] = {}
    frontier, first = sorted(seeds), True
    while frontier:
        reached: dict[str, float] = {}
        for entity in frontier:
            for r in touching.get(entity, ()):
                g = 1.0 if first else 0.5 * strength[entity]
                for memory_id in r.memory_ids:
                    lift[memory_id] = max(lift.get(memory_id, 0.0), g)
                other = r.target_id if r.source_id == entity else r.source_id
                if other not in strength:
                    carried = max((relevance.get(m, floor) for m in r.memory_ids),
                                  default=floor) if first else 0.5 * strength[entity]
                    reached[other] = max(reached.get(other, 0.0), carried)
        strength.update(reached)
        frontier, first = sorted(reached), False
    return lift


def linked_scores(ids: Sequence[str], vector: Vector, filter: Filter | None) -> Flow[list[Hit]]:
    """The memories ``ids`` that match ``filter``, each scored by the store for ``vector``
    (its stored vector against the query's): one search narrowed to their hashes."""
    records: list[Record] = []
    for memory_id in ids:
        record: Record | None = yield from ask(Get(memory_id))
        if record is not None:
            records.append(record)
    if not records:
        return []
    wanted = {r.id for r in records}
    narrowed = hash_filter(filter, sorted({r.hash for r in records}))
    hits: list[Hit] = yield from ask(Search(vector, 2 * len(records), narrowed))
    return [h for h in hits if h.record.id in wanted]


def graph_search_flow(search: SearchGiven, query: str, scope: GraphScope,
                      filter: Filter | None, depth: int, limit: int,
                      vector: Vector | None = None) -> Flow[SearchResult]:
    """``search``, then the entities the query names expand ``depth`` hops; memories the
    relations came from join the ranking (module docstring) and the result carries the
    relations. ``vector``: the query's embedding when the caller has it already."""
    query = query_of(query)
    if vector is None:
        [vector] = yield from ask(Embed((query,), query=True))
    result = yield from search(vector)
    names = named_in(query)
    found: dict[str, str] = (yield from ask(ResolveNames(scope, names))) if names else {}
    if not found:
        return result
    seed_names = sorted(set(found.values()))
    sub: Subgraph = yield from ask(Neighbourhood(scope, seed_names, depth))
    seeds = {entity_id(scope, n) for n in seed_names}
    scores: dict[str, tuple[MemoryItem, float]] = {
        item.id: (item, item.score or 0.0) for item in result.results}
    floor = min((s for _, s in scores.values()), default=0.0)
    lift = graph_lift(sub.relations, seeds, {id: s for id, (_, s) in scores.items()}, floor)
    missing = [m for m in sorted(lift, key=lambda m: (-lift[m], m)) if m not in scores]
    hits = yield from linked_scores(missing[:_MAX_LINKED], vector, filter)
    own = {id: s for id, (_, s) in scores.items()}  # the tie-break, and each link's strength
    for hit in hits:
        scores[hit.record.id] = (hit.record.to_item(), floor)
        own[hit.record.id] = hit.score
    lift = graph_lift(sub.relations, seeds, own, floor)
    ranked = sorted(
        ((item, score + GRAPH_BOOST * lift.get(item.id, 0.0) * (1.0 - score))
         for item, score in scores.values()),
        key=lambda pair: (-pair[1], -own[pair[0].id], pair[0].id))
    return SearchResult(
        results=[item.model_copy(update={"score": round(score, 6)})
                 for item, score in ranked[:limit]],
        relations=[relation_model(r) for r in sub.relations])
